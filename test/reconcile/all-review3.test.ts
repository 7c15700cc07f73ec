import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { cleanEnv, FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

// Issue 26 §9 reviewed again: a pair run into the root of an --all run still in progress (its summary.json not yet written).
const test = servicesTest({ prefix: 'allrev3' });
const CONSUMER = 'svc-hall';
let dbs: TestDatabases;
let dir: string;
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  dir = tmp;
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env: dbs.env() })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '600', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env: dbs.env() },
  );
  expect(seed.code, seed.stderr).toBe(0);
});

test('§9 a single-pair run pointed at the root of an --all run in progress is refused (exit 4), and the --all run ends clean', async () => {
  const root = join(dir, 'root');
  const child = spawn(
    process.execPath,
    [
      FCCTL_BIN,
      '--json',
      'reconcile',
      'run',
      '--all',
      '--consumer',
      CONSUMER,
      '--out-dir',
      root,
      '--run-id',
      'busy',
      '--concurrency',
      '1',
      '--size',
      '1',
    ],
    { env: cleanEnv(dbs.env()) as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number>((res) => child.on('close', (code) => res(code ?? -1)));
  await waitFor('a pair directory made', async () => jsonLines(stdout).some((l) => l['type'] === 'pair'), 60_000);
  // the --all run writes its summary.json as it begins: what marks the root while it runs
  expect(existsSync(join(root, 'summary.json'))).toBe(true);
  const [row] = (
    await dbs.admin.query(
      `SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f FROM \`${dbs.shName}\`.fc_answer_projection ORDER BY sch_id, form_uuid LIMIT 1`,
    )
  )[0] as Array<{ s: string; f: string }>;
  const single = await runCli(['--json', 'reconcile', 'run', '--school', row!.s, '--form', row!.f, '--out-dir', root], {
    env: dbs.env(),
  });
  const code = await exited;
  expect({ single: single.code, all: code }, single.stderr + stderr).toEqual({ single: 4, all: 0 });
  expect(JSON.parse(readFileSync(join(root, 'summary.json'), 'utf8'))['format']).toBe('fcctl.reconcile.all.v1');
  expect(summaryOf(stdout)['exitCode']).toBe(0);
});
