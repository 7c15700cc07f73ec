import type { Command } from 'commander';
import { DELIVERY_EXCHANGE, exchangeExists, openBroker, type Broker } from '../../lib/amqp/connect.js';
import { probeReturnBeforeAck } from '../../lib/amqp/probe.js';
import { UsageError } from '../../lib/cli/exit.js';
import { redact } from '../../lib/config/mask.js';
import { checkSchema, describeProblem, type Side } from '../../lib/db/schema.js';
import { type CheckResult, doctorExitCode, redeclareCheck, vhostCheck } from '../../lib/doctor/checks.js';
import { DOCTOR_LOOKUP_KEY, flowCenterCheck } from '../../lib/doctor/flow-center.js';
import { CONSUMER_QUEUE } from '../../lib/doctor/isolation.js';
import { checkIsolation, isolationTarget, registeredAppKeys } from '../../lib/doctor/isolation-inspect.js';
import { serviceTimeZoneCheck } from '../../lib/time/service-zone.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { consumerUserArg, queueNameArg } from '../options.js';

export interface DoctorOptions {
  readonly probe: boolean;
  /** the broker isolation table of seed 000 §6, read through the management API */
  readonly isolation?: boolean;
  readonly consumerQueue?: string;
  /** `--consumer-user`: the users who may read the delivery exchange (--isolation) */
  readonly consumerUsers?: readonly string[];
}

/**
 * `fcctl doctor [--probe] [--isolation]`: every configured connection, the schemas, the exchange,
 * the broker's return behaviour, the broker's isolation.
 */
export async function runDoctor(options: DoctorOptions, ctx: Ctx): Promise<number> {
  const results: CheckResult[] = [];
  const message = (err: unknown) => redact(((err as Error)?.message ?? String(err)).split('\n')[0] ?? '', ctx.secrets());
  // before anything connects: --isolation without its settings is a usage error (exit 2)
  const isolation = options.isolation
    ? isolationTarget({ amqpUrl: ctx.config.amqpUrl.value, amqpManagementUrl: ctx.config.amqpManagementUrl.value }, options.consumerQueue ?? CONSUMER_QUEUE, { consumerUsers: options.consumerUsers ?? [] })
    : undefined;

  for (const side of ['fc', 'sh'] as Side[]) {
    const name = side === 'fc' ? 'fcDatabaseUrl' : 'shDatabaseUrl';
    const label = `${side.toUpperCase()} database`;
    if (ctx.config[name].value === undefined) {
      results.push({ check: label, status: 'skipped', detail: 'not configured' });
      continue;
    }
    try {
      const db = side === 'fc' ? await ctx.fcDb() : await ctx.shDb();
      const [version] = await db.query<{ v: string }>('SELECT VERSION() AS v');
      results.push({ check: label, status: 'ok', detail: `connected, server ${version?.v ?? '?'}` });
      const problems = await checkSchema(db, side);
      results.push(
        problems.length === 0
          ? { check: `${label} schema`, status: 'ok', detail: 'every table, column and index present' }
          : { check: `${label} schema`, status: 'fail', detail: problems.map(describeProblem).join('; ') },
      );
    } catch (err) {
      results.push({ check: label, status: 'fail', detail: message(err) });
    }
  }
  results.push(await serviceTimeZoneCheck(ctx.config, ctx.fcDb, message));

  const amqpUrl = ctx.config.amqpUrl.value;
  if (amqpUrl === undefined) {
    results.push({ check: 'broker', status: 'skipped', detail: 'not configured' });
  } else {
    let broker: Broker | undefined;
    try {
      broker = await openBroker(amqpUrl);
      ctx.onClose(() => broker!.close());
      results.push({ check: 'broker', status: 'ok', detail: 'connected' });
      results.push(vhostCheck(amqpUrl));
      if (!(await exchangeExists(broker, DELIVERY_EXCHANGE))) {
        results.push({ check: 'delivery exchange', status: 'fail', detail: `${DELIVERY_EXCHANGE} does not exist (deliveries send --declare creates it)` });
      } else {
        // Re-declaring with the same type is a no-op on an existing exchange; another type is refused
        // (406); a publisher without configure on it is refused (403): see redeclareCheck.
        const ch = await broker.channel();
        try {
          await ch.assertExchange(DELIVERY_EXCHANGE, 'topic', { durable: true });
          await ch.close();
          results.push(redeclareCheck(DELIVERY_EXCHANGE, { ok: true }));
        } catch (err) {
          results.push(redeclareCheck(DELIVERY_EXCHANGE, { ok: false, code: (err as { code?: number })?.code, message: message(err) }));
        }
      }
      if (options.probe) {
        const probe = await probeReturnBeforeAck(broker);
        results.push({ check: 'mandatory return probe', status: probe.ok ? 'ok' : 'fail', detail: probe.detail });
      }
    } catch (err) {
      results.push({ check: 'broker', status: 'fail', detail: message(err) });
    }
  }

  if (isolation) {
    const appKeys = async () => {
      if (ctx.config.fcDatabaseUrl.value === undefined) throw new Error('FC database not configured');
      return registeredAppKeys(await ctx.fcDb());
    };
    results.push(...(await checkIsolation(isolation, appKeys, message)));
  }

  const flowUrl = ctx.config.flowUrl.value;
  if (flowUrl === undefined) {
    results.push({ check: 'flow center', status: 'skipped', detail: 'not configured' });
  } else {
    // One signed lookup: any HTTP answer is no proof, a wrong secret answers too (401).
    try {
      const flow = ctx.flow({ timeoutMs: 5000, maxSockets: 1 });
      const check = flowCenterCheck(await flow.lookup(DOCTOR_LOOKUP_KEY.bizType, DOCTOR_LOOKUP_KEY.bizId), flow.baseUrl);
      results.push({ ...check, detail: message(check.detail) });
    } catch (err) {
      results.push({ check: 'flow center', status: 'fail', detail: message(err) });
    }
  }

  for (const r of results) ctx.output.event('check', { ...r });
  if (!ctx.output.json) ctx.output.rows(results as unknown as Record<string, unknown>[], [{ key: 'check' }, { key: 'status' }, { key: 'detail' }], 'table', 'fcctl doctor');
  const exitCode = doctorExitCode(results);
  const count = (s: CheckResult['status']) => results.filter((r) => r.status === s).length;
  ctx.output.summary({ command: 'doctor', exitCode, ok: count('ok'), warn: count('warn'), fail: count('fail'), skipped: count('skipped') });
  return exitCode;
}

