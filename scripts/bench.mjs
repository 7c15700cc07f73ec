#!/usr/bin/env node
// `npm run bench -- <name> [options…]`: runs one benchmark from bench/ against the built dist/.
// `npm run bench` alone lists them. To add one, add a line to BENCHES below.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** name → the script (relative to the repository root) and one line about what it measures. */
const BENCHES = {
  canon: {
    script: 'bench/canon.mjs',
    about: 'fc.canon.v1 hash throughput vs `canonicalize` and JSON.parse+stringify, 10k realistic snapshots',
  },
  'canon-lines': {
    script: 'bench/canon-lines.mjs',
    about: '`fcctl canon hash --lines` over a generated ~1 GB JSONL file: MB/s and peak RSS (goal < 200 MB)',
  },
  'apply-command': {
    script: 'bench/apply-command.mjs',
    about:
      '`apply-command resolve-unknown` rows/s against the flow-center stand-in (20 ms, concurrency 16) vs the concurrency/latency bound (goal ≥ 0.8×)',
  },
  'flow-transport': {
    script: 'bench/flow-transport.mjs',
    about:
      'signed lookups/s through FlowClient (node:http) and the global fetch for comparison against the stand-in, no database: the transport ceiling',
  },
  send: {
    script: 'bench/send.mjs',
    about:
      '`deliveries send` rows/s vs raw amqplib publish-with-confirms and vs a minimal relay (raw publish + lease claim + guarded write) on the same broker, body size and window, 20k rows of 1 KB, CPU per row of fcctl, MariaDB and RabbitMQ; `--history N` adds N old rows (goals: ≥ 0.7× raw, ≥ 0.9× minimal, fcctl ≤ 0.07 ms and MariaDB ≤ 0.05 ms per row)',
  },
  manifest: {
    script: 'bench/manifest.mjs',
    about:
      '`manifest scan` rows/s vs one streaming SELECT over 500k projection rows (goal ≥ 0.7×), its peak RSS at 100k and 500k (goal ≤ +20 %), `reconcile diff` of two 1M-row manifests',
  },
  projection: {
    script: 'bench/projection.mjs',
    about:
      '`projection repair-authoritative --plan --execute` rows/s over a 10k-row plan (⅓ missing, ⅓ stale, ⅓ hash conflict) at concurrency 8, 4, 1, and a dry run',
  },
  'reconcile-all': {
    script: 'bench/reconcile-all.mjs',
    about:
      '`reconcile run --all` over ~200 pairs × ~500 answers vs one `reconcile run` process per pair in turn (goal ≥ 3×), its peak RSS at ~50 and ~200 pairs (goal ≤ +20 %)',
  },
  report: {
    script: 'bench/report.mjs',
    about:
      '`reconcile report` page of 10,000 pairs × 30 nights (synthetic), 1 pair in 10 differing and the worst case (every pair, 5 categories): size (goal ≤ 5 MB), render and write (< 5 s), Chromium load to interactive (< 2 s), search, sort, category filter and drill-down (< 200 ms)',
  },
  startup: {
    script: 'bench/startup.mjs',
    about:
      'start-up off a terminal: median wall time of 10× `fcctl --version` and 10× `deliveries send --dry-run` on an empty outbox vs `node -e 0`, and whether ink or React was loaded (goal: neither)',
  },
  scan: {
    script: 'bench/scan.mjs',
    about:
      '`deliveries scan` wall time next to 20k PENDING rows, alone and after `--history N` (2,000,000) BROKER_ACCEPTED + N/40 DEAD rows, and its statements one by one (goal < 1 s at 2M)',
  },
  explain: {
    script: 'bench/explain.mjs',
    about:
      '`explain answer` wall time for one answer among 2,000,000 outbox rows and 1,000,000 projection rows (goal < 1 s, start-up included)',
  },
  latency: {
    script: 'bench/latency.mjs',
    about:
      '`deliveries send --follow`: commit-to-queue latency at 200 rows/s committed one at a time (goals p50 ≤ 150 ms, p99 ≤ 500 ms) and the same rows under a cron minute, idle CPU of relay + MariaDB (goal ≤ 2 % of a core), rows/s under saturation vs a batch run (goal ≥ 1×), RSS and handles after 100k and 1M rows (goal ≤ +10 %)',
  },
  throttle: {
    script: 'bench/throttle.mjs',
    about:
      '`manifest scan` with a `--max-load` limit never reached vs without, 200k rows, same run, alternating order (goal ≤ 1.05×)',
  },
};

