import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'modes', init: 'all' });

/** Checkpoints, run files, diffs and evidence hold fcctl's own state: only their owner reads them. */
describe('files fcctl writes for itself are created 0600', () => {
  let dbs: TestDatabases;
  let dir: string;
  test.beforeAll(({ dbs: services, tmp }) => {
    dbs = services;
    dir = tmp;
  });
  const mode = (p: string) => statSync(p).mode & 0o777;

  test('manifest scan output and checkpoint; reconcile run files; metrics stay world-readable', async () => {
    const form = '0f0e0d0c-0000-4000-8000-000000000001';
    const out = join(dir, 'sh.jsonl');
    const scan = await runCli(
      [
        'manifest',
        'scan',
        '--side',
        'sh',
        '--school',
        '5',
        '--form',
        form,
        '--out',
        out,
        '--checkpoint',
        join(dir, 'sh.checkpoint.json'),
      ],
      { env: dbs.env() },
    );
    expect(scan.code).toBe(0);
    expect(mode(out)).toBe(0o600);
    expect(mode(join(dir, 'sh.checkpoint.json'))).toBe(0o600);
    const runDir = join(dir, 'run');
    // the databases are empty: --allow-empty, or the run is exit 1 (issue 17, an empty pair)
    const run = await runCli(
      [
        'reconcile',
        'run',
        '--school',
        '5',
        '--form',
        form,
        '--out-dir',
        runDir,
        '--metrics-file',
        join(dir, 'r.prom'),
        '--allow-empty',
      ],
      { env: dbs.env() },
    );
    expect(run.code).toBe(0);
    for (const f of [
      'run.json',
      'summary.json',
      'report.csv',
      'repair-plan.jsonl',
      'retire-candidates.jsonl',
      'fc-manifest.jsonl',
      'fc-manifest.checkpoint.json',
    ]) {
      expect([f, mode(join(runDir, f))]).toEqual([f, 0o600]);
    }
    // the node_exporter collector runs as another user: the metrics file must stay readable
    expect(mode(join(dir, 'r.prom'))).toBe(0o644);
  });
});
