// What every bench script shares: where the built binary is, how options are declared, how a
// child's output is collected, how the machine is named in a report.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The checkout, with a trailing slash. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The built command (npm run build first). */
export const FCCTL = join(ROOT, 'bin/fcctl');

/** A string option, with its default when it has one. */
export const str = (value) => (value === undefined ? { type: 'string' } : { type: 'string', default: value });
/** A boolean option, off by default. */
export const flag = () => ({ type: 'boolean', default: false });

/** The script's options (node:util parseArgs); every bench takes --json. */
export function benchArgs(options) {
  return parseArgs({ options: { ...options, json: flag() } }).values;
}

/** The middle value; of an even count, the mean of the two middle ones. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A child's stdout and stderr, collected as text while it runs. */
export function collect(child) {
  const text = { out: '', err: '' };
  child.stdout.on('data', (c) => (text.out += c));
  child.stderr.on('data', (c) => (text.err += c));
  return text;
}

/** `8 × AMD EPYC …`: the machine's CPUs, as a report names them. */
export const cpuText = () => `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}`;
/** `0.52 0.40 0.31` */
export const loadText = (loadavg = os.loadavg()) => loadavg.map((x) => x.toFixed(2)).join(' ');

/** Peak of VmHWM (and VmRSS) from /proc/<pid>/status, sampled every `everyMs` until stopped. */
export function sampleMemory(pid, everyMs = 50) {
  let hwmKb = 0;
  let rssKb = 0;
  let cpuTicks = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      hwmKb = Math.max(hwmKb, Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      rssKb = Math.max(rssKb, Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpuTicks = Number(fields[11]) + Number(fields[12]); // utime + stime
    } catch {
      // the process has exited: keep the last sample
    }
  };
  const timer = setInterval(read, everyMs);
  read();
  return {
    stop: () => {
      clearInterval(timer);
      return { peakHwmMb: hwmKb / 1024, peakRssMb: rssKb / 1024, cpuSeconds: cpuTicks / 100 };
    },
    sample: read,
  };
}

/** FCCTL_TEST_MYSQL_URL, or the one `scripts/services.sh env` prints for the local services. */
export function testMysqlUrl() {
  if (process.env.FCCTL_TEST_MYSQL_URL) return process.env.FCCTL_TEST_MYSQL_URL;
  const r = spawnSync('bash', [join(ROOT, 'scripts/services.sh'), 'env'], { encoding: 'utf8' });
  const m = /^export FCCTL_TEST_MYSQL_URL=['"]?([^'"\n]+)['"]?$/m.exec(r.stdout ?? '');
  return m ? m[1] : undefined;
}

/**
 * A benchmark's scratch space: fresh database names on the FCCTL_TEST_MYSQL_URL server (exit 2
 * when it is unset), a temp directory, an admin connection, a log that --json silences, and a
 * cleanup (also on SIGINT) that drops the databases and removes the directory unless --keep.
 * @example const { dbs, dir, admin, log, cleanup } = await scratch('throttle', args) // dbs[0].name, dbs[0].url
 */
export async function scratch(kind, args, suffixes = ['']) {
  const adminUrl = testMysqlUrl();
  if (!adminUrl) {
    console.error(`bench/${kind}: FCCTL_TEST_MYSQL_URL is not set (eval "$(scripts/services.sh env)")`);
    process.exit(2);
  }
  const mysqlp = (await import('mysql2/promise')).default;
  const dbs = suffixes.map((s) => {
    const name = `fcctl_bench_${kind.replace(/-/g, '_')}_${process.pid}${s}`;
    return { name, url: `${adminUrl.replace(/\/$/, '')}/${name}` };
  });
  const dir = mkdtempSync(join(args.dir ?? os.tmpdir(), `fcctl-bench-${kind}-`));
  const admin = await mysqlp.createConnection({ uri: adminUrl, multipleStatements: true });
  const log = (s) => {
    if (!args.json) console.error(s);
  };
  const cleanup = async () => {
    for (const db of dbs) await admin.query(`DROP DATABASE IF EXISTS \`${db.name}\``).catch(() => undefined);
    await admin.end().catch(() => undefined);
    if (!args.keep) rmSync(dir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => {
    cleanup().finally(() => process.exit(130));
  });
  return { adminUrl, dbs, dir, admin, log, cleanup };
}
