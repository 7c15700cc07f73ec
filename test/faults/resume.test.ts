import { type ChildProcess, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, testMysqlUrl, type TestDatabases } from '../helpers/db.js';
import { pick, recordTotals, restartService } from '../helpers/faults.js';

// manifest scan and reconcile run, killed with kill -9 at random moments and cut off by a MariaDB
// restart, each time resumed from their checkpoints: the finished files are the bytes of an
// uninterrupted run over the same data.
const ANSWERS = pick(20_000, 200_000);
const KILLS = pick(3, 10);
/** Replays a failure: FCCTL_FAULT_SEED=<the seed in its message>. */
const SEED = Number(process.env['FCCTL_FAULT_SEED'] ?? Date.now() % 1_000_000);
const why = `(FCCTL_FAULT_SEED=${SEED})`;
/** small pages: many checkpoints to be killed between (the page size is no scan parameter) */
const SIZE = '50';

let dbs: TestDatabases;
/** the admin connection; replaced after a MariaDB restart (the old one died with the server) */
let admin: mysql.Connection;
let env: Record<string, string | undefined>;
let dir: string;
let form: string;

/** A small seeded generator, so that the kill points of a failure can be replayed. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const random = lcg(SEED);

beforeAll(async () => {
  console.info(`resume faults: seed ${SEED}, ${ANSWERS} answers, ${KILLS} kills`);
  dbs = await freshDatabases('faultresume');
  admin = dbs.admin;
  admin.on('error', () => undefined);
  env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seeded = await runCli(
    ['--json', 'dev', 'seed', '--answers', String(ANSWERS), '--schools', '1', '--consumers', '1'],
    { env },
  );
  expect(seeded.code, seeded.stderr).toBe(0);
  // The form with the most answers (the seed spreads them over three).
  const [rows] = await admin.query(
    `SELECT form_uuid FROM \`${dbs.fcName}\`.answer GROUP BY form_uuid ORDER BY COUNT(*) DESC, form_uuid LIMIT 1`,
  );
  form = (rows as Array<{ form_uuid: string }>)[0]!.form_uuid;
  dir = mkdtempSync(join(tmpdir(), 'fcctl-fault-resume-'));
}, 600_000);
afterAll(async () => {
  await admin?.query(`DROP DATABASE IF EXISTS \`${dbs.fcName}\`; DROP DATABASE IF EXISTS \`${dbs.shName}\``);
  await admin?.end();
  if (dbs && admin !== dbs.admin) await dbs.admin.end().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** the fault was done before the process ended */
  readonly faulted: boolean;
}

/**
 * Runs `bin/fcctl` as a real process; as soon as `when()` holds (polled every millisecond), does
 * `fault` to it. Without `when`, runs to the end. A process that hangs is killed and fails the test.
 */
function runFaulted(
  args: readonly string[],
  when?: () => boolean,
  fault?: (child: ChildProcess) => Promise<void>,
): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FCCTL_BIN, '--json', ...args], {
      env: env as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    let faulted = false;
    let faultDone: Promise<void> = Promise.resolve();
    const poll = when
      ? setInterval(() => {
          if (faulted || !when()) return;
          faulted = true;
          faultDone = fault!(child);
        }, 1)
      : undefined;
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, 300_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearInterval(poll);
      clearTimeout(timer);
      if (hung) return reject(new Error(`fcctl ${args.join(' ')} hung (killed after 300 s): ${stderr}`));
      faultDone.then(() => resolve({ code, signal, stdout, stderr, faulted }), reject);
    });
  });
}

const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};
const kill9 = async (child: ChildProcess) => void child.kill('SIGKILL');
const restartDatabase = async () => {
  await restartService('mariadb', 1);
  admin = await mysql.createConnection({
    uri: testMysqlUrl(),
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    multipleStatements: true,
  });
  admin.on('error', () => undefined);
};

