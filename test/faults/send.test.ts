import { spawn } from 'node:child_process';
import type mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../src/lib/dev/random.js';
import { type CliResult, FCCTL_BIN, jsonLines, runCli, spawnCli } from '../helpers/cli.js';
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
import {
  brokerMemoryAlarm,
  FAULT_SIZE,
  pick,
  recordTotals,
  replaceableConnection,
  restartService,
} from '../helpers/faults.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `deliveries send` under faults: kill -9 at random moments, a broker and a database restart, and
 * connections cut with confirms outstanding. Each faulted run ends with exit 3 and one line; after
 * recovery every row is BROKER_ACCEPTED (GRANT_REVOKED where its grant is revoked), every accepted
 * row's message is in the queue, no claim is left; duplicates are allowed (at-least-once) and counted.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
// Every random choice derives from this seed; a failure is replayed with FCCTL_FAULT_SEED=<seed>.
const SEED = Number(process.env['FCCTL_FAULT_SEED'] ?? Date.now() % 1_000_000);
const KILLS = pick(5, 20);
// Small batches and a small window: with a slowed proxy in the way, a run is still going seconds
// after its first accepts, as long as a restart takes to bite.
const PACED = ['--window', '8', '--batch-size', '25', '--pipeline', '1'];
const BROKER_LOST = /^fcctl: broker connection lost during the run/;
// The password stays masked in the line.
const DATABASE_LOST = /^fcctl: cannot connect to FC database at mysql:\/\/fcctl:\*\*\*@/;
// A short lease and backoff, so the recovery waits for them for real instead of rewriting rows.
const SHORT_LEASE = ['--lease-seconds', '5', '--confirm-timeout', '2', '--backoff-base', '1'];

let dbs: TestDatabases;
let admin: mysql.Connection;
let env: Record<string, string | undefined>;
// The running test's dataset, whose durable queue afterEach deletes even when the test failed.
let current: Dataset | undefined;

/** A connection for arranging and checking; a database restart drops it, so it is replaceable. */
const connectAdmin = () => replaceableConnection(dbs.fcName);

async function select<T>(sql: string, params: unknown[]): Promise<T[]> {
  const [rows] = await admin.query(sql, params);
  return rows as T[];
}

beforeAll(async () => {
  console.log(`send faults: size ${FAULT_SIZE}, seed ${SEED} (replay with FCCTL_FAULT_SEED=${SEED})`);
  dbs = await freshDatabases('fsend');
  // Only our own, replaceable connection is used from here on.
  await dbs.admin.end();
  admin = await connectAdmin();
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  expect((await runCli(['db', 'init', '--side', 'fc'], { env })).code).toBe(0);
  await insertRegistry(admin, dbs.fcName);
  await ensureExchange();
});
afterAll(async () => {
  await admin?.query(`DROP DATABASE IF EXISTS \`${dbs.fcName}\``);
  await admin?.query(`DROP DATABASE IF EXISTS \`${dbs.shName}\``);
  await admin?.end();
});
// `send` relays every due row of the database: a failed test's leftovers must not feed the next.
afterEach(async () => {
  await admin.query(
    `UPDATE answer_delivery SET state = 'DEAD', claim_owner = NULL WHERE state IN ('PENDING', 'FAILED')`,
  );
  await current?.queue.close();
  current = undefined;
});

type Queue = Awaited<ReturnType<typeof bindQueue>>;

/** One consumer's rows plus a slice whose grant is revoked, and what reached the queue so far. */
interface Dataset {
  key: string;
  revokedKey: string;
  ids: string[];
  revokedIds: string[];
  queue: Queue;
  /** messages seen per event id */
  seen: Map<string, number>;
  /** rows found BROKER_ACCEPTED at a checkpoint while their message was not in the queue */
  wronglyAccepted: Set<string>;
}

async function seedDataset(rows: number): Promise<Dataset> {
  const key = uniqueConsumerKey('fault');
  const revokedKey = uniqueConsumerKey('frev');
  await insertGrant(admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  await insertGrant(admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: revokedKey, revoked: 1 });
  // The durable queue keeps persistent messages through a broker restart.
  const queue = await bindQueue(key, { durable: true });
  const ids: string[] = [];
  const revokedIds: string[] = [];
  // Revoked rows interleaved with the others, so faults also land around their adjudication.
  for (let slice = 0; slice < 4; slice++) {
    ids.push(...(await insertDeliveries(admin, dbs.fcName, { consumerKey: key }, Math.round(rows / 4))));
    revokedIds.push(...(await insertDeliveries(admin, dbs.fcName, { consumerKey: revokedKey }, Math.ceil(rows / 400))));
  }
  current = { key, revokedKey, ids, revokedIds, queue, seen: new Map(), wronglyAccepted: new Set() };
  return current;
}

