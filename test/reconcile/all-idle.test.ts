import { spawn } from 'node:child_process';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { expect } from 'vitest';
import { cleanEnv, FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

// A process of `reconcile run --all` must not leave while pairs it could run are PENDING: its claim
// reads with FOR UPDATE SKIP LOCKED, which also skips rows another transaction holds only for a
// moment — a second process registering the same pairs (INSERT IGNORE takes shared locks on them).
const test = servicesTest({ prefix: 'allidle' });
const CONSUMER = 'svc-idle';

test('pairs locked for a moment by another process registering them are waited for and run, not left PENDING', async ({
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
  const all = (out: string, runId: string) => [
    '--json',
    'reconcile',
    'run',
    '--all',
    '--consumer',
    CONSUMER,
    '--out-dir',
    join(tmp, out),
    '--run-id',
    runId,
  ];
  // the run's pairs, registered by a first run (what a process of run `held` finds)
  const probe = await runCli(all('probe', 'probe'), { env });
  expect(probe.code, probe.stderr).toBe(0);
  const task = `\`${dbs.shName}\`.fcctl_reconcile_task`;
  await dbs.admin.query(
    `INSERT INTO ${task} (run_id, sch_id, form_uuid, create_time) SELECT 'held', sch_id, form_uuid, UTC_TIMESTAMP() FROM ${task} WHERE run_id = 'probe'`,
  );
  const [counted] = await dbs.admin.query(`SELECT COUNT(*) AS n FROM ${task} WHERE run_id = 'held'`);
  const pairs = Number((counted as Array<{ n: number | string }>)[0]?.n);
  expect(Number(pairs)).toBeGreaterThan(2);

  // Another process registering the same pairs, its INSERT IGNORE held open: shared locks on every row.
  const other = await mysql.createConnection({ uri: dbs.shUrl });
  try {
    await other.query('BEGIN');
    await other.query(
      `INSERT IGNORE INTO ${task} (run_id, sch_id, form_uuid, create_time) SELECT run_id, sch_id, form_uuid, UTC_TIMESTAMP() FROM ${task} WHERE run_id = 'held'`,
    );
    const child = spawn(process.execPath, [FCCTL_BIN, ...all('held', 'held'), '--concurrency', '2'], {
      env: cleanEnv(env) as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const io = { out: '', err: '' };
    child.stdout.on('data', (c: Buffer) => (io.out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (io.err += c.toString('utf8')));
    let code: number | null = null;
    const exited = new Promise<number>((res) => child.on('close', (c) => res((code = c ?? -1))));
    // registered and claiming (its `pairs` line), then the lock kept a while: it must not end meanwhile
    await waitFor('the process to find its pairs', async () => jsonLines(io.out).some((l) => l['type'] === 'pairs'));
    await new Promise((r) => setTimeout(r, 1500));
    const endedWhileLocked = code;
    await other.query('COMMIT');
    await exited;
    const summary = jsonLines(io.out).find((l) => l['type'] === 'summary')!;
    // before the fix: ended at once, exit 0, `pairsRun: 0` and every pair left PENDING
    expect({ endedWhileLocked, code, stderr: io.err, pairsRun: summary['pairsRun'], run: summary['run'] }).toEqual({
      endedWhileLocked: null,
      code: 0,
      stderr: '',
      pairsRun: Number(pairs),
      run: {
        pairs: Number(pairs),
        byState: { PENDING: 0, CLAIMED: 0, DONE: Number(pairs), FAILED: 0 },
        pairsWithDifferences: expect.any(Number),
      },
    });
  } finally {
    await other.end();
  }
});
