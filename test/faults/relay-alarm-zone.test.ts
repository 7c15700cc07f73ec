import type mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
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
import { brokerMemoryAlarm, replaceableConnection } from '../helpers/faults.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, startService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 34 §7: `deliveries send --follow` under a broker memory alarm says so on `/readyz` as soon
 * as the connection is blocked (not after its confirms time out), and is ready again once the alarm
 * clears. §9: the FC server's `time_zone` changed under a running relay reaches `occurredAt` within
 * a minute, and at once at a reconnect. In the fault suite: they raise a real alarm on the local
 * broker and change the local MariaDB's global `time_zone` (restored after).
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
let dbs: TestDatabases;
let admin: mysql.Connection;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  dbs = await freshDatabases('falarm');
  await dbs.admin.end();
  admin = await replaceableConnection(dbs.fcName);
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  expect((await runCli(['db', 'init', '--side', 'fc'], { env })).code).toBe(0);
  await insertRegistry(admin, dbs.fcName);
  await ensureExchange();
});
afterAll(async () => {
  await admin?.query(`DROP DATABASE IF EXISTS \`${dbs.fcName}\``).catch(() => undefined);
  await admin?.query(`DROP DATABASE IF EXISTS \`${dbs.shName}\``).catch(() => undefined);
  await admin?.end().catch(() => undefined);
});

const readyz = (port: number) => httpGet(port, '/readyz').catch(() => ({ status: -1, body: '' }));

/** A consumer of its own (a bound durable queue, a grant) and a follow relay serving --listen on a free port. */
async function alarmRelay(prefix: string, more: readonly string[] = []) {
  const key = uniqueConsumerKey(prefix);
  const queue = await bindQueue(key, { durable: true });
  await insertGrant(admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  const port = await freePort();
  const relay = startService(['--json', 'deliveries', 'send', '--follow', ...more, '--listen', `:${port}`], {
    env,
    timeoutMs: 300_000,
  });
  return { key, queue, port, relay };
}

/** SIGTERM, timed: exit 0 within `limitMs` (the drain + 10 s). */
async function stopWithin(relay: ReturnType<typeof startService>, what: string, limitMs: number): Promise<void> {
  const signalled = Date.now();
  const stopped = await relay.stop('SIGTERM');
  const stopMs = Date.now() - signalled;
  console.log(`${what}: SIGTERM to exit ${stopMs} ms`);
  expect(stopped.code).toBe(0);
  expect(stopMs).toBeLessThan(limitMs);
}

describe('a follow relay under a broker memory alarm', () => {
  it('answers /readyz 503 "blocked" within a second of the broker blocking it, 200 once unblocked', async () => {
    // the default confirm timeout: before, /readyz stayed 200 until the claimed rows' confirms timed out
    const { key, queue, port, relay } = await alarmRelay('fbl');
    try {
      await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
      expect((await readyz(port)).status).toBe(200);
      await brokerMemoryAlarm(true);
      let unready: { status: number; body: string } | undefined;
      let blockedMs = -1;
      try {
        // the broker blocks a connection when it next publishes: rows due make it publish
        const inserted = Date.now();
        await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 50);
        await waitFor(
          'unready during the alarm',
          async () => {
            const r = await readyz(port);
            if (r.status !== 503) return false;
            unready = r;
            return true;
          },
          60_000,
          20,
        ).catch((e: Error) => {
          throw new Error(`${e.message}; relay said: ${JSON.stringify(relay.lines().slice(-8))} ${relay.stderr()}`);
        });
        blockedMs = Date.now() - inserted;
        console.log(`memory alarm: rows due to /readyz 503 in ${blockedMs} ms: ${unready?.body.trim()}`);
        expect(unready!.body).toMatch(/^blocked: .*low on memory/);
        // the relay's poll (0.2 s) and the broker's answer to the first publish, with room for a busy host
        expect(blockedMs).toBeLessThan(2000);
        const metrics = await httpGet(port, '/metrics');
        expect(metrics.body).toMatch(/^fcctl_service_ready\{command="deliveries send"\} 0$/m);
        // it stays unready for as long as the alarm lasts
        await new Promise((r) => setTimeout(r, 3000));
        expect((await readyz(port)).status).toBe(503);
        expect(relay.child.exitCode).toBeNull();
        expect((await httpGet(port, '/healthz')).status).toBe(200);
      } finally {
        await brokerMemoryAlarm(false);
      }
      const cleared = Date.now();
      await waitFor('ready again', async () => (await readyz(port)).status === 200, 90_000, 50);
      console.log(`memory alarm cleared: /readyz 200 again in ${Date.now() - cleared} ms`);
      await waitFor(
        'all 50 accepted',
        async () => {
          const [rows] = await admin.query(
            `SELECT COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key = ? AND state = 'BROKER_ACCEPTED'`,
            [key],
          );
          return Number((rows as Array<{ n: number }>)[0]!.n) === 50;
        },
        90_000,
        200,
      );
      expect(relay.lines().filter((l) => l['type'] === 'blocked')).toEqual([
        expect.objectContaining({ blocked: true, reason: 'low on memory' }),
        expect.objectContaining({ blocked: false }),
      ]);
      // a stop during an alarm, with rows claimed and unconfirmed: within the drain (30 s) and 10 s more
      await brokerMemoryAlarm(true);
      try {
        await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 10);
        await waitFor('blocked again', async () => (await readyz(port)).status === 503, 30_000, 20);
        await stopWithin(relay, 'memory alarm', 40_000);
      } finally {
        await brokerMemoryAlarm(false);
      }
    } finally {
      await relay.stop('SIGKILL');
      await queue.close().catch(() => undefined);
    }
  }, 300_000);
});

