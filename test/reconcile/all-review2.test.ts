import { join } from 'node:path';
import { expect } from 'vitest';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { allArgv } from '../helpers/reconcile-all.js';

// Issue 26 §3 reviewed again: the default run id of `reconcile run --all` near its join window's edge.
const test = servicesTest({ prefix: 'allrev2' });

const CONSUMER = 'svc-hall';
let dbs: TestDatabases;
let dir: string;

const pairsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'pair');
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const all = (out: string, ...more: string[]) => allArgv(CONSUMER, out, ...more);

/** Moves every row of the task table `minutes` into the past, as the SH clock would see them later. */
async function age(minutes: number): Promise<void> {
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET create_time = create_time - INTERVAL ? MINUTE, finished_at = finished_at - INTERVAL ? MINUTE, claim_expires_at = claim_expires_at - INTERVAL ? MINUTE`,
    [minutes, minutes, minutes],
  );
  await dbs.admin.query(`UPDATE \`${dbs.shName}\`.fcctl_reconcile_join SET joined_at = joined_at - INTERVAL ? MINUTE`, [
    minutes,
  ]);
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  dir = tmp;
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env: dbs.env() })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '60', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env: dbs.env() },
  );
  expect(seed.code, seed.stderr).toBe(0);
});

test("§3 two processes of one night started minutes apart join one run, even when the first joined a finished run near the window's edge", async () => {
  const out = join(dir, 'edge');
  const first = await runCli(all(out), { env: dbs.env() });
  expect(first.code, first.stderr).toBe(0);
  const firstId = String(summaryOf(first.stdout)['runId']);
  // 28 minutes after that run's last activity, pod A of the night starts: it joins that run (done: pairsRun 0)
  await age(28);
  const a = await runCli(all(out), { env: dbs.env() });
  expect(a.code, a.stderr).toBe(0);
  expect(summaryOf(a.stdout)).toMatchObject({ runId: firstId, pairsRun: 0 });
  // pod B of the same night starts 3 minutes after pod A: it must join the run pod A joined
  await age(3);
  const b = await runCli(all(out), { env: dbs.env() });
  expect(b.code, b.stderr).toBe(0);
  expect(summaryOf(b.stdout)['runId']).toBe(summaryOf(a.stdout)['runId']);
  expect(pairsOf(b.stdout)).toHaveLength(0);
});

test('§3 four processes started at the same moment on a table with no recent run agree on one run, each pair once', async () => {
  await age(24 * 60);
  const out = join(dir, 'together');
  const runs = await Promise.all([0, 1, 2, 3].map(() => runCli(all(out, '--concurrency', '1'), { env: dbs.env() })));
  expect(
    runs.map((r) => r.code),
    runs.map((r) => r.stderr).join(''),
  ).toEqual([0, 0, 0, 0]);
  expect(new Set(runs.map((r) => summaryOf(r.stdout)['runId'])).size).toBe(1);
  expect(runs.reduce((n, r) => n + pairsOf(r.stdout).length, 0)).toBe(6);
});
