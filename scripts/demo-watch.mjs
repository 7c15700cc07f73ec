#!/usr/bin/env node
// Runs the demo (scripts/demo.sh, or the command given after --) and times it as a watcher would:
// every line of its stdout and stderr is printed with the seconds since the start and the silence
// before it; the last line is `demo-watch: {"exitCode":…,"seconds":…,"maxGapSeconds":…,…}`.
// Exit 1 when the demo failed, ran --max-seconds (60) or more, or was silent --max-gap (5) seconds
// or more; test/ops/demo.test.ts runs it.
//   node scripts/demo-watch.mjs [--max-seconds N] [--max-gap N] [--quiet] [-- command args…]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const own = dash < 0 ? args : args.slice(0, dash);
const command = dash < 0 ? ['bash', fileURLToPath(new URL('./demo.sh', import.meta.url))] : args.slice(dash + 1);
const flag = (name, dflt) => {
  const i = own.indexOf(name);
  return i < 0 ? dflt : Number(own[i + 1]);
};
const maxSeconds = flag('--max-seconds', 60);
const maxGap = flag('--max-gap', 5);
const quiet = own.includes('--quiet');
if (!Number.isFinite(maxSeconds) || !Number.isFinite(maxGap) || command.length === 0) {
  console.error('usage: node scripts/demo-watch.mjs [--max-seconds N] [--max-gap N] [--quiet] [-- command args…]');
  process.exit(2);
}

const t0 = performance.now();
let last = t0;
let gap = { seconds: 0, before: '' };
let lines = 0;
// With --quiet, the last lines are kept to be printed when the demo fails.
const recent = [];
const seen = (line) => {
  const now = performance.now();
  const g = (now - last) / 1000;
  if (g > gap.seconds) gap = { seconds: g, before: line.slice(0, 120) };
  last = now;
  lines += 1;
  const text = `${((now - t0) / 1000).toFixed(2).padStart(7)} +${g.toFixed(2).padStart(5)} ${line}`;
  if (!quiet) process.stdout.write(`${text}\n`);
  else if (recent.push(text) > 40) recent.shift();
};
const reader = (stream) => {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (c) => {
    buf += c;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      seen(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  stream.on('end', () => buf !== '' && seen(buf));
};

const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
reader(child.stdout);
reader(child.stderr);
child.on('close', (code, signal) => {
  const end = performance.now();
  const tail = (end - last) / 1000;
  if (tail > gap.seconds) gap = { seconds: tail, before: '(the end)' };
  const r = {
    exitCode: code ?? (signal ? 128 : -1),
    seconds: Math.round((end - t0) / 10) / 100,
    maxGapSeconds: Math.round(gap.seconds * 100) / 100,
    maxGapBefore: gap.before,
    lines,
    maxSeconds,
    maxGap,
  };
  const ok = r.exitCode === 0 && r.seconds < maxSeconds && r.maxGapSeconds < maxGap;
  if (!ok && quiet) console.log(recent.join('\n'));
  console.log(`demo-watch: ${JSON.stringify(r)}`);
  process.exit(ok ? 0 : 1);
});
