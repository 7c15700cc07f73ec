import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterEach, describe, expect } from 'vitest';
import { main } from '../../src/main.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { testAmqpUrl, testMysqlUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { testIo } from '../helpers/io.js';
import { answerHash, insertAnswers, insertProjections, type TestAnswer, testUuid } from '../helpers/manifest.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

// Review of issue 19 §2/§3: a throttled run still ends at its deadline (`deliveries send
// --max-seconds`) and on a pause (the DB switch or --pause-file), read on every poll of the wait:
// a run throttled for ever (another connection in SELECT SLEEP, `Threads_running=1`) stops
// within about two seconds, exit 0, as the deadline and pause contracts say.
const test = servicesTest({ prefix: 'thrstop', init: 'all' });
const FORM = testUuid('thrstop', 'form');
const answers: TestAnswer[] = Array.from({ length: 200 }, (_, i) => ({
  answerUuid: testUuid('thrstop', 'a', i),
  formUuid: FORM,
}));
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let key: string;
const sleepers: Array<{ id: number; done: Promise<void> }> = [];

const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const throttled = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'throttled');
const touched = async () =>
  Number(
    (
      (
        await dbs.admin.query(
          `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE claim_owner IS NOT NULL OR state <> 'PENDING'`,
        )
      )[0] as Array<{ n: number }>
    )[0]!.n,
  );

/** Another client in SELECT SLEEP(seconds): Threads_running ≥ 2 meanwhile (ended in afterEach). */
async function busy(seconds: number): Promise<void> {
  const conn = await mysql.createConnection(testMysqlUrl());
  const [[{ id }]] = (await conn.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
  const done = conn
    .query(`SELECT SLEEP(${seconds})`)
    .then(
      () => undefined,
      () => undefined,
    )
    .then(() => conn.end());
  sleepers.push({ id, done });
  await waitFor(
    'the SLEEP to run',
    async () => {
      const [rows] = await dbs.admin.query(
        "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT SLEEP%'",
        [id],
      );
      return (rows as unknown[]).length > 0;
    },
    5000,
    10,
  );
}

/** Runs fcctl in this process; resolves once a throttle has started, with the run and its output. */
async function throttledRun(
  args: string[],
): Promise<{ running: Promise<number>; stdout: () => string; stderr: () => string }> {
  const t = testIo();
  const running = main(args, { io: t.io, env, now: () => new Date(), signal: new AbortController().signal });
  await waitFor('the throttle to start', async () => t.stdout().includes('"type":"throttled"'), 15_000, 10);
  return { running, stdout: t.stdout, stderr: t.stderr };
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  dir = tmp;
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  await insertAnswers(dbs.admin, dbs.fcName, answers);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    answers.map((a) => ({
      answerUuid: a.answerUuid,
      formUuid: FORM,
      revision: a.revision ?? 1,
      contentHash: answerHash(a),
    })),
  );
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
  key = uniqueConsumerKey('ts');
  await bindQueue(key);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, formUuid: FORM }, 50);
});
afterEach(async () => {
  for (const s of sleepers.splice(0)) {
    await dbs.admin.query(`KILL QUERY ${s.id}`).catch(() => undefined);
    await s.done;
  }
  await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.fcctl_pause`);
  await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.fcctl_pause`);
});

