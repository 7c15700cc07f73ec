import { type Broker, DELIVERY_EXCHANGE, exchangeExists, negotiatedHeartbeat } from '../amqp/connect.js';
import { probeReturnBeforeAck } from '../amqp/probe.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/connect.js';
import { checkSchema, describeProblem, type Side } from '../db/schema.js';
import type { FlowClient } from '../flow/client.js';
import { describeServiceTimeZone, resolveServiceTimeZone } from '../time/service-zone.js';
import { brokerConnectedCheck, type CheckResult, redeclareCheck, vhostCheck } from './decide.js';
import { DOCTOR_LOOKUP_KEY, flowCenterCheck } from './flow-center.js';
import { checkIsolation, isolationTarget } from './isolation/run.js';
import { registeredAppKeys } from './isolation/store.js';
import { CONSUMER_QUEUE } from './isolation/types.js';
import { selectServerVersion } from './sql.js';

export interface DoctorOptions {
  readonly probe: boolean;
  /** the broker isolation table of seed 000 §6, read through the management API */
  readonly isolation?: boolean;
  readonly consumerQueue?: string;
  /** `--consumer-user`: the users who may read the delivery exchange (--isolation) */
  readonly consumerUsers?: readonly string[];
}

/** What doctor checks, each opened lazily: a connection that fails is a failed check line, never a crash. */
export interface DoctorDeps {
  readonly config: Config;
  fcDb(): Promise<Db>;
  shDb(): Promise<Db>;
  /** the broker at amqpUrl (asked only when amqpUrl is set) */
  amqp(): Promise<Broker>;
  flow(options: { timeoutMs: number; maxSockets?: number }): FlowClient;
  /** an error as one line, secrets redacted */
  message(err: unknown): string;
}

/**
 * `fcctl doctor [--probe] [--isolation]`: every configured connection, the schemas, the exchange,
 * the broker's return behaviour, the broker's isolation — one check line each, in this order.
 */
export async function runDoctor(options: DoctorOptions, deps: DoctorDeps): Promise<CheckResult[]> {
  // before anything connects: --isolation without its settings is a usage error (exit 2)
  const isolation = options.isolation
    ? isolationTarget(
        { amqpUrl: deps.config.amqpUrl.value, amqpManagementUrl: deps.config.amqpManagementUrl.value },
        options.consumerQueue ?? CONSUMER_QUEUE,
        { consumerUsers: options.consumerUsers ?? [] },
      )
    : undefined;
  const results: CheckResult[] = [];
  for (const side of ['fc', 'sh'] as Side[]) results.push(...(await databaseChecks(side, deps)));
  results.push(await serviceTimeZoneCheck(deps.config, deps.fcDb, deps.message));
  results.push(...(await brokerChecks(options, deps)));
  if (isolation) {
    const appKeys = async () => {
      if (deps.config.fcDatabaseUrl.value === undefined) throw new Error('FC database not configured');
      return registeredAppKeys(await deps.fcDb());
    };
    results.push(...(await checkIsolation(isolation, appKeys, deps.message)));
  }
  results.push(await flowCheck(deps));
  return results;
}

/** The database answers (its version) and holds every table, column and index. */
async function databaseChecks(side: Side, deps: DoctorDeps): Promise<CheckResult[]> {
  const name = side === 'fc' ? 'fcDatabaseUrl' : 'shDatabaseUrl';
  const label = `${side.toUpperCase()} database`;
  if (deps.config[name].value === undefined) return [{ check: label, status: 'skipped', detail: 'not configured' }];
  const results: CheckResult[] = [];
  try {
    const db = side === 'fc' ? await deps.fcDb() : await deps.shDb();
    const { sql, params } = selectServerVersion();
    const [version] = await db.query<{ v: string }>(sql, params);
    results.push({ check: label, status: 'ok', detail: `connected, server ${version?.v ?? '?'}` });
    const problems = await checkSchema(db, side);
    results.push(
      problems.length === 0
        ? { check: `${label} schema`, status: 'ok', detail: 'every table, column and index present' }
        : { check: `${label} schema`, status: 'fail', detail: problems.map(describeProblem).join('; ') },
    );
  } catch (err) {
    results.push({ check: label, status: 'fail', detail: deps.message(err) });
  }
  return results;
}

