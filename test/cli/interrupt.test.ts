import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { APP, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { type CliResult, jsonLines, runCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import { bindQueue, ensureExchange, uniqueConsumerKey } from '../helpers/deliveries.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import type { ManifestRow } from '../../src/lib/manifest/row.js';
import { insertProjections, testUuid, writeManifestFiles } from '../helpers/manifest.js';
import { lockTable, startCli } from '../helpers/table-lock.js';
import { waitFor } from '../helpers/wait.js';
import { servicesTest } from '../helpers/services.js';
import { readProm } from '../helpers/textfile.js';

const test = servicesTest({ prefix: 'interrupt', flowApps: { [APP.key]: APP.secret } });

// Issue 17, item 13: an interrupt gives the same exit code in every batch command — 1, "not all
// done" (SPEC §2) — and the summary says `stoppedBy: "signal"`. Each command runs as a real
// process; a table lock holds it at a query it surely makes, it gets SIGINT or SIGTERM there,
// then the lock goes and it stops at its next stop check.
const KEY = uniqueConsumerKey('sig');
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let flow: FlowCenter;
let dir: string;
let form: string;
let queue: Awaited<ReturnType<typeof bindQueue>>;
const R = () => ({
  plan: join(dir, 'run', 'repair-plan.jsonl'),
  candidates: join(dir, 'run', 'retire-candidates.jsonl'),
  fcManifest: join(dir, 'run', 'fc-manifest.jsonl'),
  proof: join(dir, 'proof.json'),
});

const summariesOf = (r: CliResult) => jsonLines(r.stdout).filter((l) => l['type'] === 'summary');

/**
 * Runs `argv` as a real process held at its first query on `database`.`table`, sends it `signal`
 * there, lets it go on, and returns what it printed.
 */
async function interrupted(
  argv: readonly string[],
  database: string,
  table: string,
  signal: NodeJS.Signals,
): Promise<CliResult> {
  const lock = await lockTable(database, table);
  try {
    const run = startCli(['--json', ...argv], { env });
    await lock.waitForBlocked();
    run.child.kill(signal);
    // the handler runs at once (the process only waits on its socket); the margin is for slow machines
    await new Promise((r) => setTimeout(r, 300));
    await lock.unlock();
    return await run.done;
  } finally {
    await lock.unlock();
  }
}

/** The contract: exit 1, one summary saying exit 1 and stoppedBy "signal", no error line. */
function expectStoppedBySignal(r: CliResult, command: string): Record<string, unknown> {
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 1, stderr: '' });
  const summaries = summariesOf(r);
  expect(summaries).toHaveLength(1);
  expect(summaries[0]).toMatchObject({ command, exitCode: 1, stoppedBy: 'signal' });
  return summaries[0]!;
}

/** A metrics file as a completed run left it (last success at 1000); `more`: labels after command (reconcile run's pair). */
function previousMetrics(command: string, more = ''): string {
  const path = join(dir, `${command.replace(/ /g, '-')}.prom`);
  writeFileSync(path, `fcctl_last_success_timestamp_seconds{command="${command}"${more}} 1000\n`);
  return path;
}

/** An interrupted run is exit 1 in its gauges too, but not a success: the last-success time stays. */
function expectInterruptedMetrics(path: string, command: string, more = ''): void {
  const prom = readProm(path);
  expect(prom).toContain(`fcctl_run_exit_code{command="${command}"${more}} 1\n`);
  expect(prom).toContain(`fcctl_last_success_timestamp_seconds{command="${command}"${more}} 1000\n`);
}