async function countRows(d: Dataset, condition: string): Promise<number> {
  const [row] = await select<{ n: string }>(
    `SELECT COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key IN (?, ?) AND ${condition}`,
    [d.key, d.revokedKey],
  );
  return Number(row!.n);
}
const acceptedCount = (d: Dataset) => countRows(d, "state = 'BROKER_ACCEPTED'");
const openCount = (d: Dataset) => countRows(d, "state IN ('PENDING', 'FAILED')");

/** A dead run's lease runs out (moved into the past rather than waited for). */
async function expireLeases(d: Dataset): Promise<void> {
  await admin.query(
    'UPDATE answer_delivery SET claim_expires_at = NOW() - INTERVAL 1 SECOND WHERE consumer_app_key IN (?, ?) AND claim_owner IS NOT NULL',
    [d.key, d.revokedKey],
  );
}

/** Drains what reached the queue since the last checkpoint and checks every accepted row against it. */
async function checkpoint(d: Dataset): Promise<void> {
  for (const m of await d.queue.drain()) {
    const id = String(m.properties.messageId);
    d.seen.set(id, (d.seen.get(id) ?? 0) + 1);
  }
  const accepted = await select<{ event_id: string }>(
    `SELECT event_id FROM answer_delivery WHERE consumer_app_key IN (?, ?) AND state = 'BROKER_ACCEPTED'`,
    [d.key, d.revokedKey],
  );
  for (const { event_id } of accepted) if (!d.seen.has(event_id)) d.wronglyAccepted.add(event_id);
}

/**
 * After recovery: every row in its final state without a claim, no row lost, none accepted
 * without its message, no message for anything else. Records the test's totals before asserting.
 */
async function checkRecovered(d: Dataset, test: string, faultsInjected: number, runs: number): Promise<void> {
  await checkpoint(d);
  const rows = await select<{ event_id: string; consumer_app_key: string; state: string; claim_owner: string | null }>(
    'SELECT event_id, consumer_app_key, state, claim_owner FROM answer_delivery WHERE consumer_app_key IN (?, ?)',
    [d.key, d.revokedKey],
  );
  const messages = [...d.seen.values()].reduce((a, b) => a + b, 0);
  const totals = {
    faultsInjected,
    runs,
    rowsChecked: rows.length,
    rowsLost: d.ids.filter((id) => !d.seen.has(id)).length,
    wronglyAccepted: d.wronglyAccepted.size,
    duplicates: messages - d.seen.size,
  };
  recordTotals(test, totals);
  console.log(`${test}: ${JSON.stringify(totals)}`);
  expect(rows).toHaveLength(d.ids.length + d.revokedIds.length);
  const finalState = (consumer: string) => (consumer === d.key ? 'BROKER_ACCEPTED' : 'GRANT_REVOKED');
  expect(rows.filter((r) => r.state !== finalState(r.consumer_app_key) || r.claim_owner !== null)).toEqual([]);
  expect(totals.rowsLost).toBe(0);
  expect(totals.wronglyAccepted).toBe(0);
  const ours = new Set(d.ids);
  expect([...d.seen.keys()].filter((id) => !ours.has(id))).toEqual([]);
}

/** A run that must end with exit 3 and one `fcctl: ` line, never a stack trace. */
function expectEnvironmentFailure(r: CliResult, message: RegExp): void {
  expect(r.code, r.stderr).toBe(3);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/^fcctl: /);
  expect(r.stderr).toMatch(message);
}

const sendRun = (args: string[], runEnv = env) =>
  spawnCli(['--json', 'deliveries', 'send', ...args], { env: runEnv, timeoutMs: 120_000 });
const summaryOf = (r: CliResult) => jsonLines(r.stdout).find((l) => l['type'] === 'summary');

/**
 * After one faulted run: nothing is rewritten by hand — a recovery run (straight to the services)
 * once the leases and the backoff have run out, then every check of {@link checkRecovered}.
 */
