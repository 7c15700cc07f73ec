/**
 * What a follow relay's `/metrics` says, against what is true (issue 36 §1–§5), on real `bin/fcctl`
 * processes, the real outbox and broker: the claim-to-confirm p99 (computed from the buckets as
 * Prometheus's histogram_quantile does) against a consumer's own measurement at 200 rows/s; the
 * oldest due age after a 45-day-old row is replayed and when held rows come up for their recheck;
 * rows going DEAD counted `dead` (service and batch file); the connection state set through a
 * pause and a database-only outage; the output lint-clean with only the relay's families.
 */
import amqp from 'amqplib';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
const test = servicesTest({ prefix: 'fmetrics', init: 'fc' });
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

const follow = (args: string[] = [], extraEnv: Record<string, string | undefined> = {}) => {
  const s = startService(['--json', 'deliveries', 'send', '--follow', ...args], { env: { ...env, ...extraEnv } });
  running.push(s);
  return s;
};
const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The value of one sample in a /metrics body (NaN when absent). */
const sample = (body: string, name: string, labels = '') =>
  Number(new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(body)?.[1] ?? Number.NaN);
async function consumer(push = 1) {
  const key = uniqueConsumerKey('fm');
  const q = await bindQueue(key);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key, push });
  return { key, q };
}

/** Rows of a consumer with a hold's recheck time. */
async function heldCount(key: string): Promise<number> {
  const [rows] = await dbs.admin.query(
    `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND next_retry_at IS NOT NULL`,
    [key],
  );
  return Number((rows as Array<{ n: number }>)[0]!.n);
}

/** A histogram's cumulative buckets (le → count), from a /metrics body. */
function buckets(body: string, name: string): Array<{ le: number; n: number }> {
  const out: Array<{ le: number; n: number }> = [];
  for (const m of body.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm')))
    out.push({ le: m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1]), n: Number(m[2]) });
  return out.sort((a, b) => a.le - b.le);
}

/** Prometheus's histogram_quantile: linear within the bucket the rank falls in (0 as the first bucket's lower bound). */
function histogramQuantile(q: number, b: ReadonlyArray<{ le: number; n: number }>): number {
  const total = b[b.length - 1]!.n;
  const rank = q * total;
  for (let i = 0; i < b.length; i++) {
    if (b[i]!.n < rank) continue;
    if (b[i]!.le === Number.POSITIVE_INFINITY) return b[i - 1]!.le;
    const lower = i === 0 ? 0 : b[i - 1]!.le;
    const below = i === 0 ? 0 : b[i - 1]!.n;
    return lower + ((b[i]!.le - lower) * (rank - below)) / (b[i]!.n - below);
  }
  return Number.NaN;
}