describe('a follow relay under a memory alarm that flaps', () => {
  it('follows each block and unblock on /readyz, delivers every row once the alarm is gone, and a stop while blocked exits 0 within drain + 10 s', async () => {
    const { key, queue, port, relay } = await alarmRelay('ffl');
    const accepted = async () => {
      const [rows] = await admin.query(
        `SELECT COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key = ? AND state = 'BROKER_ACCEPTED'`,
        [key],
      );
      return Number((rows as Array<{ n: number }>)[0]!.n);
    };
    try {
      await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
      for (let i = 0; i < 3; i++) {
        await brokerMemoryAlarm(true);
        try {
          await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 20);
          await waitFor(`blocked (${i + 1})`, async () => (await readyz(port)).status === 503, 30_000, 20);
        } finally {
          await brokerMemoryAlarm(false);
        }
        await waitFor(`ready again (${i + 1})`, async () => (await readyz(port)).status === 200, 60_000, 50);
      }
      await waitFor('all 60 accepted', async () => (await accepted()) === 60, 90_000, 200);
      const blocked = relay
        .lines()
        .filter((l) => l['type'] === 'blocked')
        .map((l) => l['blocked']);
      expect(blocked).toEqual([true, false, true, false, true, false]);
      expect((await queue.drain()).length).toBeGreaterThanOrEqual(60);
      await brokerMemoryAlarm(true);
      try {
        await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 10);
        await waitFor('blocked at the stop', async () => (await readyz(port)).status === 503, 30_000, 20);
        await stopWithin(relay, 'flapping memory alarm, while blocked', 40_000);
      } finally {
        await brokerMemoryAlarm(false);
      }
    } finally {
      await relay.stop('SIGKILL');
      await queue.close().catch(() => undefined);
    }
  }, 300_000);
});

