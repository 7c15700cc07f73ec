import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { describe, expect } from 'vitest';
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

// Issue 19 §2: --max-load / --max-lag on manifest scan, reconcile run and deliveries send, against
// the real MariaDB. Threads_running counts the checking thread itself: `Threads_running=1` is over
// while any other query runs, forced here by a second connection held in SELECT SLEEP(n).
const test = servicesTest({ prefix: 'throttle', init: 'all' });
const FORM = testUuid('throttle', 'form');
const ROWS = 1200;
const answers: TestAnswer[] = Array.from({ length: 300 }, (_, i) => ({
  answerUuid: testUuid('throttle', 'a', i),
  formUuid: FORM,
  revision: 1 + (i % 2),
}));
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let reference: Buffer;

const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const throttled = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'throttled');
const scanArgs = (out: string, extra: string[] = []) => [
  '--json',
  'manifest',
  'scan',
  '--side',
  'sh',
  '--school',
  '5',
  '--form',
  FORM,
  '--out',
  out,
  '--size',
  '100',
  ...extra,
];

/** Another client busy for `seconds` (Threads_running ≥ 2 meanwhile); resolves when its SLEEP ends. */
async function busy(seconds: number): Promise<{ done: Promise<void>; id: number }> {
  const conn = await mysql.createConnection(testMysqlUrl());
  const [[{ id }]] = (await conn.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
  // ended early by KILL QUERY (ER_QUERY_INTERRUPTED): done all the same
  const done = conn
    .query(`SELECT SLEEP(${seconds})`)
    .then(
      () => undefined,
      () => undefined,
    )
    .then(() => conn.end());
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
  return { done, id };
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  dir = tmp;
  await insertProjections(
    dbs.admin,
    dbs.shName,
    Array.from({ length: ROWS }, (_, i) => ({ answerUuid: testUuid('throttle', i), formUuid: FORM })),
  );
  await insertAnswers(dbs.admin, dbs.fcName, answers);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    answers.slice(0, 250).map((a) => ({
      answerUuid: a.answerUuid,
      formUuid: FORM,
      revision: a.revision ?? 1,
      contentHash: answerHash(a),
    })),
  );
  const r = await runCli(scanArgs(join(dir, 'reference.jsonl')), { env });
  expect(r.code).toBe(0);
  reference = readFileSync(join(dir, 'reference.jsonl'));
});