/** The broker connects, its vhost, the delivery exchange, and (--probe) mandatory returns. */
async function brokerChecks(options: DoctorOptions, deps: DoctorDeps): Promise<CheckResult[]> {
  const amqpUrl = deps.config.amqpUrl.value;
  if (amqpUrl === undefined) return [{ check: 'broker', status: 'skipped', detail: 'not configured' }];
  const results: CheckResult[] = [];
  try {
    const broker = await deps.amqp();
    results.push(brokerConnectedCheck(amqpUrl, negotiatedHeartbeat(broker)));
    results.push(vhostCheck(amqpUrl));
    results.push(await exchangeCheck(broker, deps));
    if (options.probe) {
      const probe = await probeReturnBeforeAck(broker);
      results.push({ check: 'mandatory return probe', status: probe.ok ? 'ok' : 'fail', detail: probe.detail });
    }
  } catch (err) {
    results.push({ check: 'broker', status: 'fail', detail: deps.message(err) });
  }
  return results;
}

async function exchangeCheck(broker: Broker, deps: DoctorDeps): Promise<CheckResult> {
  if (!(await exchangeExists(broker, DELIVERY_EXCHANGE))) {
    return {
      check: 'delivery exchange',
      status: 'fail',
      detail: `${DELIVERY_EXCHANGE} does not exist (deliveries send --declare creates it)`,
    };
  }
  // Re-declaring with the same type is a no-op on an existing exchange; another type is refused
  // (406); a publisher without configure on it is refused (403): see redeclareCheck.
  const ch = await broker.channel();
  try {
    await ch.assertExchange(DELIVERY_EXCHANGE, 'topic', { durable: true });
    await ch.close();
    return redeclareCheck(DELIVERY_EXCHANGE, { ok: true });
  } catch (err) {
    return redeclareCheck(DELIVERY_EXCHANGE, {
      ok: false,
      code: (err as { code?: number })?.code,
      message: deps.message(err),
    });
  }
}

/** One signed lookup: any HTTP answer is no proof, a wrong secret answers too (401). */
async function flowCheck(deps: DoctorDeps): Promise<CheckResult> {
  if (deps.config.flowUrl.value === undefined)
    return { check: 'flow center', status: 'skipped', detail: 'not configured' };
  try {
    const flow = deps.flow({ timeoutMs: 5000, maxSockets: 1 });
    const check = flowCenterCheck(await flow.lookup(DOCTOR_LOOKUP_KEY.bizType, DOCTOR_LOOKUP_KEY.bizId), flow.baseUrl);
    return { ...check, detail: deps.message(check.detail) };
  } catch (err) {
    return { check: 'flow center', status: 'fail', detail: deps.message(err) };
  }
}

/**
 * The `doctor` line: ok with the zone and its source; warn when only the FC database's current
 * offset is known; fail on a bad setting or an unreadable server; skipped with neither.
 * @example results.push(await serviceTimeZoneCheck(ctx.config, ctx.fcDb, message)) // { check: 'service time zone', status: 'ok', detail: 'UTC (from the FC database: …)' }
 */
export async function serviceTimeZoneCheck(
  config: Config,
  fcDb: () => Promise<Db>,
  message: (err: unknown) => string,
): Promise<CheckResult> {
  const check = 'service time zone';
  if (config.serviceTimeZone.value === undefined && config.fcDatabaseUrl.value === undefined) {
    return { check, status: 'skipped', detail: 'not configured, and no FC database to read the zone from' };
  }
  try {
    const z = await resolveServiceTimeZone(config, fcDb);
    return { check, status: z.source === 'fc-database-offset' ? 'warn' : 'ok', detail: describeServiceTimeZone(z) };
  } catch (err) {
    return {
      check,
      status: 'fail',
      detail:
        config.serviceTimeZone.value === undefined
          ? `cannot read the FC database's zone: ${message(err)}`
          : message(err),
    };
  }
}
