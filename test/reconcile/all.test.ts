import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { cleanEnv, FCCTL_BIN, jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertProjections, testUuid } from '../helpers/manifest.js';
import { servicesTest } from '../helpers/services.js';
import { collectTextfiles } from '../helpers/textfile.js';
import { waitFor } from '../helpers/wait.js';
import { allArgv } from '../helpers/reconcile-all.js';

// Issue 19 §1: `reconcile run --all` over 40 pairs, one process and several sharing one run id.
const test = servicesTest({ prefix: 'all' });

const CONSUMER = 'svc-hall';
/** A school only the SH side has (its answers are all absent at FC): the pair must be run too. */
const SH_ONLY_SCHOOL = '900';
const SH_ONLY_FORM = testUuid('all', 'sh-only-form');
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

type Line = Record<string, unknown>;
const pairsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'pair');
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const key = (l: Line) => `${String(l['school'])}/${String(l['form'])}`;
const all = (out: string, ...more: string[]) => allArgv(CONSUMER, out, ...more);
const text = (p: string) => readFileSync(p, 'utf8');

/** A real fcctl process whose output is read while it runs (to kill it at a chosen moment). */
function spawnLive(args: readonly string[]) {
  const child = spawn(process.execPath, [FCCTL_BIN, ...args], {
    env: cleanEnv(env) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = { out: '', err: '' };
  child.stdout.on('data', (c: Buffer) => (io.out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (io.err += c.toString('utf8')));
  const exited = new Promise<number>((res) => child.on('close', (code) => res(code ?? -1)));
  return { child, io, exited };
}

async function tasks(
  runId: string,
): Promise<Array<{ sch_id: string; form_uuid: string; state: string; claim_owner: string | null; attempts: number }>> {
  const [rows] = await dbs.admin.query(
    `SELECT CAST(sch_id AS CHAR) AS sch_id, form_uuid, state, claim_owner, attempts FROM \`${dbs.shName}\`.fcctl_reconcile_task WHERE run_id = ? ORDER BY sch_id, form_uuid`,
    [runId],
  );
  return rows as Array<{
    sch_id: string;
    form_uuid: string;
    state: string;
    claim_owner: string | null;
    attempts: number;
  }>;
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  // 13 schools × 3 forms = 39 pairs at FC (and SH, with drift of every category), + 1 at SH only.
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '780', '--schools', '13', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    Array.from({ length: 4 }, (_, i) => ({
      answerUuid: testUuid('all', 'sh-only', i),
      schId: Number(SH_ONLY_SCHOOL),
      formUuid: SH_ONLY_FORM,
      createTime: '2026-10-01 08:00:00',
    })),
  );
  dir = tmp;
});

let single: Map<string, Line>;

test('one process: every pair found on either side run once, each in DIR/<school>/<form>/, summary.json over all', async () => {
  const out = join(dir, 'single');
  const r = await runCli(all(out, '--run-id', 'single', '--concurrency', '3'), { env });
  expect(r.code, r.stderr).toBe(0);
  const pairs = pairsOf(r.stdout);
  expect(pairs).toHaveLength(40);
  expect(new Set(pairs.map(key)).size).toBe(40);
  expect(pairs.every((p) => p['result'] === 'done')).toBe(true);
  const shOnly = pairs.find((p) => p['school'] === SH_ONLY_SCHOOL)!;
  expect(shOnly).toMatchObject({ form: SH_ONLY_FORM, fcRows: 0, shRows: 4 });
  expect((shOnly['counts'] as Record<string, number>)['ABSENT_AT_FC']).toBe(4);
  for (const p of pairs) expect(existsSync(join(out, String(p['school']), String(p['form']), 'report.csv'))).toBe(true);
  const summary = JSON.parse(text(join(out, 'summary.json'))) as Record<string, unknown>;
  expect(summary).toMatchObject({
    format: 'fcctl.reconcile.all.v1',
    runId: 'single',
    pairs: 40,
    byState: { DONE: 40, PENDING: 0, CLAIMED: 0, FAILED: 0 },
  });
  const differing = pairs.filter((p) => Number(p['differences']) > 0);
  expect(differing.length).toBeGreaterThan(0);
  expect((summary['pairsWithDifferences'] as Line[]).length).toBe(differing.length);
  expect(summaryOf(r.stdout)).toMatchObject({
    all: true,
    runId: 'single',
    pairsFound: 40,
    pairsRun: 40,
    byResult: { done: 40, failed: 0 },
  });
  single = new Map(pairs.map((p) => [key(p), p]));
  // The per-pair result is today's single-pair run's: one pair run alone gives the same counts and report.
  const one = pairs[7]!;
  const alone = await runCli(
    [
      '--json',
      'reconcile',
      'run',
      '--school',
      String(one['school']),
      '--form',
      String(one['form']),
      '--out-dir',
      join(dir, 'alone'),
    ],
    { env },
  );
  expect(alone.code, alone.stderr).toBe(0);
  expect(text(join(dir, 'alone', 'report.csv'))).toBe(text(join(String(one['dir']), 'report.csv')));
  // The same run again: every pair is done, nothing is run twice — and a run id reused is said (exit 1).
  const again = await runCli(all(out, '--run-id', 'single'), { env });
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(
    /^fcctl: warning: every pair of run single was done before this process began: nothing was run/,
  );
  expect(pairsOf(again.stdout)).toHaveLength(0);
  expect(summaryOf(again.stdout)).toMatchObject({ pairsRun: 0, run: { pairs: 40, byState: { DONE: 40 } } });
  // --fail-if-diff: the seeded drift is a difference.
  const strict = await runCli(
    all(join(dir, 'strict'), '--run-id', 'strict', '--fail-if-diff', '--school', '5', '--school', '6'),
    { env },
  );
  expect(strict.code).toBe(1);
  expect(
    pairsOf(strict.stdout)
      .map((p) => p['school'])
      .sort(),
  ).toEqual(['5', '5', '5', '6', '6', '6']);
  expect(summaryOf(strict.stdout)['reason']).toMatch(/pair\(s\) with differences \(--fail-if-diff\)/);
});

test('two processes started together share the run: every pair exactly once, results identical to one process', async () => {
  const out = join(dir, 'two');
  const [a, b] = await Promise.all([
    spawnCli(all(out, '--run-id', 'two', '--concurrency', '2'), { env }),
    spawnCli(all(out, '--run-id', 'two', '--concurrency', '2'), { env }),
  ]);
  expect(a.code, a.stderr).toBe(0);
  expect(b.code, b.stderr).toBe(0);
  const pairs = [...pairsOf(a.stdout), ...pairsOf(b.stdout)];
  expect(pairs).toHaveLength(40);
  expect(new Set(pairs.map(key)).size).toBe(40);
  // Both took part (40 pairs, two processes started together).
  expect(pairsOf(a.stdout).length).toBeGreaterThan(0);
  expect(pairsOf(b.stdout).length).toBeGreaterThan(0);
  for (const p of pairs) {
    expect(p['counts']).toEqual(single.get(key(p))!['counts']);
    expect(text(join(String(p['dir']), 'report.csv'))).toBe(
      text(join(String(single.get(key(p))!['dir']), 'report.csv')),
    );
  }
  expect((await tasks('two')).every((t) => t.state === 'DONE' && t.claim_owner === null && t.attempts === 1)).toBe(
    true,
  );
});

test('a process killed with SIGKILL mid-run: a process started later takes its pairs over after the lease and resumes them from their checkpoints', async () => {
  const out = join(dir, 'killed');
  const args = all(out, '--run-id', 'killed', '--concurrency', '2', '--lease-seconds', '3', '--size', '1');
  const { child, io, exited } = spawnLive(args);
  // Killed once three pairs are done and a pair it holds has begun scanning (its run.json written).
  // Judged while the process is stopped (SIGSTOP), so what is seen is what it holds when killed:
  // judged while it ran, the pair could finish between the look and the kill (seen on Node 22 in CI).
  const holdsBegun = async () => {
    if (pairsOf(io.out).length < 3) return false;
    child.kill('SIGSTOP');
    const held = (await tasks('killed')).filter((t) => t.state === 'CLAIMED');
    const ok = held.some((t) => existsSync(join(out, t.sch_id, t.form_uuid, 'run.json')));
    if (!ok) child.kill('SIGCONT');
    return ok;
  };
  await waitFor('three pairs done and a fourth begun, held', holdsBegun, 60_000);
  child.kill('SIGKILL');
  await exited;
  const doneBefore = new Set(pairsOf(io.out).map(key));
  const held = (await tasks('killed')).filter((t) => t.state === 'CLAIMED');
  expect(held.length).toBeGreaterThan(0);
  // Pairs the killed process had begun: their run.json is still `scanning`, their checkpoints on disk.
  const begun = held.filter((t) => existsSync(join(out, t.sch_id, t.form_uuid, 'run.json')));
  expect(begun.length).toBeGreaterThan(0);
  const r = await spawnCli(args, { env, timeoutMs: 120_000 });
  expect(r.code, r.stderr).toBe(0);
  const later = pairsOf(r.stdout);
  for (const p of later) expect(doneBefore.has(key(p))).toBe(false);
  // Pairs the killed process finished (its last lines may be lost with it) are not run again.
  const ranLater = new Set(later.map(key));
  for (const t of await tasks('killed')) if (!ranLater.has(`${t.sch_id}/${t.form_uuid}`)) expect(t.attempts).toBe(1);
  for (const t of held) {
    const p = later.find((l) => l['school'] === t.sch_id && l['form'] === t.form_uuid)!;
    // `adopted`: the killed process had completed the pair's diff but not yet recorded it.
    expect(p).toMatchObject({ result: expect.stringMatching(/^(done|adopted)$/), attempt: 2 });
    expect(p['counts']).toEqual(single.get(key(p))!['counts']);
  }
  for (const t of begun) {
    const p = later.find((l) => l['school'] === t.sch_id && l['form'] === t.form_uuid)!;
    if (p['result'] === 'done') expect(p['resumed']).toBe(true);
  }
  expect((await tasks('killed')).every((t) => t.state === 'DONE')).toBe(true);
  expect(JSON.parse(text(join(out, 'summary.json')))).toMatchObject({ pairs: 40, byState: { DONE: 40 } });
});

test("two processes, one killed with SIGKILL: the other waits out the lease and finishes the killed one's pairs", async () => {
  const out = join(dir, 'survivor');
  const args = all(out, '--run-id', 'survivor', '--concurrency', '2', '--lease-seconds', '3', '--size', '1');
  const { child: victim, io: victimIo, exited: victimExited } = spawnLive(args);
  const survivor = spawnCli(args, { env, timeoutMs: 120_000 });
  // Killed once it has done two pairs and holds another (its claim token names its pid).
  const holds = async () =>
    (await tasks('survivor')).some(
      (t) => t.state === 'CLAIMED' && t.claim_owner !== null && t.claim_owner.split(':')[1] === String(victim.pid),
    );
  await waitFor(
    'the victim has done two pairs and holds a third',
    async () => pairsOf(victimIo.out).length >= 2 && (await holds()),
    60_000,
  );
  victim.kill('SIGKILL');
  await victimExited;
  const r = await survivor;
  expect(r.code, r.stderr).toBe(0);
  // The victim's last lines may be lost with it (SIGKILL drops what stdout had not written): the
  // task table is the record. Every pair done, none twice: each pair the survivor did not run was
  // done by the victim, once.
  const byVictim = pairsOf(victimIo.out).map(key);
  const bySurvivor = pairsOf(r.stdout);
  expect(new Set([...byVictim, ...bySurvivor.map(key)]).size).toBe(byVictim.length + bySurvivor.length);
  const survivorRan = new Set(bySurvivor.map(key));
  for (const t of await tasks('survivor'))
    if (!survivorRan.has(`${t.sch_id}/${t.form_uuid}`)) expect(t.attempts, `${t.sch_id}/${t.form_uuid}`).toBe(1);
  // The pairs the victim held when it died: taken over on the second attempt.
  expect(bySurvivor.filter((p) => p['attempt'] === 2).length).toBeGreaterThan(0);
  for (const p of bySurvivor) expect(p['counts']).toEqual(single.get(key(p))!['counts']);
  expect((await tasks('survivor')).every((t) => t.state === 'DONE')).toBe(true);
});

test("--metrics-file: one file holding every pair's series labelled school and form; counters add up across runs", async () => {
  const prom = join(dir, 'prom');
  mkdirSync(prom);
  const file = join(prom, 'fcctl_reconcile.prom');
  const night = (n: number) =>
    runCli(
      all(
        join(dir, 'metrics'),
        '--run-id',
        `metrics-${n}`,
        '--school',
        '5',
        '--school',
        SH_ONLY_SCHOOL,
        '--metrics-file',
        file,
      ),
      { env },
    );
  expect((await night(1)).code).toBe(0);
  expect((await night(2)).code).toBe(0);
  const c = collectTextfiles(prom);
  expect(c.errors).toEqual([]);
  const rows = c.families.get('fcctl_reconcile_rows')!.samples;
  expect(new Set(rows.map((s) => `${s.labels['school']}/${s.labels['form']}`)).size).toBe(4);
  const inSync = (fam: string) =>
    c.families.get(fam)!.samples.filter((s) => s.labels['school'] === '5' && s.labels['category'] === 'IN_SYNC');
  // three forms of school 5: each pair's counter is twice its gauge after two nights
  expect(
    inSync('fcctl_reconcile_rows_total')
      .map((s) => s.value)
      .sort(),
  ).toEqual(
    inSync('fcctl_reconcile_rows')
      .map((s) => 2 * s.value)
      .sort(),
  );
  expect(c.families.get('fcctl_last_success_timestamp_seconds')!.samples).toEqual([
    expect.objectContaining({ labels: { command: 'reconcile run', metrics_file: 'fcctl_reconcile.prom' } }),
  ]);
  expect(c.families.get('fcctl_paused')!.samples.map((s) => s.value)).toEqual([0]);
});

test('a --school filter is kept by the claims of a process that shares its run with an unfiltered one', async () => {
  const out = join(dir, 'filtered');
  const [wide, narrow] = await Promise.all([
    spawnCli(all(out, '--run-id', 'filtered', '--concurrency', '1', '--size', '1'), { env }),
    spawnCli(all(out, '--run-id', 'filtered', '--school', '9'), { env }),
  ]);
  expect(wide.code, wide.stderr).toBe(0);
  expect(narrow.code, narrow.stderr).toBe(0);
  expect(pairsOf(narrow.stdout).every((p) => p['school'] === '9')).toBe(true);
  expect(pairsOf(narrow.stdout).length + pairsOf(wide.stdout).length).toBe(40);
});

test('an outage mid-run (the FC answer table gone): the pairs are given back, none FAILED, exit 3; the next run finishes them', async () => {
  const out = join(dir, 'outage');
  const args = all(out, '--run-id', 'outage', '--concurrency', '2', '--size', '1');
  const { io, exited } = spawnLive(args);
  await waitFor('two pairs done', async () => pairsOf(io.out).length >= 2, 60_000);
  await dbs.admin.query(`RENAME TABLE \`${dbs.fcName}\`.answer TO \`${dbs.fcName}\`.answer_away`);
  let code: number;
  try {
    code = await exited;
  } finally {
    await dbs.admin.query(`RENAME TABLE \`${dbs.fcName}\`.answer_away TO \`${dbs.fcName}\`.answer`);
  }
  expect(code, io.err).toBe(3);
  expect(summaryOf(io.out)).toMatchObject({ stoppedBy: 'error', exitCode: 3 });
  const states = await tasks('outage');
  expect(states.filter((t) => t.state === 'FAILED')).toEqual([]);
  expect(states.filter((t) => t.state === 'CLAIMED')).toEqual([]);
  expect(states.filter((t) => t.state === 'PENDING').length).toBeGreaterThan(0);
  const r = await spawnCli(args, { env, timeoutMs: 120_000 });
  expect(r.code, r.stderr).toBe(0);
  expect((await tasks('outage')).every((t) => t.state === 'DONE')).toBe(true);
});

test('a pair whose diff completed but whose task row was not written (killed in between) is adopted, not run again', async () => {
  const out = join(dir, 'adopt');
  expect((await runCli(all(out, '--run-id', 'adopt', '--school', '8'), { env })).code).toBe(0);
  const [victim] = await tasks('adopt');
  const pairDir = join(out, victim!.sch_id, victim!.form_uuid);
  const reportBefore = text(join(pairDir, 'report.csv'));
  const runBefore = JSON.parse(text(join(pairDir, 'run.json'))) as Record<string, unknown>;
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET state = 'CLAIMED', claim_owner = 'dead-host:1:x', claim_expires_at = UTC_TIMESTAMP() - INTERVAL 1 SECOND WHERE run_id = 'adopt' AND sch_id = ? AND form_uuid = ?`,
    [victim!.sch_id, victim!.form_uuid],
  );
  const r = await runCli(all(out, '--run-id', 'adopt', '--school', '8'), { env });
  expect(r.code, r.stderr).toBe(0);
  expect(pairsOf(r.stdout)).toEqual([
    expect.objectContaining({ school: victim!.sch_id, form: victim!.form_uuid, result: 'adopted', attempt: 2 }),
  ]);
  expect(JSON.parse(text(join(pairDir, 'run.json')))).toEqual(runBefore);
  expect(text(join(pairDir, 'report.csv'))).toBe(reportBefore);
  expect((await tasks('adopt')).every((t) => t.state === 'DONE')).toBe(true);
});

test('paused: nothing claimed, exit 0 with stoppedBy paused; after the resume the run goes on', async () => {
  expect((await runCli(['--json', 'pause', 'reconcile', 'run', '--reason', 'incident 42'], { env })).code).toBe(0);
  const out = join(dir, 'paused');
  const r = await runCli(all(out, '--run-id', 'paused'), { env });
  expect(r.code).toBe(0);
  expect(summaryOf(r.stdout)).toMatchObject({ stoppedBy: 'paused', paused: { reason: 'incident 42' }, pairsRun: 0 });
  expect(await tasks('paused')).toEqual([]);
  expect((await runCli(['--json', 'resume', 'reconcile', 'run'], { env })).code).toBe(0);
  const go = await runCli(all(out, '--run-id', 'paused', '--school', '7'), { env });
  expect(go.code).toBe(0);
  expect(pairsOf(go.stdout)).toHaveLength(3);
});

test('mistakes: no pair for the filters, no consumer key, bad flags — one line, a defined exit code, nothing written', async () => {
  const none = await runCli(all(join(dir, 'none'), '--run-id', 'none', '--school', '424242'), { env });
  expect(none.code).toBe(1);
  expect(none.stderr).toMatch(/no \(school, form\) pair found at FC nor at SH for these filters/);
  expect(
    (await runCli(all(join(dir, 'none2'), '--run-id', 'none2', '--school', '424242', '--allow-empty'), { env })).code,
  ).toBe(0);
  const typo = await runCli(all(join(dir, 'typo'), '--run-id', 'typo', '--school', '5', '--school', '66'), { env });
  expect(typo.code).toBe(1);
  expect(typo.stderr).toMatch(/^fcctl: warning: --school 66 matched no pair at FC nor at SH: a typo\?/);
  expect(pairsOf(typo.stdout)).toHaveLength(3);
  const noKey = await runCli(['--json', 'reconcile', 'run', '--all', '--out-dir', join(dir, 'nokey')], { env });
  expect(noKey.code).toBe(2);
  expect(noKey.stderr).toMatch(/reconcile run --all needs --consumer KEY/);
  expect(existsSync(join(dir, 'nokey'))).toBe(false);
  for (const [flags, says] of [
    [['--concurrency', '0'], /--concurrency/],
    [['--lease-seconds', '1'], /--lease-seconds/],
    [['--school', 'five'], /--school/],
    [['--run-id', ' x'], /--run-id/],
    [['--restart'], /--restart is for one pair/],
  ] as const) {
    const bad = await runCli(all(join(dir, 'bad'), ...flags), { env });
    expect(bad.code, flags.join(' ')).toBe(2);
    expect(bad.stderr).toMatch(says);
    expect(existsSync(join(dir, 'bad'))).toBe(false);
  }
  const twice = await runCli(
    [
      '--json',
      'reconcile',
      'run',
      '--school',
      '5',
      '--school',
      '6',
      '--form',
      SH_ONLY_FORM,
      '--out-dir',
      join(dir, 'twice'),
    ],
    { env },
  );
  expect(twice.code).toBe(2);
  expect(twice.stderr).toMatch(/--school given 2 times: one pair takes one/);
  expect(existsSync(join(dir, 'twice'))).toBe(false);
});