describe('manifest scan --max-load', () => {
  test('a limit never reached changes nothing: same file, no throttled line, throttledSeconds 0', async () => {
    const r = await runCli(
      scanArgs(join(dir, 'never.jsonl'), ['--max-load', 'Threads_running=100000,Threads_connected=100000']),
      { env },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'never.jsonl')).equals(reference)).toBe(true);
    expect(throttled(r.stdout)).toEqual([]);
    expect(summaryOf(r.stdout)).toMatchObject({ completed: true, rows: ROWS + 250, throttledSeconds: 0 });
  });

  test('Threads_running=1 while another query runs: throttled (start and end lines, the reason), then the same file as unthrottled', async () => {
    const other = await busy(2);
    // bigger pages, fewer checks: the scan's own page queries (up to 3 at once) count as running too
    const r = await runCli(scanArgs(join(dir, 'busy.jsonl'), ['--max-load', 'Threads_running=1', '--size', '500']), {
      env,
    });
    await other.done;
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'busy.jsonl')).equals(reference)).toBe(true);
    const lines = throttled(r.stdout);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatchObject({ state: 'start', database: 'SH database' });
    expect(String(lines[0]!['reason'])).toMatch(/^Threads_running=\d+ > 1$/);
    expect(lines[1]).toMatchObject({ state: 'end', database: 'SH database', aborted: false });
    expect(Number(lines[1]!['seconds'])).toBeGreaterThan(0.5);
    expect(lines.map((l) => l['state'])).toEqual(lines.map((_, i) => (i % 2 === 0 ? 'start' : 'end')));
    const s = summaryOf(r.stdout);
    expect(s).toMatchObject({ completed: true, rows: ROWS + 250, stoppedBy: null });
    expect(Number(s['throttledSeconds'])).toBeGreaterThan(0.5);
  });

  test('the stop signal during a throttle ends the scan promptly (exit 1, stoppedBy signal), its checkpoint intact: a rerun completes the same file', async () => {
    const other = await busy(30);
    const out = join(dir, 'stopped.jsonl');
    const t = testIo();
    const ac = new AbortController();
    const running = main(scanArgs(out, ['--max-load', 'Threads_running=1']), {
      io: t.io,
      env,
      now: () => new Date(),
      signal: ac.signal,
    });
    await waitFor('the throttle to start', async () => t.stdout().includes('"type":"throttled"'), 10_000, 10);
    const stoppedAt = Date.now();
    ac.abort(new Error('stopped by SIGTERM'));
    expect(await running).toBe(1);
    expect(Date.now() - stoppedAt).toBeLessThan(1500);
    expect(summaryOf(t.stdout())).toMatchObject({ completed: false, stoppedBy: 'signal', exitCode: 1 });
    expect(throttled(t.stdout()).at(-1)).toMatchObject({ state: 'end', aborted: true });
    await dbs.admin.query(`KILL QUERY ${other.id}`);
    await other.done;
    const rest = await runCli(scanArgs(out), { env });
    expect(rest.code).toBe(0);
    expect(summaryOf(rest.stdout)).toMatchObject({ resumed: true, completed: true });
    expect(readFileSync(out).equals(reference)).toBe(true);
  });

  test('bad values exit 2 with one line and write nothing: a malformed --max-load, a status variable MariaDB does not have, one that is no number', async () => {
    for (const [value, message] of [
      [
        'Threads_running',
        /^fcctl: option '--max-load <VAR=N,…>' argument 'Threads_running' is invalid\. expected STATUS_VARIABLE=N/,
      ],
      [
        'Threads_running=',
        /argument 'Threads_running=' is invalid\. expected a whole number ≥ 0 after Threads_running=/,
      ],
      ['=5', /expected a status variable name before "="/],
      ['Threads_running=-1', /expected a whole number ≥ 0/],
      ['x=1.5', /expected a whole number ≥ 0 after x=, got "1\.5"/],
      [
        'No_such_status=5',
        /^fcctl: --max-load: SH database has no status variable No_such_status \(SHOW GLOBAL STATUS\)\n$/,
      ],
      ['Ssl_cipher=1', /^fcctl: --max-load: Ssl_cipher of SH database is not a number\n$/],
    ] as const) {
      const out = join(dir, 'bad.jsonl');
      const r = await runCli(scanArgs(out, ['--max-load', value]), { env });
      expect(r.code, value).toBe(2);
      expect(r.stderr, value).toMatch(message);
      expect(r.stderr.trimEnd().split('\n'), value).toHaveLength(1);
      expect(existsSync(out), value).toBe(false);
      expect(existsSync(join(dir, 'bad.checkpoint.json')), value).toBe(false);
    }
    const alone = await runCli(
      scanArgs(join(dir, 'bad.jsonl'), ['--replica-url', 'mysql://u:secret-pw@127.0.0.1:1/x']),
      { env },
    );
    expect(alone.code).toBe(2);
    expect(alone.stderr).toBe(
      'fcctl: --replica-url is read only by --max-lag: give --max-lag too, or leave --replica-url out\n',
    );
  });

  test('--max-lag on a database that is not a replica is refused at start (exit 3), nothing written; --replica-url is named without its password', async () => {
    const out = join(dir, 'lag.jsonl');
    const r = await runCli(scanArgs(out, ['--max-lag', '5']), { env });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      'fcctl: --max-lag: SH database is not a replica (SHOW REPLICA STATUS is empty); give --replica-url, or leave --max-lag out\n',
    );
    const password = new URL(testMysqlUrl()).password;
    const viaReplica = await runCli(
      scanArgs(out, ['--max-lag', '5', '--replica-url', `${testMysqlUrl()}/${dbs.fcName}`]),
      { env },
    );
    expect(viaReplica.code).toBe(3);
    expect(viaReplica.stderr).toMatch(
      new RegExp(`^fcctl: --max-lag: replica database 127\\.0\\.0\\.1:\\d+/${dbs.fcName} is not a replica`),
    );
    expect(viaReplica.stderr).not.toContain(password);
    // the setting from the environment, as the other URLs
    const viaEnv = await runCli(scanArgs(out, ['--max-lag', '5']), {
      env: { ...env, FCCTL_REPLICA_URL: `${testMysqlUrl()}/${dbs.fcName}` },
    });
    expect(viaEnv.code).toBe(3);
    expect(viaEnv.stderr).toMatch(/replica database .* is not a replica/);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('lag'))).toEqual([]);
  });
});

