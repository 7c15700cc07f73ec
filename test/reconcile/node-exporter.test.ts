import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parseExposition } from '../../src/lib/metrics/parse.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { startNodeExporter } from '../helpers/node-exporter.js';
import { servicesTest } from '../helpers/services.js';

// Issue 26 §5: the nightly --all file and one-off pair runs (and a command run twice into two
// files) in one textfile-collector directory, read by the real node_exporter: no series twice,
// whatever the files are called.
const test = servicesTest({ prefix: 'nodeexp' });
const CONSUMER = 'svc-hall';
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '60', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env },
  );
  expect(seed.code, seed.stderr).toBe(0);
  dir = tmp;
});

test('nightly --all, two one-off runs of one of its pairs into other files, apply-command scan into two files: node_exporter reports every series, none twice', {
  timeout: 180_000,
}, async ({ onTestFinished }) => {
  const prom = join(dir, 'textfile_collector');
  mkdirSync(prom);
  const cli = async (argv: readonly string[]) => {
    const r = await runCli(['--json', ...argv], { env });
    expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(0);
    return r;
  };
  // two nights, as the issue found it; then the morning after's one-off runs of one pair
  for (const night of [1, 2])
    await cli([
      'reconcile',
      'run',
      '--all',
      '--consumer',
      CONSUMER,
      '--out-dir',
      join(dir, 'nightly'),
      '--run-id',
      `night-${night}`,
      '--metrics-file',
      join(prom, 'fcctl_reconcile.prom'),
    ]);
  const nightly = await cli([
    'reconcile',
    'run',
    '--all',
    '--consumer',
    CONSUMER,
    '--out-dir',
    join(dir, 'nightly'),
    '--run-id',
    'night-3',
    '--metrics-file',
    join(prom, 'fcctl_reconcile.prom'),
  ]);
  const pair = jsonLines(nightly.stdout).find((l) => l['type'] === 'pair')!;
  const [school, form] = [String(pair['school']), String(pair['form'])];
  const oneOff = (file: string, out: string) =>
    cli([
      'reconcile',
      'run',
      '--school',
      school,
      '--form',
      form,
      '--out-dir',
      join(dir, out),
      '--metrics-file',
      join(prom, file),
    ]);
  await oneOff('fcctl_reconcile_pair.prom', 'oneoff-1');
  await oneOff('zz_again.prom', 'oneoff-2');
  await cli(['apply-command', 'scan', '--metrics-file', join(prom, 'fcctl_apply_scan.prom')]);
  await cli(['apply-command', 'scan', '--metrics-file', join(prom, 'adhoc.prom')]);
  expect(
    readdirSync(prom)
      .filter((f) => f.endsWith('.prom'))
      .sort(),
  ).toEqual([
    'adhoc.prom',
    'fcctl_apply_scan.prom',
    'fcctl_reconcile.prom',
    'fcctl_reconcile_pair.prom',
    'zz_again.prom',
  ]);

  const ne = await startNodeExporter(prom);
  onTestFinished(() => ne.stop());
  const scraped = await ne.scrape();
  await ne.scrape(); // the collector logs its gather errors on every scrape
  // its log holds one line per gather error ("collected metric … was collected before with the
  // same name and label values"), the series listed in it
  const errors = ne
    .log()
    .split('\n')
    .filter((l) => /level=error/.test(l));
  expect(
    errors.map((l) => l.slice(0, 400)),
    `${(ne.log().match(/was collected before/g) ?? []).length} series collected twice`,
  ).toEqual([]);
  const families = new Map(parseExposition(scraped).map((f) => [f.name, f]));
  expect(families.get('node_textfile_scrape_error')?.samples.map((s) => s.value)).toEqual([0]);
  // every file read, and the pair's series there from each of its three files
  expect(families.get('node_textfile_mtime_seconds')?.samples).toHaveLength(5);
  const pairRows = families
    .get('fcctl_reconcile_rows')!
    .samples.filter(
      (s) => s.labels['school'] === school && s.labels['form'] === form && s.labels['category'] === 'IN_SYNC',
    );
  expect(pairRows.map((s) => s.labels['metrics_file']).sort()).toEqual([
    'fcctl_reconcile.prom',
    'fcctl_reconcile_pair.prom',
    'zz_again.prom',
  ]);
  expect(new Set(pairRows.map((s) => s.value)).size).toBe(1); // the same databases: the same diff
  const exitCodes = families.get('fcctl_run_exit_code')!.samples;
  expect(
    exitCodes
      .filter((s) => s.labels['command'] === 'apply-command scan')
      .map((s) => s.labels['metrics_file'])
      .sort(),
  ).toEqual(['adhoc.prom', 'fcctl_apply_scan.prom']);
  // the nightly run's own series: command only, told apart from the one-off runs' by their file
  expect(exitCodes.filter((s) => s.labels['command'] === 'reconcile run' && s.labels['school'] === undefined)).toEqual([
    expect.objectContaining({ labels: { command: 'reconcile run', metrics_file: 'fcctl_reconcile.prom' }, value: 0 }),
  ]);
  // three nights: the nightly file's counters kept adding up
  expect(
    families
      .get('fcctl_runs_total')!
      .samples.find(
        (s) =>
          s.labels['metrics_file'] === 'fcctl_reconcile.prom' &&
          s.labels['school'] === undefined &&
          s.labels['exit_code'] === '0',
      )?.value,
  ).toBe(3);
});