/** A lost database: exit 3 and one line on stderr naming it, no stack trace. */
function expectDatabaseLost(r: Ended): void {
  expect(r.faulted, `the restart came before the run ended ${why}`).toBe(true);
  expect(r.code, r.stderr).toBe(3);
  expect(r.stderr).toMatch(/^fcctl: [^\n]*(FC|SH) database[^\n]*\n$/);
}

/** Sorted kill points beyond `from`, within `total` (bytes of output). */
const killPoints = (from: number, total: number) =>
  Array.from({ length: KILLS }, () => from + 1 + Math.floor(random() * (total - from - 1))).sort((a, b) => a - b);

/** Wall-clock times a command writes into its JSON files (the host's, and a scan's start in the database's clock); documented as the run's own. */
const normalise = (text: string) =>
  text.replace(/"(startedAt|updatedAt|completedAt|createdAt|dbStartedAt|dbStartedAtUtc)":\s*"[^"]*"/g, '"$1":"<time>"');

/** What a resumed result holds that the reference does not, and the reverse, by line; and repeated lines. */
function compareLines(
  reference: string,
  got: string,
): { checked: number; lost: number; extra: number; duplicates: number } {
  const count = (text: string) => {
    const m = new Map<string, number>();
    for (const line of text.split('\n').filter(Boolean)) m.set(line, (m.get(line) ?? 0) + 1);
    return m;
  };
  const ref = count(reference);
  const res = count(got);
  let lost = 0;
  let extra = 0;
  let duplicates = 0;
  for (const [line, n] of ref) lost += Math.max(0, n - (res.get(line) ?? 0));
  for (const [line, n] of res) {
    extra += Math.max(0, n - (ref.get(line) ?? 0));
    duplicates += n - 1;
  }
  return { checked: [...res.values()].reduce((a, b) => a + b, 0), lost, extra, duplicates };
}

/** Every file of two directories (locks aside): the same names, the same bytes once wall-clock times are set aside. */
function compareDirectories(
  referenceDir: string,
  resultDir: string,
  test: string,
  faultsInjected: number,
  runs: number,
): void {
  const files = (d: string) =>
    readdirSync(d)
      .filter((f) => !f.endsWith('.lock'))
      .sort();
  const names = files(resultDir);
  const totals = { checked: 0, lost: 0, extra: 0, duplicates: 0 };
  for (const f of names.filter((n) => n.endsWith('.jsonl') || n.endsWith('.csv'))) {
    const c = compareLines(readFileSync(join(referenceDir, f), 'utf8'), readFileSync(join(resultDir, f), 'utf8'));
    totals.checked += c.checked;
    totals.lost += c.lost;
    totals.extra += c.extra;
    totals.duplicates += c.duplicates;
  }
  recordTotals(test, {
    faultsInjected,
    runs,
    rowsChecked: totals.checked,
    rowsLost: totals.lost,
    wronglyAccepted: totals.extra,
    duplicates: totals.duplicates,
  });
  expect(names, why).toEqual(files(referenceDir));
  for (const f of names) {
    const [a, b] = [readFileSync(join(referenceDir, f)), readFileSync(join(resultDir, f))];
    if (f.endsWith('.json')) expect(normalise(b.toString('utf8')), `${f} ${why}`).toBe(normalise(a.toString('utf8')));
    else expect(b.equals(a), `${f} is byte-identical ${why}`).toBe(true);
  }
  expect(totals.checked, why).toBeGreaterThan(0);
}

