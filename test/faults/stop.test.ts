import type mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP, APP_FLOW, commandsOf, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { runCli } from '../helpers/cli.js';
import { type FlowCenter, startFlowCenter } from '../helpers/flow-center.js';
import { freshDatabases, testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { brokerMemoryAlarm, freezeMariadb, replaceableConnection, restartService } from '../helpers/faults.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { type RunningService, startService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

/**
 * SIGTERM to exit of `deliveries send --follow` under each fault (issue 34 §5, §6), on the real
 * servers: idle, a drain that cannot finish (confirms slower than the drain), the broker down,
 * MariaDB down (restarting), MariaDB frozen (`kill -STOP`) and a broker memory alarm — the last
 * four with rows claimed and published whose outcome is not yet written; and of
 * `apply-command resolve-unknown --follow` idle, with lookups slower than the drain, and with MariaDB
 * down or frozen while they are out. Every stop ends the process with exit 0 within
 * `--drain-seconds` + 10 s. The figures are printed for BENCHMARKS.md.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const DRAIN_SECONDS = 5;
let dbs: TestDatabases;
let admin: mysql.Connection;
let env: Record<string, string | undefined>;
const connectAdmin = () => replaceableConnection(dbs.fcName);

let flow: FlowCenter;

beforeAll(async () => {
  dbs = await freshDatabases('fstop');
  await dbs.admin.end();
  admin = await connectAdmin();
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  expect((await runCli(['db', 'init', '--side', 'all'], { env })).code).toBe(0);
  flow = await startFlowCenter({ apps: APP_FLOW });
  await insertRegistry(admin, dbs.fcName);
  await ensureExchange();
});
afterAll(async () => {
  await flow?.stop();
  admin = await connectAdmin();
  await admin.query(`DROP DATABASE IF EXISTS \`${dbs.fcName}\``).catch(() => undefined);
  await admin.query(`DROP DATABASE IF EXISTS \`${dbs.shName}\``).catch(() => undefined);
  await admin.end().catch(() => undefined);
});

/** A relay whose broker traffic goes through a proxy (to hold its confirms back), running. */
async function runningRelay(): Promise<{ relay: RunningService; mq: TcpProxy; key: string }> {
  const key = uniqueConsumerKey('fst');
  await bindQueue(key);
  await insertGrant(admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  const u = new URL(testAmqpUrl());
  const mq = new TcpProxy(u.hostname, Number(u.port));
  await mq.start();
  const relay = startService(
    [
      '--json',
      'deliveries',
      'send',
      '--follow',
      '--drain-seconds',
      String(DRAIN_SECONDS),
      '--lease-seconds',
      '120',
      '--backoff-base',
      '1',
    ],
    { env: { ...env, FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), mq.port) }, timeoutMs: 300_000 },
  );
  await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
  return { relay, mq, key };
}

/** Rows claimed and published, their confirms held back `holdMs` by the proxy. */
async function rowsInFlight(mq: TcpProxy, key: string, holdMs: number): Promise<void> {
  mq.delayMs = holdMs;
  await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 20);
  await waitFor(
    'rows claimed',
    async () => {
      const [rows] = await admin.query(
        `SELECT COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key = ? AND claim_owner IS NOT NULL`,
        [key],
      );
      return Number((rows as Array<{ n: number }>)[0]!.n) > 0;
    },
    30_000,
    20,
  );
}

/** SIGTERM; the seconds to exit, checked against the promise. */
async function stopWithin(fault: string, relay: RunningService, command = 'deliveries send'): Promise<number> {
  const t0 = performance.now();
  const end = await relay.stop('SIGTERM', 120_000);
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `stop: ${command} --follow, ${fault}: SIGTERM to exit ${seconds.toFixed(1)} s (drain ${DRAIN_SECONDS} s)`,
  );
  expect(end.code).toBe(0);
  expect(seconds).toBeLessThanOrEqual(DRAIN_SECONDS + 10);
  return seconds;
}

