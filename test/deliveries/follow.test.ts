/**
 * `deliveries send --follow` (issue 27 §1, §3) as real `bin/fcctl` processes that keep running:
 * rows committed while it runs are delivered within the poll interval's order of magnitude, the
 * endpoint answers, the pause idles it and `resume` wakes it, SIGTERM drains it to exit 0 with
 * nothing left claimed, several relays share one outbox, and its registry row comes and goes.
 * Broker and database restarts under a running relay are in test/faults/follow.test.ts.
 */
import { afterEach, describe, expect } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001'; // insertDeliveries' form
const test = servicesTest({ prefix: 'follow', init: 'fc' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
const running: RunningService[] = [];

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
  await dbs.admin.query(
    `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', claim_owner = NULL WHERE state IN ('PENDING', 'FAILED')`,
  );
  await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.fcctl_pause`);
  await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.fcctl_worker`);
});

const follow = (args: string[] = [], extraEnv: Record<string, string | undefined> = {}) => {
  const s = startService(['--json', 'deliveries', 'send', '--follow', ...args], { env: { ...env, ...extraEnv } });
  running.push(s);
  return s;
};
async function count(sql: string, params: unknown[] = []): Promise<number> {
  const [rows] = await dbs.admin.query(sql, params);
  return Number((rows as Array<{ n: number }>)[0]!.n);
}
const accepted = (key: string) =>
  count(
    `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND state = 'BROKER_ACCEPTED'`,
    [key],
  );
const claimed = () =>
  count(
    `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE claim_owner IS NOT NULL AND state IN ('PENDING', 'FAILED')`,
  );
const workers = () => count(`SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.fcctl_worker`);
async function consumer() {
  const key = uniqueConsumerKey('fw');
  const q = await bindQueue(key);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  return { key, q };
}