async function recoverAfterFault(d: Dataset, test: string): Promise<void> {
  await waitFor(
    'leases and backoff to run out',
    async () =>
      (await countRows(
        d,
        "state IN ('PENDING', 'FAILED') AND (claim_expires_at >= NOW() OR next_retry_at > NOW())",
      )) === 0,
    30_000,
    250,
  );
  const recovery = await sendRun([]);
  expect(recovery.stderr).toBe('');
  expect(recovery.code).toBe(0);
  await checkRecovered(d, test, 1, 2);
}

interface MidRunFault {
  test: string;
  rows: number;
  /** the faulted run's flags, beside SHORT_LEASE */
  flags: string[];
  /** the service the faulted run reaches through a proxy, and how long the proxy holds each chunk */
  via: 'broker' | 'database';
  delayMs: number;
  inject(d: Dataset, proxy: TcpProxy): Promise<void>;
  /** what the faulted run's one line must say */
  message: RegExp;
}

/**
 * Starts a run, injects the fault once the run has accepted its first rows, expects exit 3 with one
 * line, lets the dead run's leases and backoff run out, and checks a recovery run (straight to the
 * services). Returns the faulted run.
 */
async function faultMidRun(f: MidRunFault): Promise<CliResult> {
  const d = await seedDataset(f.rows);
  const target = f.via === 'broker' ? testAmqpUrl() : dbs.fcUrl;
  const { hostname, port } = new URL(target);
  const proxy = new TcpProxy(hostname, Number(port));
  const runEnv = {
    ...env,
    [f.via === 'broker' ? 'FCCTL_AMQP_URL' : 'FCCTL_FC_DATABASE_URL']: viaProxy(target, await proxy.start()),
  };
  proxy.delayMs = f.delayMs;
  const running = sendRun([...SHORT_LEASE, ...f.flags], runEnv);
  try {
    await waitFor('the run to accept its first rows', async () => (await acceptedCount(d)) >= 100, 60_000);
    await f.inject(d, proxy);
    const faulted = await running;
    console.log(
      `${f.test}: the faulted run accepted ${await acceptedCount(d)} rows and said ${JSON.stringify(faulted.stderr.trim())}`,
    );
    expectEnvironmentFailure(faulted, f.message);
    // The fault landed mid-run: rows were left to the recovery.
    expect(await acceptedCount(d)).toBeLessThan(d.ids.length);
    await checkpoint(d);
    await recoverAfterFault(d, f.test);
    return faulted;
  } finally {
    // A test failed before its fault must not leave the run relaying the next test's rows.
    await running;
    await proxy.stop();
  }
}