export function createDoctorCommand(program: Command, deps: Deps, resources: Resources, runF = runDoctor): Command {
  return program
    .command('doctor')
    .description('check every configured connection, the schemas, the delivery exchange, (--probe) mandatory returns and (--isolation) the broker isolation of seed 000 §6')
    .option('--probe', 'publish a mandatory probe through the delivery exchange to a key no consumer can bind and check its return arrives before its ack', false)
    .option('--isolation', "check the broker's isolation through the management API (FCCTL_AMQP_MANAGEMENT_URL): vhost, delivery exchange, publisher permissions, topic permissions, bindings, who can read the exchange, consumer queues, alternate exchange", false)
    .option('--consumer-queue <name>', 'the consumer queue --isolation checks (and its .dlq); bindings from the exchange may go only to queues with this prefix', queueNameArg, CONSUMER_QUEUE)
    .option('--consumer-user <name>', "a consumer's RabbitMQ user, which --isolation allows to read (bind to) the delivery exchange; repeatable", consumerUserArg, [] as string[])
    .action(async (opts: { probe: boolean; isolation: boolean; consumerQueue: string; consumerUser: string[] }, cmd: Command) => {
      if (!opts.isolation && cmd.getOptionValueSource('consumerQueue') === 'cli') throw new UsageError('--consumer-queue applies only with --isolation');
      if (!opts.isolation && opts.consumerUser.length > 0) throw new UsageError('--consumer-user applies only with --isolation');
      resources.exitCode = await runF({ probe: opts.probe, isolation: opts.isolation, consumerQueue: opts.consumerQueue, consumerUsers: opts.consumerUser }, makeContext(cmd, deps, resources));
    });
}