describe('deliveries send, throttled for ever', () => {
  test('--max-seconds ends the wait at the deadline: exit 0, stoppedBy max-seconds, nothing claimed', async () => {
    await busy(60);
    const started = Date.now();
    const r = await runCli(['--json', 'deliveries', 'send', '--max-seconds', '3', '--max-load', 'Threads_running=1'], {
      env,
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ exitCode: 0, claimed: 0, stoppedBy: 'max-seconds' });
    expect(Number(summaryOf(r.stdout)['throttledSeconds'])).toBeGreaterThan(1.5);
    expect(throttled(r.stdout).at(-1)).toMatchObject({ state: 'end', aborted: true, endedBy: 'deadline' });
    expect(await touched()).toBe(0);
  });

  test('a --pause-file created during the wait stops the run within 2 s: exit 0, stoppedBy paused, nothing claimed', async () => {
    await busy(60);
    const pauseFile = join(dir, 'send.pause');
    const run = await throttledRun([
      '--json',
      'deliveries',
      'send',
      '--max-load',
      'Threads_running=1',
      '--pause-file',
      pauseFile,
    ]);
    writeFileSync(pauseFile, 'broker maintenance\n');
    const pausedAt = Date.now();
    expect(await run.running).toBe(0);
    expect(Date.now() - pausedAt).toBeLessThan(2500);
    expect(summaryOf(run.stdout())).toMatchObject({
      exitCode: 0,
      claimed: 0,
      stoppedBy: 'paused',
      paused: { reason: 'broker maintenance' },
    });
    expect(throttled(run.stdout()).at(-1)).toMatchObject({ state: 'end', aborted: true, endedBy: 'paused' });
    expect(await touched()).toBe(0);
  });

  test('fcctl pause during the wait stops the run within 2 s (the DB switch)', async () => {
    await busy(60);
    const run = await throttledRun(['--json', 'deliveries', 'send', '--max-load', 'Threads_running=1']);
    const p = await runCli(['--json', 'pause', 'deliveries', 'send', '--reason', 'incident 7'], { env });
    expect(p.code).toBe(0);
    const pausedAt = Date.now();
    expect(await run.running).toBe(0);
    expect(Date.now() - pausedAt).toBeLessThan(2500);
    expect(summaryOf(run.stdout())).toMatchObject({
      exitCode: 0,
      claimed: 0,
      stoppedBy: 'paused',
      paused: { reason: 'incident 7' },
    });
    expect(await touched()).toBe(0);
  });

  test('Threads_running=0 (never met: the check counts itself) is exit 2 at once, nothing claimed', async () => {
    const r = await runCli(['--json', 'deliveries', 'send', '--max-seconds', '5', '--max-load', 'Threads_running=0'], {
      env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^fcctl: option '--max-load <VAR=N,…>' argument 'Threads_running=0' is invalid\. Threads_running=0 can never be met: Threads_running counts the check's own query; give 1 or more\n$/,
    );
    const counter = await runCli(['--json', 'deliveries', 'send', '--max-load', 'Uptime=100'], { env });
    expect(counter.code).toBe(2);
    expect(counter.stderr).toMatch(/Uptime only grows \(a counter since the server started\)/);
    expect(await touched()).toBe(0);
  });
});

describe('reconcile run, throttled for ever', () => {
  const args = (out: string, extra: string[] = []) => [
    '--json',
    'reconcile',
    'run',
    '--school',
    '5',
    '--form',
    FORM,
    '--out-dir',
    out,
    '--size',
    '100',
    '--max-load',
    'Threads_running=1',
    ...extra,
  ];

  test("a --pause-file created during the scan's wait stops the run within 2 s: exit 0, stoppedBy paused", async () => {
    await busy(60);
    const pauseFile = join(dir, 'reconcile.pause');
    const run = await throttledRun(args(join(dir, 'run-file'), ['--pause-file', pauseFile]));
    writeFileSync(pauseFile, 'SH failover\n');
    const pausedAt = Date.now();
    expect(await run.running).toBe(0);
    expect(Date.now() - pausedAt).toBeLessThan(2500);
    expect(summaryOf(run.stdout())).toMatchObject({ exitCode: 0, stoppedBy: 'paused' });
    expect(throttled(run.stdout()).at(-1)).toMatchObject({ state: 'end', aborted: true, endedBy: 'paused' });
    expect(existsSync(join(dir, 'run-file', 'report.csv'))).toBe(false);
  });

  test('fcctl pause reconcile run during the wait stops it within 2 s; after the resume a rerun completes', async () => {
    await busy(60);
    const out = join(dir, 'run-db');
    const run = await throttledRun(args(out));
    expect((await runCli(['--json', 'pause', 'reconcile', 'run', '--reason', 'SH failover'], { env })).code).toBe(0);
    const pausedAt = Date.now();
    expect(await run.running).toBe(0);
    expect(Date.now() - pausedAt).toBeLessThan(2500);
    expect(summaryOf(run.stdout())).toMatchObject({ exitCode: 0, stoppedBy: 'paused' });
    expect((await runCli(['--json', 'resume', 'reconcile', 'run'], { env })).code).toBe(0);
    for (const s of sleepers.splice(0)) {
      await dbs.admin.query(`KILL QUERY ${s.id}`);
      await s.done;
    }
    const rest = await runCli(
      ['--json', 'reconcile', 'run', '--school', '5', '--form', FORM, '--out-dir', out, '--size', '100'],
      { env },
    );
    expect(rest.code).toBe(0);
    expect(existsSync(join(out, 'report.csv'))).toBe(true);
  });
});
