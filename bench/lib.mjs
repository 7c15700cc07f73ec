// What every bench script shares: where the built binary is, how options are declared, how a
// child's output is collected, how the machine is named in a report.
import { readFileSync } from 'node:fs';
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
