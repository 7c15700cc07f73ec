import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { expect } from 'vitest';
import { jsonLines, runCli } from '../helpers/cli.js';
import { allArgv } from '../helpers/reconcile-all.js';
import { servicesTest } from '../helpers/services.js';

// Issue 36 §7: a same-night re-run of `reconcile run --all` (no --run-id) joins the night's run,
// already complete: it says so, and leaves the night's numbers as they are — the metrics file
// keeps its fcctl_reconcile_differences, so FcctlReconcileDifferences does not resolve with
// nothing fixed.
const test = servicesTest({ prefix: 'joinrerun' });
const CONSUMER = 'svc-hall';

test('a same-night re-run joins the complete run, says so, and leaves summary.json and the metrics file as they are', async ({
  dbs,
  tmp,
}) => {
  const env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '120', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  const out = join(tmp, 'night');
  const prom = join(tmp, 'fcctl_reconcile.prom');
  const first = await runCli(allArgv(CONSUMER, out, '--metrics-file', prom), { env });
  expect(first.code, first.stderr).toBe(0);
  const firstSummary = jsonLines(first.stdout).find((l) => l['type'] === 'summary')!;
  expect(firstSummary['pairsRun']).toBeGreaterThan(0);
  expect(firstSummary['joined']).toBeUndefined();
  const metrics = readFileSync(prom, 'utf8');
  // the night has differences (the seed's drift), and the file says so
  expect(metrics).toMatch(/^fcctl_reconcile_differences\{[^}]*\} [1-9]\d*$/m);
  const summaryJson = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Record<string, unknown>;

  const again = await runCli(allArgv(CONSUMER, out, '--metrics-file', prom), { env });
  expect(again.code, again.stderr).toBe(0);
  const summary = jsonLines(again.stdout).find((l) => l['type'] === 'summary')!;
  expect(summary).toMatchObject({ runId: firstSummary['runId'], pairsRun: 0, joined: true });
  expect(summary['note']).toBe(
    `run ${String(firstSummary['runId'])} was complete before this process began: joined it and ran nothing; its numbers (summary.json, the metrics file) are left as they are`,
  );
  expect(readFileSync(prom, 'utf8')).toBe(metrics);
  const after = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Record<string, unknown>;
  expect({ ...after, updatedAt: null }).toEqual({ ...summaryJson, updatedAt: null });

  // --fail-if-diff on the re-run: the night's verdict stands (exit 1), the file still untouched
  const strict = await runCli(allArgv(CONSUMER, out, '--metrics-file', prom, '--fail-if-diff'), { env });
  expect(strict.code).toBe(1);
  expect(readFileSync(prom, 'utf8')).toBe(metrics);
});

// Review of issue 36 §7: the retry the failure line asks for (`--run-id <night>`) runs the night's
// FAILED pair alone; the file it writes must still carry the differences of the pairs this host
// finished earlier in that night, or FcctlReconcileDifferences resolves with nothing fixed.
test("the retry of a night's FAILED pair (--run-id, as the failure line says) keeps the other pairs' differences in the metrics file", async ({
  dbs,
  tmp,
}) => {
  const env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seed = await runCli(
    [
      '--json',
      'dev',
      'seed',
      '--answers',
      '120',
      '--schools',
      '2',
      '--consumer-keys',
      CONSUMER,
      '--no-grant-mix',
      '--replace',
    ],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  const [rows] = await dbs.admin.query(
    `SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f FROM \`${dbs.shName}\`.fc_answer_projection ORDER BY sch_id, form_uuid LIMIT 1`,
  );
  const first = (rows as Array<{ s: string; f: string }>)[0]!;
  const out = join(tmp, 'failed-night');
  const prom = join(tmp, 'failed.prom');
  // the first pair's folder holds a directory named run.json: that pair is refused, FAILED
  const blocker = join(out, first.s, first.f, 'run.json');
  mkdirSync(blocker, { recursive: true });
  const night = await runCli(allArgv(CONSUMER, out, '--run-id', 'n1', '--metrics-file', prom), { env });
  expect(night.code, night.stderr).toBe(4);
  const differing = (text: string) =>
    text
      .split('\n')
      .filter((l) => /^fcctl_reconcile_differences\{/.test(l) && !/ 0$/.test(l))
      .sort();
  const before = differing(readFileSync(prom, 'utf8'));
  expect(before.length).toBeGreaterThan(0);
  expect(before.some((l) => l.includes(`form="${first.f}"`) && l.includes(`school="${first.s}"`))).toBe(false);

  rmSync(blocker, { recursive: true });
  const retry = await runCli(allArgv(CONSUMER, out, '--run-id', 'n1', '--metrics-file', prom), { env });
  expect(retry.code, retry.stderr).toBe(0);
  expect(jsonLines(retry.stdout).find((l) => l['type'] === 'summary')).toMatchObject({ pairsRun: 1 });
  const after = differing(readFileSync(prom, 'utf8'));
  for (const line of before) expect(after).toContain(line);
});

const FCCTL = fileURLToPath(new URL('../../bin/fcctl', import.meta.url));

/** `reconcile run --all` as a process on host `host` (its own UTS namespace: the task table records the host). */
function onHost(host: string, env: Record<string, string | undefined>, argv: readonly string[]) {
  const r = spawnSync(
    'unshare',
    ['-u', 'sh', '-c', 'hostname "$0" && exec "$@"', host, process.execPath, FCCTL, ...argv],
    {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', ...env },
    },
  );
  return { code: r.status, stderr: r.stderr, summary: jsonLines(r.stdout).find((l) => l['type'] === 'summary') ?? {} };
}

/** The pairs' `fcctl_reconcile_differences` in a metrics file: `school/form` → rows. */
function differences(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of readFileSync(file, 'utf8').matchAll(
    /^fcctl_reconcile_differences\{school="(\d+)",form="([^"]+)"[^}]*\} (\d+)$/gm,
  ))
    out.set(`${m[1]}/${m[2]}`, Number(m[3]));
  return out;
}