/** The nearest-rank quantile of measured values. */
const quantile = (q: number, values: readonly number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

describe('deliveries send --follow: /metrics says what is true (issue 36)', () => {
  test('claim-to-confirm at 200 rows/s: the /metrics p99 within 50 ms of a consumer measuring each message from its claim; seeded and retried rows not in +Inf', async () => {
    const { key, q } = await consumer();
    // seeded: 45-day-old rows on their first try, and rows retried before (FAILED, due)
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 20);
    await insertDeliveries(
      dbs.admin,
      dbs.fcName,
      { consumerKey: key, schoolId: 5, state: 'FAILED', retryCount: 2 },
      20,
    );
    // the claim as the test sees it: a trigger of this test's own database notes when each row's
    // lease is written (inside the claim's transaction; its commit follows within milliseconds)
    const fc = `\`${dbs.fcName}\``;
    await dbs.admin.query(`CREATE TABLE ${fc}.claim_seen (event_id CHAR(36) PRIMARY KEY, at DECIMAL(20,6) NOT NULL)`);
    await dbs.admin.query(
      `CREATE TRIGGER ${fc}.claim_seen_t BEFORE UPDATE ON ${fc}.answer_delivery FOR EACH ROW ` +
        'IF NEW.claim_owner IS NOT NULL AND NOT (OLD.claim_owner <=> NEW.claim_owner) THEN ' +
        `INSERT IGNORE INTO ${fc}.claim_seen VALUES (NEW.event_id, UNIX_TIMESTAMP(NOW(6))); END IF`,
    );
    const conn = await amqp.connect(testAmqpUrl());
    const received = new Map<string, number>();
    try {
      const ch = await conn.createChannel();
      await ch.consume(q.queue, (m) => m && received.set(String(m.properties.messageId), Date.now()), { noAck: true });
      const port = await freePort();
      // the smallest poll interval: insert→claim (not in the metric, see its HELP) is at most about one of them
      const relay = follow(['--listen', `:${port}`, '--poll-interval', '0.05']);
      await relay.waitForLine('running', isState('running'));
      await waitFor('the seeded rows delivered', async () => received.size === 40, 20_000, 50);
      // the producer: 10 rows every 50 ms for 10 s, each id with the time its insert committed
      const committed = new Map<string, number>();
      const t0 = Date.now();
      for (let i = 0; i < 200; i++) {
        const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 10);
        const at = Date.now();
        for (const id of ids) committed.set(id, at);
        const next = t0 + (i + 1) * 50;
        if (next > Date.now()) await sleep(next - Date.now());
      }
      await waitFor('all 2,040 received', async () => received.size === 2040, 60_000, 100);
      const rate = 2000 / ((Date.now() - t0) / 1000);
      const [seen] = await dbs.admin.query(`SELECT event_id, CAST(at AS CHAR) AS at FROM ${fc}.claim_seen`);
      const claimedAt = new Map(
        (seen as Array<{ event_id: string; at: string }>).map((r) => [r.event_id, Number(r.at) * 1000]),
      );
      const fresh = [...committed.keys()];
      const claimToReceipt = fresh.map((id) => received.get(id)! - claimedAt.get(id)!);
      const commitToReceipt = fresh.map((id) => received.get(id)! - committed.get(id)!);
      const commitToClaim = fresh.map((id) => claimedAt.get(id)! - committed.get(id)!);
      const body = (await httpGet(port, '/metrics')).body;
      const exact = buckets(body, 'fcctl_relay_claim_to_confirm_seconds');
      const metricP99 = histogramQuantile(0.99, exact) * 1000;
      const measuredP99 = quantile(0.99, claimToReceipt);
      const ms = (v: number) => Math.round(v);
      console.log(
        `claim-to-confirm figures: ${JSON.stringify({
          rowsPerSecond: ms(rate),
          metricP50: ms(histogramQuantile(0.5, exact) * 1000),
          metricP99: ms(metricP99),
          claimToReceiptP50: ms(quantile(0.5, claimToReceipt)),
          claimToReceiptP99: ms(measuredP99),
          commitToReceiptP50: ms(quantile(0.5, commitToReceipt)),
          commitToReceiptP99: ms(quantile(0.99, commitToReceipt)),
          commitToClaimP99: ms(quantile(0.99, commitToClaim)),
        })}`,
      );
      expect(rate).toBeGreaterThan(150);
      expect(claimedAt.size).toBeGreaterThanOrEqual(2040);
      expect(Math.abs(metricP99 - measuredP99)).toBeLessThanOrEqual(50);
      // every attempt counted, the 45-day-old and the retried ones too, none of them in +Inf
      const total = exact[exact.length - 1]!.n;
      expect(total).toBe(2040);
      expect(exact.find((b) => b.le === 30)!.n).toBe(total);
      // the whole-second age: first attempts only (not the 20 retried); these rows' create_time is 45 days old: +Inf
      const whole = buckets(body, 'fcctl_relay_created_to_confirm_whole_seconds');
      expect(whole[whole.length - 1]!.n).toBe(2020);
      expect(whole.find((b) => b.le === 3600)!.n).toBe(0);
      expect(body).not.toContain('fcctl_relay_commit_to_confirm_seconds');
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await dbs.admin.query(`DROP TRIGGER IF EXISTS ${fc}.claim_seen_t`);
      await dbs.admin.query(`DROP TABLE IF EXISTS ${fc}.claim_seen`);
      await conn.close().catch(() => undefined);
      await q.close();
    }
  }, 150_000);

  test('oldest due counts from when a row became due: held rows up for their recheck, and a 45-day-old row replayed, read seconds in /metrics and status, not 45 days', async () => {
    // held: push not allowed; each recheck (2 s) brings them back due, and the relay holds them again
    const held = await consumer(0);
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: held.key, schoolId: 5 }, 5);
    const port = await freePort();
    const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1', '--hold-recheck', '2']);
    await relay.waitForLine('running', isState('running'));
    const oldest = async () => sample((await httpGet(port, '/metrics')).body, 'fcctl_relay_oldest_due_age_seconds');
    // held once (never delivered for 45 days: due that long until then), then up for a recheck every 2 s
    await waitFor('held', async () => (await heldCount(held.key)) === 5);
    await sleep(1500); // a beat after the hold
    const seen: number[] = [];
    for (let i = 0; i < 12; i++) {
      await sleep(500);
      seen.push(await oldest());
    }
    expect(Math.max(...seen)).toBeLessThan(10);
    // paused, the held rows come up for their recheck and stay due: due since the recheck time
    expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
    await relay.waitForLine('paused', isState('paused'));
    await sleep(4000); // past the 2 s recheck, and a beat after
    const [due] = await dbs.admin.query(
      `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND next_retry_at <= NOW() AND claim_owner IS NULL`,
      [held.key],
    );
    expect(Number((due as Array<{ n: number }>)[0]!.n)).toBe(5);
    // up for their recheck, but not due to be sent (push not allowed): not counted, as `status` counts them
    expect(await oldest()).toBe(0);
    expect(sample((await httpGet(port, '/metrics')).body, 'fcctl_relay_due_rows')).toBe(0);
    // a 45-day-old DEAD row replayed while the relay is paused: due since the replay
    const { key, q } = await consumer();
    try {
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5, state: 'DEAD', retryCount: 9 }, 1);
      const replay = await runCli(
        [
          '--json',
          'deliveries',
          'replay',
          '--consumer',
          key,
          '--school',
          '5',
          '--failed',
          '--state',
          'DEAD',
          '--operation-prefix',
          'inc36',
          '--execute',
        ],
        { env },
      );
      expect(replay.code).toBe(0);
      await sleep(2500); // two beats: the gauge read again with the replayed row due
      const gauge = await oldest();
      const status = await runCli(['--json', 'status'], { env });
      const outbox = (
        JSON.parse(status.stdout.trim().split('\n').pop()!) as Record<
          string,
          { oldestDueAgeSeconds: number; due: number }
        >
      )['outbox']!;
      expect(outbox.due).toBeGreaterThanOrEqual(1);
      expect(gauge).toBeLessThan(30);
      expect(outbox.oldestDueAgeSeconds).toBeLessThan(30);
    } finally {
      await q.close();
      await held.q.close();
    }
  }, 90_000);

  test('rows going DEAD are result="dead" (with their reason), FAILED ones "retry", in /metrics and in the batch file alike', async () => {
    const { key, q } = await consumer();
    try {
      // a content hash that does not match the snapshot: a failure charged to the row
      const bad = { consumerKey: key, schoolId: 5, contentHash: 'f'.repeat(64) };
      await insertDeliveries(dbs.admin, dbs.fcName, { ...bad, retryCount: 2 }, 3); // its last try: DEAD
      await insertDeliveries(dbs.admin, dbs.fcName, bad, 2); // a first try: FAILED
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 4);
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--max-retries', '3']);
      await relay.waitForLine('running', isState('running'));
      let body = '';
      await waitFor(
        'nine rows counted',
        async () => {
          body = (await httpGet(port, '/metrics')).body;
          return /^fcctl_relay_rows_total\{result="done",reason=""\} 4$/m.test(body);
        },
        20_000,
        100,
      );
      await waitFor('the failures counted', async () => {
        body = (await httpGet(port, '/metrics')).body;
        return /result="retry"/.test(body) && /result="dead"/.test(body);
      });
      const reason = /^fcctl_relay_rows_total\{result="dead",reason="([A-Z_]+)"\} 3$/m.exec(body)?.[1];
      expect(reason).toBeDefined();
      expect(body).toMatch(new RegExp(`^fcctl_relay_rows_total\\{result="retry",reason="${reason}"\\} 2$`, 'm'));
      expect(body).not.toMatch(/result="failed"/);
      expect((await relay.stop()).code).toBe(0);
      // the batch run's file: the same vocabulary
      await insertDeliveries(dbs.admin, dbs.fcName, { ...bad, retryCount: 2 }, 1);
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 }, 1);
      const file = join(mkdtempSync(join(tmpdir(), 'fcctl-m36-')), 'fcctl_send.prom');
      const batch = await runCli(['--json', 'deliveries', 'send', '--max-retries', '3', '--metrics-file', file], {
        env,
      });
      expect(batch.code).toBe(1);
      const prom = readFileSync(file, 'utf8');
      const sent = 'command="deliveries send"';
      expect(prom).toContain(`fcctl_rows_total{${sent},result="dead",metrics_file="fcctl_send.prom"} 1\n`);
      expect(prom).toContain(`fcctl_rows_total{${sent},result="done",metrics_file="fcctl_send.prom"} 1\n`);
      expect(prom).not.toMatch(/result="(accepted|failed|skipped)"/);
    } finally {
      await q.close();
    }
  }, 90_000);

  test('connection state: a pause closes the broker (not lost), a database-only outage is the database lost, reconnects count only recoveries from a loss', async () => {
    const fcUrl = new URL(env['FCCTL_FC_DATABASE_URL']!);
    const proxy = new TcpProxy(fcUrl.hostname, Number(fcUrl.port || 3306));
    const proxyPort = await proxy.start();
    try {
      const port = await freePort();
      const relay = follow(['--listen', `:${port}`, '--heartbeat-seconds', '1'], {
        FCCTL_FC_DATABASE_URL: viaProxy(fcUrl.toString(), proxyPort),
      });
      await relay.waitForLine('running', isState('running'));
      const read = async () => {
        const body = (await httpGet(port, '/metrics')).body;
        const of = (target: string) => ({
          connected: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="connected"`),
          closed: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="closed"`),
          lost: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="lost"`),
          up: sample(body, 'fcctl_service_connection_up', `${LABEL},target="${target}"`),
          reconnects: sample(body, 'fcctl_service_reconnects_total', `${LABEL},target="${target}"`),
        });
        return { broker: of('broker'), db: of('fc_database') };
      };
      const connected = { connected: 1, closed: 0, lost: 0, up: 1, reconnects: 0 };
      expect(await read()).toEqual({ broker: connected, db: connected });
      // paused: the broker closed by the relay, not lost
      expect((await runCli(['pause', 'deliveries send', '--reason', 'test'], { env })).code).toBe(0);
      await relay.waitForLine('paused', isState('paused'));
      expect((await read()).broker).toEqual({ connected: 0, closed: 1, lost: 0, up: 0, reconnects: 0 });
      expect((await runCli(['resume', 'deliveries send'], { env })).code).toBe(0);
      await waitFor('running again', async () => (await read()).broker.connected === 1, 20_000, 100);
      expect(await read()).toEqual({ broker: connected, db: connected });
      // the database alone out: lost; the broker closed by the relay meanwhile (or still connected), never lost
      proxy.refuse(true);
      proxy.cut();
      await waitFor('the database lost', async () => (await read()).db.lost === 1, 30_000, 100);
      const out = await read();
      expect(out.db).toMatchObject({ connected: 0, closed: 0, lost: 1, up: 0, reconnects: 0 });
      expect(out.broker.lost).toBe(0);
      expect(out.broker.closed + out.broker.connected).toBe(1);
      proxy.refuse(false);
      await waitFor('connected again', async () => (await read()).db.connected === 1, 40_000, 100);
      expect(await read()).toEqual({ broker: connected, db: { ...connected, reconnects: 1 } });
      expect((await relay.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test('/metrics passes promtool check metrics, with fcctl_build_info and only the relay families', async () => {
    const port = await freePort();
    const relay = follow(['--listen', `:${port}`]);
    await relay.waitForLine('running', isState('running'));
    const body = (await httpGet(port, '/metrics')).body;
    const lint = promtool(['check', 'metrics'], body);
    expect({ code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ code: 0, out: '' });
    expect(body).toMatch(
      new RegExp(`^fcctl_build_info\\{${LABEL},version="[^"]+",node_version="${process.version}"\\} 1$`, 'm'),
    );
    const families = [...body.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!);
    expect(families.filter((f) => f.startsWith('fcctl_resolver_'))).toEqual([]);
    expect(families).toEqual(
      expect.arrayContaining([
        'fcctl_relay_rows_total',
        'fcctl_relay_claim_to_confirm_seconds',
        'fcctl_relay_oldest_due_age_seconds',
        'fcctl_service_connection_state',
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'process_start_time_seconds',
        'process_open_fds',
        'nodejs_eventloop_lag_seconds',
      ]),
    );
    expect((await relay.stop()).code).toBe(0);
  }, 60_000);
});
