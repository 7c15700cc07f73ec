/**
 * A follow relay's `/metrics` under faults (issue 36 §1, §4; review of the metrics change), on real
 * `bin/fcctl` processes, the real outbox and broker behind TCP proxies: a confirm that never
 * arrives (the broker frozen: confirm timeouts) is no claim-to-confirm latency; the database's
 * connection state is exactly one of connected/closed/lost from a start while paused, and a
 * database back during a pause reads connected (the pause switch is read through it).
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
import { promtool } from '../helpers/promtool.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001'; // insertDeliveries' form
const test = servicesTest({ prefix: 'fmfault', init: 'fc' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
const running: RunningService[] = [];
const LABEL = 'command="deliveries send"';

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

const follow = (args: string[], extraEnv: Record<string, string | undefined> = {}) => {
  const s = startService(['--json', 'deliveries', 'send', '--follow', ...args], { env: { ...env, ...extraEnv } });
  running.push(s);
  return s;
};
const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;
/** The value of one sample in a /metrics body (NaN when absent). */
const sample = (body: string, name: string, labels = '') =>
  Number(new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(body)?.[1] ?? Number.NaN);
const metrics = async (port: number) => (await httpGet(port, '/metrics')).body;

describe('deliveries send --follow: /metrics under faults (issue 36 §1, §4)', () => {
  test('a confirm that never arrives (broker frozen: timeouts) is not observed as claim-to-confirm: the histogram counts confirms only', async () => {
    const key = uniqueConsumerKey('fx');
    const q = await bindQueue(key);
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    const amqpUrl = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
    const proxyPort = await proxy.start();
    try {
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--confirm-timeout', '1', '--lease-seconds', '10'], {
        FCCTL_AMQP_URL: viaProxy(amqpUrl.toString(), proxyPort),
      });
      await relay.waitForLine('running', isState('running'));
      // one row confirmed for real first: the histogram has one observation, a true one
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 1);
      await waitFor(
        'one ack',
        async () => sample(await metrics(port), 'fcctl_relay_confirms_total', 'outcome="ack"') === 1,
        20_000,
        100,
      );
      // the broker stops answering: these rows' confirms never arrive, they time out after 1 s
      proxy.freeze();
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 5);
      await waitFor(
        'the confirms timed out',
        async () => sample(await metrics(port), 'fcctl_relay_confirms_total', 'outcome="timeout"') >= 5,
        30_000,
        100,
      );
      const body = await metrics(port);
      const confirms = ['ack', 'nack', 'returned']
        .map((o) => sample(body, 'fcctl_relay_confirms_total', `outcome="${o}"`))
        .reduce((a, n) => a + (Number.isNaN(n) ? 0 : n), 0);
      expect(confirms).toBe(1);
      // the HELP: "to the row's publisher confirm": a timeout is none
      expect(sample(body, 'fcctl_relay_claim_to_confirm_seconds_count')).toBe(confirms);
      expect(sample(body, 'fcctl_relay_claim_to_confirm_seconds_sum')).toBeLessThan(1);
      // after the timeouts, rows FAILED with their reason: still lint-clean
      const lint = promtool(['check', 'metrics'], body);
      expect({ code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ code: 0, out: '' });
    } finally {
      await proxy.stop();
      await q.close();
    }
  }, 90_000);

  test('held rows up for their recheck (the relay paused): /metrics says what `status` says, due rows and the oldest due age', async () => {
    const key = uniqueConsumerKey('fh');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key, push: 0 });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 3);
    // held before, their recheck 40 s ago: due again for the relay to look at, still not to be sent
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET next_retry_at = NOW() - INTERVAL 40 SECOND WHERE consumer_app_key = ?`,
      [key],
    );
    expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
    const port = await freePort();
    const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1']);
    await relay.waitForLine('paused', isState('paused'));
    await new Promise((r) => setTimeout(r, 2500)); // two beats: the gauges read with the relay paused
    const body = await metrics(port);
    const status = await runCli(['--json', 'status'], { env });
    const outbox = (
      JSON.parse(status.stdout.trim().split('\n').pop()!) as Record<
        string,
        { oldestDueAgeSeconds: number | null; due: number }
      >
    )['outbox']!;
    const statusAge = outbox.oldestDueAgeSeconds ?? 0;
    expect(sample(body, 'fcctl_relay_due_rows')).toBe(outbox.due);
    expect(Math.abs(sample(body, 'fcctl_relay_oldest_due_age_seconds') - statusAge)).toBeLessThanOrEqual(3);
  }, 60_000);

  test('connection state from a start with the broker down: the broker lost, the database connected (never no series); the first connect made late is no reconnect', async () => {
    const amqpUrl = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
    const proxyPort = await proxy.start();
    try {
      proxy.refuse(true);
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1'], {
        FCCTL_AMQP_URL: viaProxy(amqpUrl.toString(), proxyPort),
      });
      await relay.waitForLine('outage', isState('outage'));
      const read = async () => {
        const body = await metrics(port);
        const of = (target: string) => ({
          connected: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="connected"`),
          closed: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="closed"`),
          lost: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="lost"`),
          reconnects: sample(body, 'fcctl_service_reconnects_total', `${LABEL},target="${target}"`),
        });
        return { broker: of('broker'), db: of('fc_database') };
      };
      const connected = { connected: 1, closed: 0, lost: 0, reconnects: 0 };
      expect(await read()).toEqual({ broker: { connected: 0, closed: 0, lost: 1, reconnects: 0 }, db: connected });
      proxy.refuse(false);
      await relay.waitForLine('running', isState('running'), 60_000);
      expect(await read()).toEqual({ broker: connected, db: connected });
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test('the broker lost and back: lost (the database connected meanwhile), then connected with one reconnect', async () => {
    const amqpUrl = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
    const proxyPort = await proxy.start();
    try {
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1'], {
        FCCTL_AMQP_URL: viaProxy(amqpUrl.toString(), proxyPort),
      });
      await relay.waitForLine('running', isState('running'));
      const read = async () => {
        const body = await metrics(port);
        const of = (target: string) => [
          ...['connected', 'closed', 'lost'].map((state) =>
            sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="${state}"`),
          ),
          sample(body, 'fcctl_service_reconnects_total', `${LABEL},target="${target}"`),
        ];
        return { broker: of('broker'), db: of('fc_database') };
      };
      expect(await read()).toEqual({ broker: [1, 0, 0, 0], db: [1, 0, 0, 0] });
      proxy.refuse(true);
      proxy.cut();
      await waitFor('the broker lost', async () => (await read()).broker[2] === 1, 30_000, 100);
      expect(await read()).toEqual({ broker: [0, 0, 1, 0], db: [1, 0, 0, 0] });
      proxy.refuse(false);
      await waitFor('the broker back', async () => (await read()).broker[0] === 1, 60_000, 100);
      await relay.waitForLine(
        'running again',
        (l) => isState('running')(l) && relay.lines().filter(isState('running')).length >= 2,
      );
      expect(await read()).toEqual({ broker: [1, 0, 0, 1], db: [1, 0, 0, 0] });
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test('misconfigured from the start (a publisher key the registry does not have): both targets connected, each in exactly one state', async () => {
    const port = await freePort();
    const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1'], {
      FCCTL_APP_KEY: 'not-the-registry-key',
    });
    await relay.waitForLine('misconfigured', isState('misconfigured'));
    const body = await metrics(port);
    const states = (target: string) =>
      ['connected', 'closed', 'lost'].map((state) =>
        sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="${state}"`),
      );
    expect({ broker: states('broker'), db: states('fc_database') }).toEqual({ broker: [1, 0, 0], db: [1, 0, 0] });
    expect((await relay.stop()).code).toBe(0);
  }, 60_000);

  test('connection state from a start with the database down: the database lost, the broker closed (waiting on the database, never no series)', async () => {
    const fcUrl = new URL(env['FCCTL_FC_DATABASE_URL']!);
    const proxy = new TcpProxy(fcUrl.hostname, Number(fcUrl.port || 3306));
    const proxyPort = await proxy.start();
    try {
      proxy.refuse(true);
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1'], {
        FCCTL_FC_DATABASE_URL: viaProxy(fcUrl.toString(), proxyPort),
      });
      await relay.waitForLine('outage', isState('outage'));
      const body = await metrics(port);
      const states = (target: string) =>
        ['connected', 'closed', 'lost'].map((state) =>
          sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="${state}"`),
        );
      expect({ broker: states('broker'), db: states('fc_database') }).toEqual({ broker: [0, 1, 0], db: [0, 0, 1] });
      const lint = promtool(['check', 'metrics'], body);
      expect({ code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ code: 0, out: '' });
      proxy.refuse(false);
      await relay.waitForLine('running', isState('running'), 60_000);
      // the first connects, made late: no reconnect
      const after = await metrics(port);
      expect(
        ['broker', 'fc_database'].map((t) => sample(after, 'fcctl_service_reconnects_total', `${LABEL},target="${t}"`)),
      ).toEqual([0, 0]);
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test('connection state from a start while paused: the database connected (the switch is read through it), the broker closed; a database back during the pause reads connected again', async () => {
    const fcUrl = new URL(env['FCCTL_FC_DATABASE_URL']!);
    const proxy = new TcpProxy(fcUrl.hostname, Number(fcUrl.port || 3306));
    const proxyPort = await proxy.start();
    try {
      expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1'], {
        FCCTL_FC_DATABASE_URL: viaProxy(fcUrl.toString(), proxyPort),
      });
      await relay.waitForLine('paused', isState('paused'));
      const read = async () => {
        const body = await metrics(port);
        const of = (target: string) => ({
          connected: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="connected"`),
          closed: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="closed"`),
          lost: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="lost"`),
          reconnects: sample(body, 'fcctl_service_reconnects_total', `${LABEL},target="${target}"`),
        });
        return { broker: of('broker'), db: of('fc_database') };
      };
      expect(await read()).toEqual({
        broker: { connected: 0, closed: 1, lost: 0, reconnects: 0 },
        db: { connected: 1, closed: 0, lost: 0, reconnects: 0 },
      });
      // the database out during the pause: lost; back: connected, a reconnect, still paused
      proxy.refuse(true);
      proxy.cut();
      await waitFor('the database lost', async () => (await read()).db.lost === 1, 30_000, 100);
      proxy.refuse(false);
      await waitFor('the database back', async () => (await read()).db.lost === 0, 40_000, 100);
      expect(await read()).toEqual({
        broker: { connected: 0, closed: 1, lost: 0, reconnects: 0 },
        db: { connected: 1, closed: 0, lost: 0, reconnects: 1 },
      });
      expect(relay.lines().filter(isState('running'))).toEqual([]);
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);
});