describe(`kill -9 and a MariaDB restart, then resume (${ANSWERS} answers, ${KILLS} kills)`, () => {
  it('manifest scan (FC side, hashing every answer): exit 3 on the lost database, resumed byte-identical after every kill', async () => {
    const work = join(dir, 'scan');
    const ref = join(dir, 'scan-reference');
    mkdirSync(work);
    const out = join(work, 'fc.jsonl');
    const args = ['manifest', 'scan', '--side', 'fc', '--school', '5', '--form', form, '--out', out, '--size', SIZE];
    // The uninterrupted scan, then moved aside: the faulted one writes the same paths.
    const reference = await runFaulted(args);
    expect(reference.code, reference.stderr).toBe(0);
    renameSync(work, ref);
    mkdirSync(work);
    const total = sizeOf(join(ref, 'fc.jsonl'));
    let runs = 1;

    const lost = await runFaulted(args, () => sizeOf(out) > 0, restartDatabase);
    runs++;
    expectDatabaseLost(lost);
    let kills = 0;
    for (const point of killPoints(sizeOf(out), total)) {
      const r = await runFaulted(args, () => sizeOf(out) >= point, kill9);
      runs++;
      if (r.signal === 'SIGKILL') kills++;
      else expect(r.stderr, why).toBe('');
    }
    expect(kills, `every scan was killed ${why}`).toBe(KILLS);
    const rest = await runFaulted(args);
    runs++;
    expect(rest.stderr, why).toBe('');
    expect(rest.code, why).toBe(0);
    expect(jsonLines(rest.stdout).at(-1)).toMatchObject({ completed: true, resumed: true });
    compareDirectories(ref, work, 'manifest scan killed and resumed', kills + 1, runs);
  });

  it('reconcile run (task start, FC scan, SH scan, diff): exit 3 on the lost database, resumed identical after every kill', async () => {
    const work = join(dir, 'run');
    const ref = join(dir, 'run-reference');
    const args = ['reconcile', 'run', '--school', '5', '--form', form, '--out-dir', work, '--size', SIZE];
    const reference = await runFaulted(args);
    expect(reference.code, reference.stderr).toBe(0);
    renameSync(work, ref);
    // The faulted run continues from the reference's task start (its only input besides the data),
    // as if its first process had been killed right after taking it.
    const run = JSON.parse(readFileSync(join(ref, 'run.json'), 'utf8')) as Record<string, unknown>;
    mkdirSync(work);
    writeFileSync(
      join(work, 'run.json'),
      `${JSON.stringify({ ...run, state: 'scanning', completedAt: null, counts: null }, null, 2)}\n`,
      { mode: 0o600 },
    );
    const progress = () => sizeOf(join(work, 'fc-manifest.jsonl')) + sizeOf(join(work, 'sh-manifest.jsonl'));
    const total = sizeOf(join(ref, 'fc-manifest.jsonl')) + sizeOf(join(ref, 'sh-manifest.jsonl'));
    let runs = 1;

    const lost = await runFaulted(args, () => progress() > 0, restartDatabase);
    runs++;
    expectDatabaseLost(lost);
    let kills = 0;
    for (const point of killPoints(progress(), total)) {
      const r = await runFaulted(args, () => progress() >= point, kill9);
      runs++;
      if (r.signal === 'SIGKILL') kills++;
      else expect(r.stderr, why).toBe('');
    }
    expect(kills, `every run was killed ${why}`).toBe(KILLS);
    // One more kill once the SH scan is complete: in the diff (when the process is still there).
    const shDone = () => {
      try {
        return (JSON.parse(readFileSync(join(work, 'sh-manifest.checkpoint.json'), 'utf8')) as { completed: boolean })
          .completed;
      } catch {
        return false;
      }
    };
    const inDiff = await runFaulted(args, shDone, kill9);
    runs++;
    if (inDiff.signal === 'SIGKILL') kills++;
    // A run that finished before the kill is the last one (another would start a new run).
    const rest = inDiff.signal === 'SIGKILL' ? await runFaulted(args) : inDiff;
    if (rest !== inDiff) runs++;
    expect(rest.stderr, why).toBe('');
    expect(rest.code, why).toBe(0);
    expect(
      jsonLines(rest.stdout).find((l) => l['type'] === 'summary'),
      why,
    ).toMatchObject({ resumed: true, runId: run['runId'], taskStart: run['taskStart'] });
    compareDirectories(ref, work, 'reconcile run killed and resumed', kills + 1, runs);
  });
});
