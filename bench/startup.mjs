#!/usr/bin/env node
// fcctl's start-up off a terminal (issue 20: it loads neither ink nor React), as wall time of real
// processes:
//
//   npm run build && node bench/startup.mjs [--runs 10] [--json] [--keep]
//
// A fresh FC database (schema and the publisher's registry row, no answer_delivery rows) is the
// empty outbox. Each round runs every case once, in turn (the machine may be shared), after one
// warm-up round; reported is each case's median wall time over --runs rounds:
//   node          `node -e 0`: Node's own start, the floor
//   version       `fcctl --version`, stdout a pipe
//   dryRun        `fcctl deliveries send --dry-run` on the empty outbox, stdout a pipe
//   versionInk    `fcctl --version` with ink and React imported first: what they would add
//   versionTty    `fcctl --version` on a terminal (`script`), where nothing is drawn either
// Then each fcctl case runs once more under bench/record-modules.mjs; `inkLoaded` says whether
// ink or React was among the modules it loaded. Exit 1 when the off-terminal cases loaded them.
//
// Needs FCCTL_TEST_MYSQL_URL (a user that may create databases); when unset, the one
// `scripts/services.sh env` prints for the local services.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchArgs, cpuText, FCCTL, flag, loadText, ROOT, scratch, str, median } from './lib.mjs';

const args = benchArgs({ runs: str('10'), keep: flag() });
const RUNS = Number(args.runs);
const { dbs, dir, admin, log, cleanup } = await scratch('startup', args);
const { name: dbName, url: dbUrl } = dbs[0];
const PUBLISHER = { id: 100021, appKey: '100021', appCode: 'demo-publisher' };
const env = {
  ...process.env,
  FCCTL_FC_DATABASE_URL: dbUrl,
  FCCTL_APP_KEY: PUBLISHER.appKey,
  FCCTL_APP_CODE: PUBLISHER.appCode,
};
delete env.CI;
const RECORDER = join(ROOT, 'bench/record-modules.mjs');
const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

/** name → node's arguments, and whether it runs on a terminal (`script`, stdout a pty) */
const CASES = {
  node: { argv: ['-e', '0'] },
  version: { argv: [FCCTL, '--version'] },
  dryRun: { argv: [FCCTL, 'deliveries', 'send', '--dry-run'] },
  versionInk: { argv: ['--import', 'ink', '--import', 'react', FCCTL, '--version'] },
  versionTty: { argv: [FCCTL, '--version'], tty: true },
};

/** One run: its wall milliseconds; throws on a non-zero exit. */
function once(name, extraEnv = {}, nodeArgs = []) {
  const { argv, tty } = CASES[name];
  const node = [...nodeArgs, ...argv];
  const [cmd, full] = tty
    ? ['script', ['-qec', [process.execPath, ...node].map(shellQuote).join(' '), '/dev/null']]
    : [process.execPath, node];
  const t0 = performance.now();
  const r = spawnSync(cmd, full, {
    cwd: ROOT,
    env: { ...env, ...extraEnv },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${(r.stderr || r.stdout).trim().split('\n').pop()}`);
  return ms;
}

/** Whether a run of `name` loaded ink or React (bench/record-modules.mjs). */
function inkLoaded(name) {
  const file = join(dir, `${name}.modules`);
  once(name, { RECORD_MODULES_FILE: file }, ['--import', RECORDER]);
  const loaded = readFileSync(file, 'utf8');
  rmSync(file);
  return /\/node_modules\/(ink|react)\//.test(loaded);
}

let failed = false;
try {
  await admin.query(`CREATE DATABASE \`${dbName}\``);
  const init = spawnSync(process.execPath, [FCCTL, 'db', 'init', '--side', 'fc', '--dev', '--json'], {
    env,
    encoding: 'utf8',
  });
  if (init.status !== 0) throw new Error(`db init exited ${init.status}: ${init.stderr}`);
  await admin.query(`INSERT INTO \`${dbName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`, [
    PUBLISHER.id,
    PUBLISHER.appCode,
    PUBLISHER.appKey,
  ]);
  const names = Object.keys(CASES);
  for (const n of names) once(n); // warm-up: the file cache, the database's first connection
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < RUNS; i++) for (const n of names) times[n].push(once(n));
  const loads = Object.fromEntries(['version', 'dryRun', 'versionInk', 'versionTty'].map((n) => [n, inkLoaded(n)]));
  const medianMs = Object.fromEntries(names.map((n) => [n, Math.round(median(times[n]) * 10) / 10]));
  failed = loads.version || loads.dryRun;
  const result = { runs: RUNS, medianMs, inkLoaded: loads, goalMet: !failed, cpus: cpuText(), load: loadText() };
  if (args.json) console.log(JSON.stringify(result));
  else {
    log(`median wall ms of ${RUNS} runs (load ${result.load}, ${result.cpus}):`);
    for (const n of names)
      log(
        `  ${n.padEnd(10)} ${String(medianMs[n]).padStart(7)} ms${n in loads ? `  ink/React loaded: ${loads[n]}` : ''}`,
      );
    log(`goal (off a terminal neither ink nor React loaded): ${failed ? 'NOT met' : 'met'}`);
  }
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);