test.beforeAll(async ({ dbs: services, flowCenter, tmp }) => {
  dbs = services;
  flow = flowCenter;
  dir = tmp;
  env = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: APP.key,
    FCCTL_APP_CODE: 'demo-publisher',
    FCCTL_FLOW_URL: flow.url,
    FCCTL_APP_SECRET: APP.secret,
  });
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  // FC answers, grants and PENDING outbox rows of one consumer, and an SH projection with drift.
  const seed = await runCli(['--json', 'dev', 'seed', '--answers', '120', '--consumer-keys', KEY, '--no-grant-mix'], {
    env,
  });
  expect(seed.stderr).toBe('');
  expect(seed.code).toBe(0);
  await ensureExchange();
  queue = await bindQueue(KEY);
  const [forms] = await dbs.admin.query(
    `SELECT form_uuid, COUNT(*) AS n FROM \`${dbs.fcName}\`.answer WHERE sch_id = 5 GROUP BY form_uuid ORDER BY n DESC LIMIT 1`,
  );
  form = (forms as Array<{ form_uuid: string }>)[0]!.form_uuid;
  // Local rows FC never had, created long ago: retire candidates of this school and form; more
  // than `prove` checks at FC in one query (500), so it meets its stop check after the first.
  await insertProjections(
    dbs.admin,
    dbs.shName,
    Array.from({ length: 600 }, (_, i) => ({ answerUuid: testUuid('interrupt', 'absent', i), formUuid: form })),
  );
  // The inputs of the incident commands, made by the real thing: a repair plan, retire candidates, a proof.
  const run = await runCli(
    ['--json', 'reconcile', 'run', '--school', '5', '--form', form, '--out-dir', join(dir, 'run')],
    { env },
  );
  expect(run.code).toBe(0);
  expect(readFileSync(R().plan, 'utf8').split('\n').filter(Boolean).length).toBeGreaterThan(1);
  expect(readFileSync(R().candidates, 'utf8').split('\n').filter(Boolean).length).toBeGreaterThan(0);
  const prove = await runCli(
    [
      '--json',
      'retire-absent',
      'prove',
      '--candidates',
      R().candidates,
      '--fc-manifest',
      R().fcManifest,
      '--out',
      R().proof,
    ],
    { env },
  );
  expect(prove.code).toBe(0);
}, 120_000);
afterAll(async () => {
  await queue?.close();
});

describe('a command that does not watch the signal ends at once on the first one, exit 1 (real processes)', () => {
  /** Holds `argv` at a table lock, sends SIGTERM, and returns what it did within 5 s with the lock still held (null: still running). */
  async function termWhileLocked(argv: readonly string[], database: string, table: string): Promise<CliResult | null> {
    const lock = await lockTable(database, table);
    try {
      const run = startCli(['--json', ...argv], { env });
      await lock.waitForBlocked();
      run.child.kill('SIGTERM');
      const r = await Promise.race([run.done, new Promise<null>((res) => setTimeout(() => res(null), 5000))]);
      if (r === null) run.child.kill('SIGKILL');
      return r;
    } finally {
      await lock.unlock();
    }
  }

  test('apply-command scan --metrics-file blocked on a lock: was blocked until the lock cleared, then exit 0 with metrics 0', async () => {
    const metrics = join(dir, 'apply-command-scan.prom');
    writeFileSync(metrics, 'fcctl_run_exit_code{command="apply-command scan"} 7\n');
    const r = await termWhileLocked(
      ['apply-command', 'scan', '--metrics-file', metrics],
      dbs.shName,
      'flow_apply_command',
    );
    expect(r).not.toBeNull();
    expect(r!.code).toBe(1);
    // ended at once: no gauges written that would claim the run went through
    expect(readFileSync(metrics, 'utf8')).toBe('fcctl_run_exit_code{command="apply-command scan"} 7\n');
  });

  test('deliveries scan blocked on a lock: exit 1 at once', async () => {
    const r = await termWhileLocked(['deliveries', 'scan'], dbs.fcName, 'answer_delivery');
    expect(r).not.toBeNull();
    expect(r!.code).toBe(1);
  });
});