describe('SIGTERM to exit within --drain-seconds + 10 s under each fault', () => {
  it('idle', async () => {
    const { relay, mq } = await runningRelay();
    await stopWithin('idle', relay);
    await mq.stop();
  });

  it('a drain that cannot finish: confirms slower than the drain', async () => {
    const { relay, mq, key } = await runningRelay();
    await rowsInFlight(mq, key, 30_000);
    await stopWithin('drain (confirms held 30 s)', relay);
    await mq.stop();
  });

  it('the broker down', async () => {
    const { relay, mq, key } = await runningRelay();
    await rowsInFlight(mq, key, 3000);
    const restart = restartService('rabbitmq', 20);
    await new Promise((r) => setTimeout(r, 3000));
    await stopWithin('broker down', relay);
    await restart;
    await mq.stop();
  });

  it('the database down (restarting), outcomes waiting to be written', async () => {
    const { relay, mq, key } = await runningRelay();
    await rowsInFlight(mq, key, 3000);
    const restart = restartService('mariadb', 30);
    await new Promise((r) => setTimeout(r, 2000));
    await stopWithin('database down', relay);
    await restart;
    admin = await connectAdmin();
    await mq.stop();
  });

  it('the database frozen (kill -STOP), outcomes waiting to be written', async () => {
    const { relay, mq, key } = await runningRelay();
    await rowsInFlight(mq, key, 3000);
    freezeMariadb(true);
    try {
      await new Promise((r) => setTimeout(r, 2000));
      await stopWithin('database hung', relay);
    } finally {
      freezeMariadb(false);
    }
    admin = await connectAdmin();
    await mq.stop();
  });

  it('a broker memory alarm, messages in flight', async () => {
    const { relay, mq, key } = await runningRelay();
    await rowsInFlight(mq, key, 1000);
    await brokerMemoryAlarm(true);
    try {
      await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 20);
      await new Promise((r) => setTimeout(r, 2000));
      await stopWithin('memory alarm', relay);
    } finally {
      await brokerMemoryAlarm(false);
    }
    await mq.stop();
  });
});

/** A resolver running, with `n` due commands whose lookups take 60 s (claimed and out when it returns). */
async function resolverWithLookupsOut(n: number): Promise<{ resolver: RunningService; prefix: string }> {
  await flow.clearFaults();
  const prefix = uniquePrefix('fst');
  const resolver = startService(
    [
      '--json',
      'apply-command',
      'resolve-unknown',
      '--follow',
      '--drain-seconds',
      String(DRAIN_SECONDS),
      '--request-timeout',
      '60',
      '--lease-seconds',
      '130',
    ],
    {
      env: dbs.env({ FCCTL_FLOW_URL: flow.url, FCCTL_APP_KEY: APP.key, FCCTL_APP_SECRET: APP.secret }),
      timeoutMs: 300_000,
    },
  );
  await resolver.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
  if (n === 0) return { resolver, prefix };
  await flow.faults([{ path: '/oapi/flow/instance', kind: 'latency', ms: 60_000 }]);
  const shAdmin = await replaceableConnection(dbs.shName);
  await insertCommands(
    shAdmin,
    dbs.shName,
    Array.from({ length: n }, (_, i) => ({ bizId: `${prefix}-${i}`, state: 'UNKNOWN' as const })),
  );
  await waitFor(
    'commands claimed',
    async () => (await commandsOf(shAdmin, dbs.shName, prefix)).every((c) => c.claim_owner !== null),
    30_000,
    50,
  );
  await shAdmin.end();
  return { resolver, prefix };
}

/** No command charged by the stop: all still UNKNOWN with no retry spent and no error (claims may remain, to expire). */
async function unchargedAfterStop(prefix: string): Promise<void> {
  const shAdmin = await replaceableConnection(dbs.shName);
  const rows = await commandsOf(shAdmin, dbs.shName, prefix);
  await shAdmin.end();
  expect(rows.length).toBeGreaterThan(0);
  for (const r of rows) expect(r).toMatchObject({ state: 'UNKNOWN', retry_count: 0, last_error: null });
}

describe('the resolver: SIGTERM to exit within --drain-seconds + 10 s, nothing charged', () => {
  it('idle', async () => {
    const { resolver } = await resolverWithLookupsOut(0);
    await stopWithin('idle', resolver, 'apply-command resolve-unknown');
  });

  it('lookups slower than the drain: abandoned at its end, released uncharged', async () => {
    const { resolver, prefix } = await resolverWithLookupsOut(4);
    await stopWithin('drain (lookups take 60 s)', resolver, 'apply-command resolve-unknown');
    await unchargedAfterStop(prefix);
  });

  it('the database down (restarting) while lookups are out', async () => {
    const { resolver, prefix } = await resolverWithLookupsOut(4);
    const restart = restartService('mariadb', 30);
    await new Promise((r) => setTimeout(r, 2000));
    await stopWithin('database down', resolver, 'apply-command resolve-unknown');
    await restart;
    admin = await connectAdmin();
    await unchargedAfterStop(prefix);
  });

  it('the database frozen (kill -STOP) while lookups are out', async () => {
    const { resolver, prefix } = await resolverWithLookupsOut(4);
    freezeMariadb(true);
    try {
      await new Promise((r) => setTimeout(r, 2000));
      await stopWithin('database hung', resolver, 'apply-command resolve-unknown');
    } finally {
      freezeMariadb(false);
    }
    admin = await connectAdmin();
    await unchargedAfterStop(prefix);
  });
});
