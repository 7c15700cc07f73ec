#!/usr/bin/env node
// `reconcile run --all` against the wrapper way — one `reconcile run` process per pair, one after
// the other, as a shell loop over a pair list would run them (issue 19 §1 and its acceptance: goal
// ≥ 3× faster; peak RSS flat from 50 to 200 pairs, goal ≤ +20 %):
//
//   npm run build && node bench/reconcile-all.mjs [--schools 67] [--answers 100000] [--json] [--keep]
//
// Fresh FC and SH databases get `fcctl dev seed` data: --schools × 3 forms pairs (67 → 201 pairs)
// of about --answers / pairs answers each (100000 → ~500), with the seed's drift of every category on
// the SH side. In the same script, against the same data:
// - wrapper: `fcctl reconcile run --school S --form F --out-dir D/S/F` for every pair, in turn;
// - all: `fcctl reconcile run --all` (default --concurrency 4), and `--concurrency 1` (start-up
//   paid once, no parallelism: what the single process alone saves);
// - RSS: peak VmHWM of `--all` over the first quarter of the schools (~50 pairs) and over all of them.
// Every pair's report.csv of the --all run must be byte-identical to the wrapper's.
//
// Needs FCCTL_TEST_MYSQL_URL (a user that may create databases); when unset, the one
// `scripts/services.sh env` prints for the local services.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchArgs, collect, cpuText, FCCTL as fcctl, flag, loadText, sampleMemory, scratch, str } from './lib.mjs';

const CONSUMER = 'svc-hall';
const args = benchArgs({ schools: str('67'), answers: str('100000'), dir: str(os.tmpdir()), keep: flag() });
const { dbs, dir, admin, log, cleanup } = await scratch('all', args, ['_fc', '_sh']);
const env = { FCCTL_FC_DATABASE_URL: dbs[0].url, FCCTL_SH_DATABASE_URL: dbs[1].url };

/** Runs fcctl; resolves with its wall time, stdout and peak memory; exit codes other than `ok` throw. */
async function run(argv, ok = [0]) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [fcctl, ...argv], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const mem = sampleMemory(child.pid);
  const text = collect(child);
  child.stdout.on('end', () => mem.sample());
  const [code] = await once(child, 'exit');
  const seconds = (performance.now() - t0) / 1000;
  const { peakHwmMb } = mem.stop();
  if (!ok.includes(code)) throw new Error(`fcctl ${argv.join(' ')} exited ${code}: ${text.err.trim().slice(0, 500)}`);
  return { seconds, stdout: text.out, peakHwmMb };
}

const pairLines = (stdout) =>
  stdout
    .split('\n')
    .filter((l) => l.includes('"type":"pair"'))
    .map((l) => JSON.parse(l));
const report = (d) => readFileSync(join(d, 'report.csv'), 'utf8');

let exitCode = 0;
try {
  for (const db of dbs) await admin.query(`CREATE DATABASE \`${db.name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await run(['db', 'init', '--side', 'all', '--dev']);
  const t = performance.now();
  await run([
    'dev',
    'seed',
    '--answers',
    args.answers,
    '--schools',
    args.schools,
    '--consumer-keys',
    CONSUMER,
    '--no-grant-mix',
  ]);
  const allArgs = (out, more = []) => [
    '--json',
    'reconcile',
    'run',
    '--all',
    '--consumer',
    CONSUMER,
    '--out-dir',
    out,
    '--run-id',
    `bench-${process.pid}-${basename(out)}`,
    ...more,
  ];
  // The pair list, as a wrapper script would read it (and a warm-up of the databases' caches).
  const listed = pairLines((await run(allArgs(join(dir, 'warm')))).stdout).map((p) => ({
    school: p.school,
    form: p.form,
  }));
  log(
    `reconcile run --all vs one process per pair: ${listed.length} pairs, ${args.answers} answers (seeded in ${((performance.now() - t) / 1000).toFixed(1)} s); ${cpuText()}, load ${loadText()}`,
  );

  const w0 = performance.now();
  for (const p of listed)
    await run([
      '--json',
      'reconcile',
      'run',
      '--school',
      p.school,
      '--form',
      p.form,
      '--out-dir',
      join(dir, 'wrapper', p.school, p.form),
    ]);
  const wrapperSeconds = (performance.now() - w0) / 1000;
  log(`  wrapper (a process per pair, in turn): ${wrapperSeconds.toFixed(1)} s`);

  const all = await run(allArgs(join(dir, 'all')));
  const one = await run(allArgs(join(dir, 'all-c1'), ['--concurrency', '1']));
  const pairs = pairLines(all.stdout);
  if (pairs.length !== listed.length) throw new Error(`--all ran ${pairs.length} pairs, the list has ${listed.length}`);
  for (const p of pairs)
    if (report(p.dir) !== report(join(dir, 'wrapper', p.school, p.form)))
      throw new Error(`report.csv of ${p.school}/${p.form} differs from the wrapper's`);
  const speedup = wrapperSeconds / all.seconds;
  log(
    `  --all (concurrency 4): ${all.seconds.toFixed(1)} s → ${speedup.toFixed(2)}× (goal ≥ 3); --concurrency 1: ${one.seconds.toFixed(1)} s → ${(wrapperSeconds / one.seconds).toFixed(2)}×; reports identical`,
  );

  const quarter = Array.from({ length: Math.max(1, Math.round(Number(args.schools) / 4)) }, (_, i) => [
    '--school',
    String(5 + i),
  ]).flat();
  const small = await run(allArgs(join(dir, 'rss-small'), quarter));
  const smallPairs = pairLines(small.stdout).length;
  const growth = all.peakHwmMb / small.peakHwmMb - 1;
  log(
    `  peak RSS: ${small.peakHwmMb.toFixed(0)} MB at ${smallPairs} pairs, ${all.peakHwmMb.toFixed(0)} MB at ${pairs.length} pairs → ${(growth * 100).toFixed(1)} % (goal ≤ 20 %)`,
  );
  const result = {
    pairs: pairs.length,
    answers: Number(args.answers),
    wrapperSeconds,
    allSeconds: all.seconds,
    allConcurrency1Seconds: one.seconds,
    speedup,
    speedupConcurrency1: wrapperSeconds / one.seconds,
    rss: { smallPairs, smallMb: small.peakHwmMb, pairs: pairs.length, mb: all.peakHwmMb, growth },
    goalMet: speedup >= 3 && growth <= 0.2,
  };
  if (args.json) console.log(JSON.stringify(result));
} catch (err) {
  console.error(`bench/reconcile-all: ${err.message}`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
