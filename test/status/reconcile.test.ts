/**
 * `fcctl status`'s reconcile section from real `reconcile run --all` processes (issue 29 §2): the
 * night's cron line may give its run an id of its own (docs/commands/reconcile.md), and status
 * shows that run when it is the newest, not an older default-named one.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'streco' });
const CONSUMER = 'svc-status-reco';

type Doc = Record<string, any>;

test('the newest --all run is shown whether default-named or given by --run-id', async ({ dbs, tmp }) => {
  const env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  // 2 schools × 3 forms: 6 pairs on both sides, with drift
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '120', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  const all = async (dir: string, extra: string[] = []) => {
    const r = await spawnCli(
      ['--json', 'reconcile', 'run', '--all', '--consumer', CONSUMER, '--out-dir', join(tmp, dir), ...extra],
      { env },
    );
    expect(r.code, r.stderr).toBe(0);
    return jsonLines(r.stdout).find((l) => l['type'] === 'summary')!;
  };
  const run = async () => {
    const r = await runCli(['--json', 'status', '--fail-if', 'failed-pairs'], { env });
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as Doc)['reconcile'].run;
  };

  // a default-named run
  const first = await all('default');
  expect(await run()).toMatchObject({ runId: first['runId'], total: 6, done: 6, failed: 0, etaSeconds: 0 });

  // the next night's run, named by its cron line: it is the newest, and status shows it
  const named = await all('named', ['--run-id', 'nightly-named']);
  expect(named['runId']).toBe('nightly-named');
  expect(await run()).toMatchObject({
    runId: 'nightly-named',
    total: 6,
    done: 6,
    failed: 0,
    withDifferences: (named['run'] as Doc)['pairsWithDifferences'],
    processes: [],
    etaSeconds: 0,
  });
});