describe('a follow relay stopped during a memory alarm with a short drain', () => {
  it('exits 0 within --drain-seconds 2 + 10 s: the unconfirmed rows learn of the closed channel at the drain, not at their confirm timeout', async () => {
    const { key, queue, port, relay } = await alarmRelay('fsd', ['--drain-seconds', '2']);
    try {
      await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
      await brokerMemoryAlarm(true);
      try {
        await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 10);
        await waitFor('blocked', async () => (await readyz(port)).status === 503, 30_000, 20);
        await stopWithin(relay, 'memory alarm, --drain-seconds 2', 12_000);
      } finally {
        await brokerMemoryAlarm(false);
      }
    } finally {
      await relay.stop('SIGKILL');
      await queue.close().catch(() => undefined);
    }
  }, 300_000);
});

describe('a follow relay after the FC server changes its time_zone', () => {
  it('stamps occurredAt with the new offset within a minute, and at once after a reconnect', async () => {
    const key = uniqueConsumerKey('fzn');
    const queue = await bindQueue(key);
    await insertGrant(admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    const [[global]] = (await admin.query('SELECT @@global.time_zone AS tz')) as unknown as [[{ tz: string }]];
    const proxy = new TcpProxy('127.0.0.1', Number(new URL(testAmqpUrl()).port));
    const setZone = (tz: string) => admin.query('SET GLOBAL time_zone = ?', [tz]);
    // occurredAt of the next row published: the rows' occurred_at is 2026-10-21 10:05:00 in the server's zone
    const nextStamp = async (): Promise<string> => {
      await insertDeliveries(admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 1);
      let got: string | undefined;
      await waitFor(
        'a message',
        async () => {
          const m = await queue.drain();
          got = m.length ? (JSON.parse(m[m.length - 1]!.content.toString()) as { occurredAt: string }).occurredAt : got;
          return m.length > 0;
        },
        30_000,
        50,
      );
      return got!;
    };
    await setZone('+00:00');
    await proxy.start();
    const relay = startService(['--json', 'deliveries', 'send', '--follow'], {
      env: { ...env, FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), proxy.port) },
      timeoutMs: 300_000,
    });
    try {
      await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
      expect(await nextStamp()).toBe('2026-10-21T10:05:00+00:00');
      // the operator (or a DST change of a zone known by its offset only) moves the server's zone
      await setZone('+05:00');
      const changed = Date.now();
      let stamp = await nextStamp();
      while (stamp !== '2026-10-21T10:05:00+05:00' && Date.now() - changed < 75_000) {
        expect(stamp).toBe('2026-10-21T10:05:00+00:00');
        await new Promise((r) => setTimeout(r, 2000));
        stamp = await nextStamp();
      }
      const tookMs = Date.now() - changed;
      console.log(`time zone: SET GLOBAL time_zone to occurredAt +05:00 in ${tookMs} ms`);
      expect(stamp).toBe('2026-10-21T10:05:00+05:00');
      expect(tookMs).toBeLessThan(65_000);
      const seen = Date.now();
      expect(relay.lines().some((l) => l['type'] === 'zone' && l['zone'] === '+05:00' && l['was'] === '+00:00')).toBe(
        true,
      );
      // a reconnect reads it again at once: well within the minute the last read is good for
      await setZone('+03:00');
      proxy.cut();
      await relay.waitForLine('outage', (l) => l['type'] === 'state' && l['state'] === 'outage');
      const after = relay.lines().length;
      await waitFor(
        'running again',
        async () =>
          relay
            .lines()
            .slice(after)
            .some((l) => l['type'] === 'state' && l['state'] === 'running'),
        45_000,
        50,
      );
      expect(await nextStamp()).toBe('2026-10-21T10:05:00+03:00');
      const reconnectMs = Date.now() - seen;
      console.log(`time zone: a reconnect ${reconnectMs} ms after the last read stamped the new offset at once`);
      expect(reconnectMs).toBeLessThan(55_000);
      const stopped = await relay.stop('SIGTERM');
      expect(stopped.code).toBe(0);
    } finally {
      await setZone(global.tz);
      await relay.stop('SIGKILL');
      await proxy.stop();
      await queue.close().catch(() => undefined);
    }
  }, 300_000);
});