describe('reconcile run --max-load: each scan on its own database', () => {
  test('throttled while another query runs, the same counts and report as unthrottled; bad values exit 2 before the run directory exists', async () => {
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
      ...extra,
    ];
    const plain = await runCli(args(join(dir, 'run-plain')), { env });
    expect(plain.code).toBe(0);
    const other = await busy(3);
    const r = await runCli(args(join(dir, 'run-busy'), ['--max-load', 'Threads_running=1', '--size', '500']), { env });
    await other.done;
    expect(r.code).toBe(0);
    const lines = throttled(r.stdout);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines.every((l) => ['FC database', 'SH database'].includes(String(l['database'])))).toBe(true);
    expect(Number(summaryOf(r.stdout)['throttledSeconds'])).toBeGreaterThan(0);
    expect(summaryOf(plain.stdout)['throttledSeconds']).toBe(0);
    expect(summaryOf(r.stdout)['counts']).toEqual(summaryOf(plain.stdout)['counts']);
    expect(readFileSync(join(dir, 'run-busy', 'report.csv'), 'utf8')).toBe(
      readFileSync(join(dir, 'run-plain', 'report.csv'), 'utf8'),
    );
    const bad = await runCli(args(join(dir, 'run-bad'), ['--max-load', 'No_such_status=1']), { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'fcctl: --max-load: FC database has no status variable No_such_status (SHOW GLOBAL STATUS)\n',
    );
    expect(existsSync(join(dir, 'run-bad'))).toBe(false);
    const lag = await runCli(args(join(dir, 'run-bad'), ['--max-lag', '1']), { env });
    expect(lag.code).toBe(3);
    expect(existsSync(join(dir, 'run-bad'))).toBe(false);
  });
});

describe('deliveries send --max-load: before each claim, on the FC database', () => {
  test('throttled while another query runs, every row still accepted; a bad variable exits 2 with nothing claimed', async () => {
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const key = uniqueConsumerKey('thr');
    await bindQueue(key);
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, formUuid: FORM }, 300);
    const claimed = async () =>
      Number(
        (
          (
            await dbs.admin.query(
              `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE claim_owner IS NOT NULL OR state <> 'PENDING'`,
            )
          )[0] as Array<{ n: number }>
        )[0]!.n,
      );
    const bad = await runCli(['--json', 'deliveries', 'send', '--max-load', 'No_such_status=1'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'fcctl: --max-load: FC database has no status variable No_such_status (SHOW GLOBAL STATUS)\n',
    );
    expect(await claimed()).toBe(0);
    const lag = await runCli(['--json', 'deliveries', 'send', '--max-lag', '1'], { env });
    expect(lag.code).toBe(3);
    expect(await claimed()).toBe(0);
    const other = await busy(2);
    const r = await runCli(['--json', 'deliveries', 'send', '--batch-size', '100', '--max-load', 'Threads_running=1'], {
      env,
    });
    await other.done;
    expect(r.code).toBe(0);
    const lines = throttled(r.stdout);
    expect(lines[0]).toMatchObject({ state: 'start', database: 'FC database' });
    expect(lines[1]).toMatchObject({ state: 'end', aborted: false });
    const s = summaryOf(r.stdout);
    expect(s).toMatchObject({ claimed: 300, accepted: 300, stoppedBy: 'drained' });
    expect(Number(s['throttledSeconds'])).toBeGreaterThan(0.5);
  });

  // Issue 26 #4: the claim time was taken before the throttle wait, so a wait longer than the lease
  // left a batch's publish deadline in the past at its claim: released NOT_SENT, never published.
  test('a throttle wait longer than the lease: the batch claimed after it is published in full, none released NOT_SENT', async () => {
    await insertRegistry(dbs.admin, dbs.fcName);
    await ensureExchange();
    const key = uniqueConsumerKey('thrl');
    const queue = await bindQueue(key);
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, formUuid: FORM }, 300);
    const other = await busy(6);
    const r = await runCli(
      [
        '--json',
        'deliveries',
        'send',
        '--max-load',
        'Threads_running=1',
        '--lease-seconds',
        '5',
        '--confirm-timeout',
        '2',
        '--batch-size',
        '100',
        '--max-rows',
        '300',
      ],
      { env },
    );
    await other.done;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s = summaryOf(r.stdout);
    // the wait really outlasted the lease (5 s), or the test proves nothing
    expect(Number(s['throttledSeconds'])).toBeGreaterThan(5);
    expect(s).toMatchObject({ claimed: 300, published: 300, accepted: 300, skipped: 0, released: 0 });
    expect(jsonLines(r.stdout).filter((l) => l['type'] === 'row' && l['reason'] === 'NOT_SENT')).toEqual([]);
    expect(await queue.drain()).toHaveLength(300);
    await queue.close();
  });
});