describe('deliveries send --follow', () => {
  test('delivers rows committed while it runs, serves /readyz, /healthz, /metrics, and drains to exit 0 on SIGTERM', async () => {
    const { key, q } = await consumer();
    const port = await freePort();
    const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1']);
    await relay.waitForLine('the running state', (l) => l['type'] === 'state' && l['state'] === 'running');
    // each change of state said once
    expect(
      relay
        .lines()
        .filter((l) => l['type'] === 'state')
        .map((l) => l['state']),
    ).toEqual(['starting', 'running']);
    expect((await httpGet(port, '/readyz')).status).toBe(200);
    expect((await httpGet(port, '/healthz')).status).toBe(200);
    await waitFor('the registry row', async () => (await workers()) === 1, 10_000, 100);

    // rows committed one small batch at a time, while the relay polls
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push(...(await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 5)));
      await new Promise((r) => setTimeout(r, 50));
    }
    const t0 = Date.now();
    await waitFor('all 50 accepted', async () => (await accepted(key)) === 50, 20_000, 50);
    // the order of magnitude only (the bench measures the latency): well under a cron minute
    expect(Date.now() - t0).toBeLessThan(10_000);
    const messages = await q.drain();
    expect(new Set(messages.map((m) => m.properties.messageId)).size).toBe(50);

    const metrics = await httpGet(port, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^fcctl_relay_rows_total\{result="done",reason=""\} 50$/m);
    expect(metrics.body).toMatch(/^fcctl_service_ready\{command="deliveries send"\} 1$/m);
    expect(metrics.body).toContain('process_cpu_user_seconds_total');
    expect(metrics.body).not.toContain(ids[0]!); // no event id as a label
    expect((await httpGet(port, '/nope')).status).toBe(404);
    expect((await httpGet(port, '/metrics', 'POST')).status).toBe(405);

    const r = await relay.stop('SIGTERM');
    expect(r.code).toBe(0);
    const summary = r.stdout
      .split('\n')
      .filter((l) => l.includes('"type":"summary"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)[0]!;
    expect(summary).toMatchObject({ exitCode: 0, accepted: 50, stoppedBy: 'signal', follow: true });
    expect(await claimed()).toBe(0);
    expect(await workers()).toBe(0);
    await q.close();
  });

  test('two relays paused: neither claims, both /readyz 503; resumed, both wake within a poll or two and deliver', async () => {
    const { key, q } = await consumer();
    const ports = [await freePort(), await freePort()];
    const relays = ports.map((port) => follow(['--listen', `:${port}`]));
    for (const r of relays) await r.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
    expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
    for (const r of relays) await r.waitForLine('paused', (l) => l['type'] === 'state' && l['state'] === 'paused');
    for (const port of ports) {
      const ready = await httpGet(port, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toContain('paused');
    }
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 400);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await accepted(key)).toBe(0);
    expect(await claimed()).toBe(0);
    const resumedAt = Date.now();
    expect((await runCli(['resume', 'deliveries send'], { env })).code).toBe(0);
    await waitFor('delivered after resume', async () => (await accepted(key)) === 400, 10_000, 50);
    // each relay back to running within a couple of polls of the resume
    const back = await Promise.all(
      relays.map((r) =>
        r.waitForLine(
          'running again',
          (l) => l['type'] === 'state' && l['state'] === 'running' && Date.parse(String(l['ts'])) >= resumedAt,
          5000,
        ),
      ),
    );
    expect(Math.max(...back.map((l) => Date.parse(String(l['ts'])))) - resumedAt).toBeLessThan(2000);
    for (const port of ports) expect((await httpGet(port, '/readyz')).status).toBe(200);
    const ends = await Promise.all(relays.map((r) => r.stop()));
    expect(ends.map((e) => e.code)).toEqual([0, 0]);
    await q.close();
  });

  test('SIGTERM mid-load: stops claiming, finishes what is in flight, exit 0, nothing left claimed; the rest is there for the next relay', async () => {
    const { key, q } = await consumer();
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 20_000);
    const relay = follow(['--batch-size', '100', '--pipeline', '2']);
    await waitFor('some accepted', async () => (await accepted(key)) > 500, 30_000, 20);
    const end = await relay.stop('SIGTERM');
    expect(end.code).toBe(0);
    const done = await accepted(key);
    expect(done).toBeLessThan(20_000);
    expect(await claimed()).toBe(0);
    const summary = JSON.parse(end.stdout.split('\n').find((l) => l.includes('"type":"summary"'))!) as Record<
      string,
      unknown
    >;
    expect(summary).toMatchObject({ exitCode: 0, stoppedBy: 'signal', accepted: done });
    const next = follow();
    await waitFor('the next relay delivers the rest', async () => (await accepted(key)) === 20_000, 60_000, 100);
    expect((await next.stop()).code).toBe(0);
    await q.close();
  }, 120_000);

  test('a misconfiguration (the publisher missing from the registry) claims nothing and is looked at again; fixed, it resumes by itself', async () => {
    const { key, q } = await consumer();
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.application_info`);
    try {
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 5);
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`]);
      const line = await relay.waitForLine(
        'misconfigured',
        (l) => l['type'] === 'state' && l['state'] === 'misconfigured',
      );
      expect(String(line['detail'])).toContain('publisher identity');
      expect((await httpGet(port, '/readyz')).body).toMatch(/^misconfigured: publisher identity/);
      expect(await claimed()).toBe(0);
      const [rows] = await dbs.admin.query(
        `SELECT MAX(retry_count) AS r FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ?`,
        [key],
      );
      expect(Number((rows as Array<{ r: number }>)[0]!.r)).toBe(0);
      await insertRegistry(dbs.admin, dbs.fcName);
      // looked at again every 30 s
      await waitFor('resumed by itself', async () => (await accepted(key)) === 5, 45_000, 200);
      expect((await httpGet(port, '/readyz')).status).toBe(200);
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await insertRegistry(dbs.admin, dbs.fcName);
      await q.close();
    }
  }, 90_000);

  test('a relay killed with SIGKILL leaves its registry row, stale after three heartbeats', async () => {
    const relay = follow(['--heartbeat-seconds', '1']);
    await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
    await waitFor('its row', async () => (await workers()) === 1, 10_000, 100);
    await relay.stop('SIGKILL');
    const stale = () =>
      count(
        `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.fcctl_worker WHERE last_beat_at < UTC_TIMESTAMP() - INTERVAL 3 * heartbeat_seconds SECOND`,
      );
    expect(await stale()).toBe(0);
    await waitFor('stale', async () => (await stale()) === 1, 10_000, 200);
    const [rows] = await dbs.admin.query(`SELECT command, pid, state, version FROM \`${dbs.fcName}\`.fcctl_worker`);
    expect((rows as Array<Record<string, unknown>>)[0]).toMatchObject({
      command: 'deliveries send',
      pid: relay.child.pid,
      state: 'running',
    });
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.fcctl_worker`);
  });

  test('three relays on one outbox share it: every row accepted once, each relay takes some', async () => {
    const { key, q } = await consumer();
    const relays = [follow(), follow(), follow()];
    for (const r of relays) await r.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
    for (let i = 0; i < 30; i++) {
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 20);
      await new Promise((r) => setTimeout(r, 30));
    }
    await waitFor('600 accepted', async () => (await accepted(key)) === 600, 30_000, 100);
    const results = await Promise.all(relays.map((r) => r.stop()));
    const shares = results.map(
      (r) =>
        JSON.parse(r.stdout.split('\n').find((l) => l.includes('"type":"summary"'))!) as {
          accepted: number;
          exitCode: number;
        },
    );
    expect(shares.map((s) => s.exitCode)).toEqual([0, 0, 0]);
    expect(shares.reduce((a, s) => a + s.accepted, 0)).toBe(600);
    for (const s of shares) expect(s.accepted).toBeGreaterThan(0);
    const messages = await q.drain();
    expect(new Set(messages.map((m) => m.properties.messageId)).size).toBe(600);
    await q.close();
  });

  test('a broker that takes the TCP connection but drops or stalls the handshake (restarting, or behind a proxy) is an outage waited out with backoff, not a misconfiguration looked at in 30 s', async () => {
    const { key, q } = await consumer();
    const amqp = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqp.hostname, Number(amqp.port || 5672));
    const port = await proxy.start();
    try {
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 3);
      // accepted, then closed before the handshake: "Socket closed abruptly during opening handshake"
      proxy.refuse(true);
      const relay = follow([], { FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), port) });
      await relay.waitForLine('the first failure', (l) => l['type'] === 'state' && l['state'] !== 'starting');
      await new Promise((r) => setTimeout(r, 4000));
      // accepted, then silent past the client's 5 s handshake timeout: "connect ETIMEDOUT"
      proxy.refuse(false);
      proxy.delayMs = 7000;
      await new Promise((r) => setTimeout(r, 8000));
      proxy.delayMs = 0;
      const fixedAt = Date.now();
      await waitFor('delivered once the broker answers', async () => (await accepted(key)) === 3, 20_000, 100);
      const states = relay.lines().filter((l) => l['type'] === 'state');
      expect(states.filter((l) => l['state'] === 'misconfigured').map((l) => l['detail'])).toEqual([]);
      // backoff (a few seconds at most here), not the 30 s re-check of a misconfiguration
      expect(Date.now() - fixedAt).toBeLessThan(12_000);
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
      await q.close();
    }
  }, 90_000);

  test('SIGTERM while the FC database is unresponsive (it takes the connection, answers nothing): exit 0 within seconds, not after every queued heartbeat has timed out', async () => {
    const fcUrl = new URL(env['FCCTL_FC_DATABASE_URL']!);
    const proxy = new TcpProxy(fcUrl.hostname, Number(fcUrl.port || 3306));
    const port = await proxy.start();
    try {
      const relay = follow(['--heartbeat-seconds', '1'], { FCCTL_FC_DATABASE_URL: viaProxy(fcUrl.toString(), port) });
      await relay.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
      // every connection dropped, the new ones held silent (each attempt waits the 5 s connect timeout)
      proxy.delayMs = 120_000;
      proxy.cut();
      await relay.waitForLine('the outage', (l) => l['type'] === 'state' && l['state'] === 'outage', 20_000);
      await new Promise((r) => setTimeout(r, 10_000));
      const t0 = Date.now();
      const end = await relay.stop('SIGTERM', 120_000);
      expect(end.code).toBe(0);
      // a query in flight waits its 5 s connect timeout; the last beat and the removal 3 s each at most
      expect(Date.now() - t0).toBeLessThan(15_000);
    } finally {
      await proxy.stop();
    }
  }, 180_000);

  test('the FC database down at start: no exit, /readyz 503 naming it; once it answers, the relay starts and delivers', async () => {
    const { key, q } = await consumer();
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 10);
    const fcUrl = new URL(env['FCCTL_FC_DATABASE_URL']!);
    const proxy = new TcpProxy(fcUrl.hostname, Number(fcUrl.port || 3306));
    const proxyPort = await proxy.start();
    proxy.refuse(true);
    try {
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`], { FCCTL_FC_DATABASE_URL: viaProxy(fcUrl.toString(), proxyPort) });
      const outage = await relay.waitForLine(
        'the outage',
        (l) => l['type'] === 'state' && l['state'] === 'outage',
        20_000,
      );
      expect(String(outage['detail'])).toMatch(/FC database at mysql:\/\/[^:]+:\*\*\*@/);
      const ready = await httpGet(port, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatch(/^outage: cannot connect to FC database/);
      await new Promise((r) => setTimeout(r, 1500));
      expect(relay.child.exitCode).toBeNull();
      proxy.refuse(false);
      await waitFor('delivered once the database answers', async () => (await accepted(key)) === 10, 40_000, 100);
      expect((await httpGet(port, '/readyz')).status).toBe(200);
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
      await q.close();
    }
  }, 90_000);

  test('bad input: --follow with --dry-run, a service flag without --follow, a bad --listen or --poll-interval: exit 2, one line', async () => {
    const cases: string[][] = [
      ['--follow', '--dry-run'],
      ['--listen', ':9464'],
      ['--follow', '--listen', 'nope'],
      ['--follow', '--listen', ':70000'],
      ['--follow', '--poll-interval', '0.01'],
      ['--follow', '--poll-interval', 'x'],
      ['--follow', '--drain-seconds', '-1'],
    ];
    for (const args of cases) {
      const r = await runCli(['deliveries', 'send', ...args], { env });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });

  test('a --listen port already taken: exit 3, one line naming the address, nothing claimed', async () => {
    const port = await freePort();
    const first = follow(['--listen', `:${port}`]);
    await first.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running');
    const { key, q } = await consumer();
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 3);
    const r = await runCli(['deliveries', 'send', '--follow', '--listen', `127.0.0.1:${port}`], { env });
    expect(r.code).toBe(3);
    expect(r.stderr.trim()).toBe(`fcctl: --listen 127.0.0.1:${port}: the address is already in use`);
    // the rows are the first relay's to deliver, none held by the refused one
    await waitFor('the first relay delivered', async () => (await accepted(key)) === 3, 10_000, 50);
    expect(await workers()).toBe(1);
    await q.close();
  });
});