const [name, ...rest] = process.argv.slice(2);

function list(to = console.log) {
  to(
    'usage: npm run bench [-- <name> [options…]]   (no name or `all`: every benchmark in turn, then BENCHMARKS.md rewritten)\n',
  );
  const width = Math.max(...Object.keys(BENCHES).map((k) => k.length));
  for (const [key, b] of Object.entries(BENCHES)) to(`  ${key.padEnd(width)}  ${b.about}  (${b.script})`);
}

if (name === '--help' || name === '-h' || name === 'list') {
  list();
  process.exit(0);
}
const bench =
  name === undefined || name === 'all' ? { script: null } : Object.hasOwn(BENCHES, name) ? BENCHES[name] : undefined;
if (!bench) {
  console.error(`bench: no benchmark named ${JSON.stringify(name)}\n`);
  list(console.error);
  process.exit(2);
}
if (!existsSync(new URL('../dist/main.js', import.meta.url))) {
  console.error('bench: dist/ is missing; run `npm run build` first');
  process.exit(2);
}
// The benches run against the local services unless the caller points them elsewhere.
const env = { ...process.env };
if (!env.FCCTL_TEST_MYSQL_URL || !env.FCCTL_TEST_AMQP_URL) {
  const text = spawnSync('bash', [`${root}scripts/services.sh`, 'env'], { encoding: 'utf8' }).stdout ?? '';
  for (const m of text.matchAll(/^export (\w+)='([^']*)'$/gm)) env[m[1]] ??= m[2];
}
if (bench.script === null) {
  // `npm run bench` (or `all`): every benchmark in turn with --json, each one's time, then the
  // summary table of BENCHMARKS.md rewritten from the results (issue 10: under 15 minutes).
  const { summaryBlock, rewrite } = await import('./bench-report.mjs');
  const started = Date.now();
  const results = {};
  let worst = 0;
  for (const [key, b] of Object.entries(BENCHES)) {
    const t0 = Date.now();
    console.log(`\n=== ${key} (${b.script} --json)`);
    const r = spawnSync(process.execPath, [b.script, '--json'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    const last = (r.stdout ?? '')
      .trim()
      .split('\n')
      .reverse()
      .find((l) => l.startsWith('{'));
    let parsed = null;
    try {
      parsed = r.status === 0 && last ? JSON.parse(last) : null;
    } catch {
      parsed = null;
    }
    results[key] = parsed;
    console.log(last ?? '(no result)');
    console.log(`=== ${key}: exit ${r.status}, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    worst = Math.max(worst, r.status ?? 1);
  }
  const minutes = (Date.now() - started) / 60000;
  const machine = await machineFacts(env);
  const path = new URL('../BENCHMARKS.md', import.meta.url);
  const block = summaryBlock(results, machine, minutes);
  writeFileSync(path, rewrite(readFileSync(path, 'utf8'), block));
  console.log(`\n${block}\n\nall benchmarks: ${minutes.toFixed(1)} minutes; BENCHMARKS.md rewritten`);
  process.exit(worst);
}

/** Cores, memory, Node, MariaDB and RabbitMQ versions, for the report's machine line. */
async function machineFacts(env) {
  const os = await import('node:os');
  const facts = {
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model?.trim() ?? '?',
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    mariadb: 'MariaDB ?',
    rabbitmq: '?',
  };
  try {
    const mysql = (await import('mysql2/promise')).default;
    const c = await mysql.createConnection(env.FCCTL_TEST_MYSQL_URL);
    const [[row]] = await c.query('SELECT VERSION() AS v');
    facts.mariadb = `MariaDB/MySQL ${row.v}`;
    await c.end();
  } catch {}
  try {
    const amqp = (await import('amqplib')).default;
    const c = await amqp.connect(env.FCCTL_TEST_AMQP_URL);
    facts.rabbitmq = String(c.connection.serverProperties?.version ?? '?');
    await c.close();
  } catch {}
  return facts;
}
const r = spawnSync(process.execPath, [bench.script, ...rest], { cwd: root, stdio: 'inherit', env });
process.exit(r.status ?? 1);