describe('an interrupted batch command exits 1 with stoppedBy "signal" (real processes)', () => {
  test('deliveries send (SIGTERM): was exit 0; the metrics say 1 and keep the last success', async () => {
    const metrics = previousMetrics('deliveries send');
    const r = await interrupted(
      ['deliveries', 'send', '--batch-size', '10', '--pipeline', '1', '--metrics-file', metrics],
      dbs.fcName,
      'answer_delivery',
      'SIGTERM',
    );
    const s = expectStoppedBySignal(r, 'deliveries send');
    expect(s).toMatchObject({ failed: 0, dead: 0 });
    expect(Number(s['claimed'])).toBeLessThan(120);
    expectInterruptedMetrics(metrics, 'deliveries send');
  });

  test('apply-command resolve-unknown (SIGINT): was exit 0', async () => {
    await insertCommands(
      dbs.admin,
      dbs.shName,
      Array.from({ length: 30 }, (_, i) => ({ bizId: `${uniquePrefix('sig')}-${i}` })),
    );
    const r = await interrupted(
      ['apply-command', 'resolve-unknown', '--batch-size', '5', '--concurrency', '1'],
      dbs.shName,
      'flow_apply_command',
      'SIGINT',
    );
    const s = expectStoppedBySignal(r, 'apply-command resolve-unknown');
    expect(s).toMatchObject({ failed: 0, dead: 0 });
    expect(Number(s['claimed'])).toBeLessThan(30);
  });

  test('deliveries replay --from (SIGTERM)', async () => {
    const [rows] = await dbs.admin.query(
      `SELECT answer_uuid, answer_revision FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND consumer_school_id = 5 ORDER BY id LIMIT 5`,
      [KEY],
    );
    const file = join(dir, 'replay.csv');
    writeFileSync(
      file,
      `answerUuid,expectedRevision,operationId\n${(rows as Array<{ answer_uuid: string; answer_revision: string }>).map((x, i) => `${x.answer_uuid},${x.answer_revision},sig-${i}`).join('\n')}\n`,
    );
    const r = await interrupted(
      ['deliveries', 'replay', '--consumer', KEY, '--school', '5', '--from', file, '--concurrency', '1'],
      dbs.fcName,
      'answer_delivery',
      'SIGTERM',
    );
    const s = expectStoppedBySignal(r, 'deliveries replay');
    expect(Number(s['notRun'])).toBeGreaterThan(0);
  });

  test('projection repair-authoritative --plan (SIGINT)', async () => {
    const r = await interrupted(
      [
        'projection',
        'repair-authoritative',
        '--consumer',
        KEY,
        '--proof-id',
        'sig-repair',
        '--plan',
        R().plan,
        '--concurrency',
        '1',
        '--evidence',
        join(dir, 'repair.evidence.jsonl'),
      ],
      dbs.fcName,
      'answer',
      'SIGINT',
    );
    const s = expectStoppedBySignal(r, 'projection repair-authoritative');
    expect(Number(s['notRun'])).toBeGreaterThan(0);
  });

  test('retire-absent prove (SIGTERM): no proof written', async () => {
    const out = join(dir, 'never-proof.json');
    const r = await interrupted(
      ['retire-absent', 'prove', '--candidates', R().candidates, '--fc-manifest', R().fcManifest, '--out', out],
      dbs.fcName,
      'answer',
      'SIGTERM',
    );
    expectStoppedBySignal(r, 'retire-absent prove');
    expect(existsSync(out)).toBe(false);
  });

  test('retire-absent --proof (SIGINT)', async () => {
    const r = await interrupted(
      ['retire-absent', '--proof', R().proof, '--evidence', join(dir, 'retire.evidence.jsonl')],
      dbs.fcName,
      'answer',
      'SIGINT',
    );
    expectStoppedBySignal(r, 'retire-absent');
  });

  test('manifest scan (SIGTERM): was stoppedBy "stopped by SIGTERM"', async () => {
    const out = join(dir, 'scan', 'sh.jsonl');
    mkdirSync(join(dir, 'scan'));
    const r = await interrupted(
      ['manifest', 'scan', '--side', 'sh', '--school', '5', '--form', form, '--out', out, '--size', '1'],
      dbs.shName,
      'fc_answer_projection',
      'SIGTERM',
    );
    expect(expectStoppedBySignal(r, 'manifest scan')).toMatchObject({ completed: false });
  });

  test('reconcile run (SIGINT): was stoppedBy "stopped by SIGINT"', async () => {
    const out = join(dir, 'run-stopped');
    const pair = `,school="5",form="${form}"`;
    const metrics = previousMetrics('reconcile run', pair);
    const r = await interrupted(
      ['reconcile', 'run', '--school', '5', '--form', form, '--out-dir', out, '--metrics-file', metrics],
      dbs.fcName,
      'answer',
      'SIGINT',
    );
    expect(expectStoppedBySignal(r, 'reconcile run')).toMatchObject({ phase: 'scan-fc' });
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
    expectInterruptedMetrics(metrics, 'reconcile run', pair);
  });

  test('reconcile diff (SIGTERM): nothing written', { timeout: 120_000 }, async () => {
    // Large enough that the join is surely under way when the signal comes (no database to hold it at).
    const sub = join(dir, 'big');
    mkdirSync(sub);
    const rows: ManifestRow[] = Array.from({ length: 300_000 }, (_, i) => ({
      answerUuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      revision: '1',
      contentHash: 'a'.repeat(64),
      isDeleted: false,
      schId: '5',
      createTime: '2026-10-01 08:00:00',
    }));
    const fc = await writeManifestFiles(sub, 'fc', 'fc', rows);
    const sh = await writeManifestFiles(sub, 'sh', 'sh', rows);
    const out = join(sub, 'out');
    mkdirSync(out);
    const run = startCli(
      [
        '--json',
        'reconcile',
        'diff',
        '--fc',
        fc.file,
        '--sh',
        sh.file,
        '--task-start',
        '2026-11-30 01:00:00',
        '--out-dir',
        out,
      ],
      { env },
    );
    // its output files are opened (as temp files) when the join begins
    await waitFor('the diff to begin', async () => readdirSync(out).length > 0, 30_000, 2);
    run.child.kill('SIGTERM');
    const r = await run.done;
    expect(expectStoppedBySignal(r, 'reconcile diff')).toMatchObject({ written: false });
    expect(readdirSync(out)).toEqual([]);
  });
});