// Review of issue 36 §7/§17: "a joined run leaves the night's numbers as they are" holds only for a
// host that took part in the night: a host that ran none of its pairs (the timer's
// RandomizedDelaySec started it after the others had done them all) has an EARLIER night's pairs in
// its file, and left as they were they kept FcctlReconcileDifferences firing for a pair fixed since,
// found in sync tonight by the other host.
test("a host that took no part in the night it joins complete does not keep an earlier night's differences in its metrics file", async ({
  dbs,
  tmp,
}) => {
  const env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seedArgv = ['--json', 'dev', 'seed', '--answers', '120', '--schools', '2', '--consumer-keys', CONSUMER];
  const seed = await runCli([...seedArgv, '--no-grant-mix', '--replace'], { env });
  expect(seed.code, seed.stderr).toBe(0);
  const dir = join(tmp, 'hosts');
  mkdirSync(dir);
  const hostB = join(dir, 'b.prom');
  // night 1: host B runs every pair (a run id no later process joins)
  const night1 = onHost(
    'host-b',
    env,
    allArgv(CONSUMER, join(dir, 'b1'), '--metrics-file', hostB, '--run-id', 'review-night-1'),
  );
  expect(night1.code, night1.stderr).toBe(0);
  const [fixed, before] = [...differences(hostB)].find(([, n]) => n > 0)!;
  expect(before).toBeGreaterThan(0);

  // the day: that pair is fixed — every row its report lists as not in sync is gone on both sides
  const [school, form] = fixed.split('/') as [string, string];
  const csv = readFileSync(join(dir, 'b1', school, form, 'report.csv'), 'utf8');
  const uuids = csv
    .split('\n')
    .slice(1)
    .filter((l) => l !== '')
    .map((l) => l.split(',')[1]!);
  for (const [url, sql] of [
    [dbs.fcUrl, 'DELETE FROM answer WHERE answer_uuid IN (?)'],
    [dbs.shUrl, 'DELETE FROM fc_answer_projection WHERE answer_uuid IN (?)'],
  ] as const) {
    const c = await mysql.createConnection(url);
    await c.query(sql, [uuids]);
    await c.end();
  }

  // night 2: host A begins the night's run (a default-named id) and does every pair: the fixed one in sync
  const hostA = join(dir, 'a.prom');
  const night2 = onHost(
    'host-a',
    env,
    allArgv(CONSUMER, join(dir, 'a2'), '--metrics-file', hostA, '--run-id', '2099-12-31T18-30Z'),
  );
  expect(night2.code, night2.stderr).toBe(0);
  expect(differences(hostA).get(fixed)).toBe(0);
  // host B starts later, joins that run complete and runs nothing
  const late = onHost('host-b', env, allArgv(CONSUMER, join(dir, 'b2'), '--metrics-file', hostB));
  expect(late.code, late.stderr).toBe(0);
  expect(late.summary).toMatchObject({ runId: '2099-12-31T18-30Z', joined: true, pairsRun: 0 });
  // no host's file says the fixed pair still differs (FcctlReconcileDifferences: > 0)
  expect(differences(hostB).get(fixed) ?? 0).toBe(0);
  // host B's file: none of night 1's pair gauges (it ran no pair of this night)
  expect(differences(hostB).size).toBe(0);
});