describe('deliveries send under faults', () => {
  it(`kill -9 at ${KILLS} random moments, then a run to completion: nothing lost, nothing accepted without its message`, async () => {
    const rng = new Rng(SEED, 'send-kill');
    const d = await seedDataset(pick(3000, 20000));
    // The lease outlives the test: only the explicit expiry below hands a dead run's rows on.
    const flags = ['--batch-size', '200', '--lease-seconds', '600', '--confirm-timeout', '2'];
    // A first guess, then measured from each run.
    let msPerRow = 0.5;
    let runs = 0;
    const moments: string[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      await expireLeases(d);
      const open = await openCount(d);
      const acceptedBefore = await acceptedCount(d);
      const child = spawn(process.execPath, [FCCTL_BIN, '--json', 'deliveries', 'send', ...flags], {
        env: env as NodeJS.ProcessEnv,
        stdio: 'ignore',
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on('close', (_code, signal) => resolve(signal)),
      );
      runs += 1;
      try {
        await waitFor(
          'the run to claim its first batch',
          async () =>
            (await select('SELECT 1 FROM answer_delivery WHERE claim_owner LIKE ? LIMIT 1', [`%:${child.pid}:%`]))
              .length > 0,
          60_000,
        );
        const workFrom = Date.now();
        // A random moment after the first claim, within about this run's share of the open rows;
        // on a machine faster than measured, the share itself ends the wait, still mid-run.
        // Capped so that rows stay open after the last kill: the adjudication writes a killed run
        // had already sent (up to --pipeline 2 batches of 200) still commit after its death.
        const share = Math.max(1, Math.min(Math.floor((1.5 * open) / (KILLS - kill + 1)), open - 2 * 2 * 200));
        const delay = rng.next() * share * msPerRow;
        await waitFor(
          'the kill moment',
          async () => Date.now() - workFrom >= delay || (await acceptedCount(d)) - acceptedBefore >= share,
          120_000,
          5,
        );
        child.kill('SIGKILL');
        expect(await exited, `run ${kill + 1} ended before its kill (seed ${SEED})`).toBe('SIGKILL');
        const workMs = Date.now() - workFrom;
        const acceptedInRun = (await acceptedCount(d)) - acceptedBefore;
        // Fewer than 100 rows in workMs still bounds the rate: the guess was too fast.
        msPerRow = acceptedInRun > 100 ? workMs / acceptedInRun : Math.max(msPerRow, workMs / 100);
        moments.push(`${workMs} ms/${acceptedInRun} rows`);
      } finally {
        // A failed wait must not leave a run relaying the next test's rows.
        child.kill('SIGKILL');
      }
      await checkpoint(d);
    }
    console.log(`kills after the first claim, seed ${SEED}: ${moments.join(', ')}`);
    expect(await acceptedCount(d)).toBeLessThan(d.ids.length);
    await expireLeases(d);
    const last = await sendRun([]);
    expect(last.stderr).toBe('');
    expect(last.code).toBe(0);
    await checkRecovered(d, 'deliveries send: kill -9 mid-run', KILLS, runs + 1);
  });

  it('broker restart mid-run: exit 3 with one line; once it is back a recovery run accepts everything', async () => {
    await faultMidRun({
      test: 'deliveries send: broker restart mid-run',
      rows: pick(3000, 20000),
      flags: PACED,
      // Slow database round trips pace the run, so it is still going when the broker goes down.
      via: 'database',
      delayMs: 10,
      inject: async (d) => {
        await restartService('rabbitmq');
        // The restart closed the reading connection; the durable queue kept the messages.
        d.queue = await bindQueue(d.key, { durable: true });
      },
      message: BROKER_LOST,
    });
  });

  it('database restart mid-run: exit 3 with one line; an accept write lost with it means a resend, never a loss', async () => {
    await faultMidRun({
      test: 'deliveries send: database restart mid-run',
      rows: pick(3000, 20000),
      flags: PACED,
      // Slow confirms pace the run, so it is still going when the database goes down.
      via: 'broker',
      delayMs: 20,
      inject: async () => {
        await restartService('mariadb', 1);
        admin.destroy();
        admin = await connectAdmin();
      },
      message: DATABASE_LOST,
    });
  });

  it('broker connection cut with confirms outstanding: those rows FAILED CHANNEL_CLOSED, then resent', async () => {
    const faulted = await faultMidRun({
      test: 'deliveries send: broker connection cut, confirms outstanding',
      rows: pick(3000, 20000),
      flags: [],
      // Every chunk held 100 ms each way: a whole window of messages waits for its confirms.
      via: 'broker',
      delayMs: 100,
      inject: async (_d, proxy) => {
        proxy.cut();
        proxy.refuse(true);
      },
      message: BROKER_LOST,
    });
    const failedByReason = summaryOf(faulted)?.['failedByReason'] as Record<string, number>;
    expect(failedByReason['CHANNEL_CLOSED']).toBeGreaterThan(0);
  });

  it('a broker memory alarm before the run: the return probe is not confirmed, exit 3 naming the alarm within seconds, nothing claimed', async () => {
    const d = await seedDataset(pick(200, 1000));
    await brokerMemoryAlarm(true);
    let blocked: CliResult;
    const started = Date.now();
    try {
      blocked = await sendRun([...SHORT_LEASE, '--batch-size', '100']);
    } finally {
      await brokerMemoryAlarm(false);
    }
    const seconds = (Date.now() - started) / 1000;
    expectEnvironmentFailure(
      blocked,
      /^fcctl: the broker is blocking publishes \(.*a resource alarm\); nothing was claimed or sent$/m,
    );
    expect(seconds).toBeLessThan(60);
    // Nothing claimed, nothing charged: every row of the dataset as it was seeded.
    const touched = await select<Record<string, unknown>>(
      `SELECT state, retry_count, claim_owner IS NOT NULL AS claimed, last_error, COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key IN (?, ?) AND (state <> 'PENDING' OR claim_owner IS NOT NULL OR retry_count > 0) GROUP BY 1, 2, 3, 4`,
      [d.key, d.revokedKey],
    );
    expect(touched, blocked.stdout + blocked.stderr).toEqual([]);
    await recoverAfterFault(d, 'deliveries send: broker memory alarm before the run');
  });

  it('a broker memory alarm mid-run (publishes blocked, nothing read): exit 3 with one line within seconds, no claim after it; a run after the alarm accepts everything', async () => {
    const d = await seedDataset(pick(3000, 10000));
    let blocked: CliResult;
    const started = Date.now();
    const run = sendRun([...SHORT_LEASE, ...PACED]);
    try {
      await waitFor('the run to accept its first rows', async () => (await acceptedCount(d)) > 0, 60_000);
      await brokerMemoryAlarm(true);
      blocked = await run;
    } finally {
      await brokerMemoryAlarm(false);
    }
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `deliveries send: memory alarm: the blocked run ended after ${seconds.toFixed(1)} s and said ${JSON.stringify(blocked.stderr.trim())}`,
    );
    expectEnvironmentFailure(blocked, /^fcctl: the broker is blocking publishes \(.*a resource alarm\)/);
    // It used to hang for good in the channel's close (cron then piles runs up).
    expect(seconds).toBeLessThan(90);
    const s = summaryOf(blocked)!;
    expect(s).toMatchObject({ stoppedBy: 'broker-blocked' });
    // Once blocked it claims no more: only what was claimed before the block was tried.
    expect(Number(s['claimed'])).toBeLessThan(d.ids.length + d.revokedIds.length);
    await recoverAfterFault(d, 'deliveries send: broker memory alarm mid-run');
  });

  // Issue 26 #8: the alarm's reason was read only once the run had ended; an alarm that cleared while
  // the batches in flight settled left a run it had stopped with exit 0 and no line.
  it('a broker memory alarm that clears before the run ends: the run it stopped still exits 3 naming the alarm', async () => {
    const d = await seedDataset(pick(3000, 10000));
    // Slow database round trips: the run spends its time claiming, and sees the alarm after a claim
    // while the batches published into it still wait (up to --confirm-timeout) for their confirms.
    const { hostname, port } = new URL(dbs.fcUrl);
    const proxy = new TcpProxy(hostname, Number(port));
    const runEnv = { ...env, FCCTL_FC_DATABASE_URL: viaProxy(dbs.fcUrl, await proxy.start()) };
    proxy.delayMs = 30;
    let ended = false;
    const run = sendRun(
      [
        '--lease-seconds',
        '40',
        '--confirm-timeout',
        '15',
        '--backoff-base',
        '1',
        '--batch-size',
        '25',
        '--pipeline',
        '8',
      ],
      runEnv,
    ).finally(() => (ended = true));
    let endedBeforeClear = true;
    try {
      await waitFor('the run to accept its first rows', async () => (await acceptedCount(d)) > 0, 60_000);
      await brokerMemoryAlarm(true);
      // long enough for the run to publish into the alarm and stop after its claim in progress
      await new Promise((resolve) => setTimeout(resolve, 3000));
    } finally {
      endedBeforeClear = ended;
      await brokerMemoryAlarm(false);
      await run;
      await proxy.stop();
    }
    const blocked = await run;
    const s = summaryOf(blocked)!;
    console.log(`deliveries send: short memory alarm: ${JSON.stringify(s)} ${JSON.stringify(blocked.stderr.trim())}`);
    // The case of the issue, or the test proves nothing: the run stopped for the alarm, and the alarm
    // cleared while it was still settling what it had in flight.
    expect(endedBeforeClear).toBe(false);
    expect(s).toMatchObject({ stoppedBy: 'broker-blocked' });
    expect(s['exitCode']).toBe(3);
    expectEnvironmentFailure(
      blocked,
      /^fcctl: the broker is blocking publishes \(.*a resource alarm\); stopped claiming/,
    );
    await recoverAfterFault(d, 'deliveries send: short broker memory alarm');
  });

  it('database connection cut mid-run: exit 3 with one line; claimed rows come back after their lease', async () => {
    await faultMidRun({
      test: 'deliveries send: database connection cut mid-run',
      rows: pick(3000, 20000),
      flags: [],
      via: 'database',
      delayMs: 0,
      inject: async (_d, proxy) => {
        proxy.cut();
        proxy.refuse(true);
      },
      message: DATABASE_LOST,
    });
  });
});
