#!/usr/bin/env node
// `fcctl canon hash --lines` over a large JSON Lines file, as a real child process: throughput and
// the child's peak RSS (goal: under 200 MB however large the input).
//
//   npm run build && node bench/canon-lines.mjs [--mb 1024] [--docs 10000] [--seed 42] [--dir /tmp] [--keep] [--json]
//
// The file is the realistic snapshot corpus of bench/canon.mjs (0.5–8 KB answers, nested values,
// Chinese text, decimals) written out again and again until it reaches --mb MiB, one refused line
// (`{"a":1,}`) after each copy so error lines are exercised too. It is streamed to disk, never held
// in memory, and deleted afterwards (unless --keep). The child's stdout is counted, not stored:
// one output line per input line, and exactly the expected number of error lines.
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { contentHash } from '../dist/lib/canon/index.js';
import { benchArgs, cpuText, FCCTL as fcctl, flag, loadText, ROOT as root, sampleMemory, str } from './lib.mjs';

const args = benchArgs({ mb: str('1024'), docs: str('10000'), seed: str('42'), dir: str(os.tmpdir()), keep: flag() });
const targetBytes = Number(args.mb) * 1024 * 1024;
const RSS_GOAL_MB = 200;
const BAD_LINE = Buffer.from('{"a":1,}\n');

const dir = mkdtempSync(join(args.dir, 'fcctl-bench-lines-'));
const cleanup = () => {
  if (!args.keep) rmSync(dir, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

try {
  // 1. The corpus, once, then the big file by streaming copies of it.
  const corpus = join(dir, 'corpus.jsonl');
  const dump = spawnSync(
    process.execPath,
    [join(root, 'bench/canon.mjs'), '--dump', corpus, '--docs', args.docs, '--seed', args.seed],
    { stdio: 'inherit' },
  );
  if (dump.status !== 0) throw new Error('could not build the corpus');
  const corpusBytes = statSync(corpus).size;
  const corpusText = readFileSync(corpus);
  const firstLine = corpusText.subarray(0, corpusText.indexOf(0x0a));
  const docsPerCopy = Number(args.docs);

  const big = join(dir, 'big.jsonl');
  const genStart = performance.now();
  const out = createWriteStream(big);
  let written = 0;
  let copies = 0;
  while (written < targetBytes) {
    for await (const chunk of createReadStream(corpus, { highWaterMark: 1024 * 1024 })) {
      if (!out.write(chunk)) await once(out, 'drain');
    }
    if (!out.write(BAD_LINE)) await once(out, 'drain');
    written += corpusBytes + BAD_LINE.length;
    copies++;
  }
  out.end();
  await once(out, 'finish');
  const genSeconds = (performance.now() - genStart) / 1000;
  const inputBytes = statSync(big).size;
  const inputLines = copies * (docsPerCopy + 1);

  // 2. Start-up cost of the binary alone (an empty input), to separate it from the streaming rate.
  const s0 = performance.now();
  spawnSync(process.execPath, [fcctl, 'canon', 'hash', '--lines'], { input: '' });
  const startupSeconds = (performance.now() - s0) / 1000;

  // 3. The run: count output lines and error lines as they stream by; sample memory.
  const t0 = performance.now();
  const child = spawn(process.execPath, [fcctl, 'canon', 'hash', '--lines', big], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const mem = sampleMemory(child.pid);
  let outputLines = 0;
  let errorLines = 0;
  let firstOutput = '';
  let lineHead = ''; // the first 6 bytes of the current output line
  child.stdout.on('data', (chunk) => {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (c === 0x0a) {
        if (outputLines === 0) firstOutput = lineHead;
        if (lineHead === 'error\t') errorLines++;
        outputLines++;
        lineHead = '';
      } else if (lineHead.length < 6) lineHead += String.fromCharCode(c);
    }
  });
  // VmHWM must be read before the process is reaped: sample right when stdout ends.
  child.stdout.on('end', () => mem.sample());
  const [code] = await once(child, 'exit');
  const seconds = (performance.now() - t0) / 1000;
  const { peakHwmMb, peakRssMb, cpuSeconds } = mem.stop();

  const expectedFirst = contentHash(firstLine).slice(0, 6);
  const checks = {
    exitCode: code, // 1: the refused lines
    linesMatch: outputLines === inputLines,
    errorsMatch: errorLines === copies,
    firstHashMatches: firstOutput === expectedFirst,
  };
  const mb = inputBytes / 1e6;
  const result = {
    node: process.version,
    cpus: cpuText(),
    loadavg: os.loadavg(),
    date: new Date().toISOString(),
    command: `node bin/fcctl canon hash --lines ${big}`,
    inputBytes,
    inputLines,
    outputLines,
    errorLines,
    generateSeconds: genSeconds,
    seconds,
    startupSeconds,
    mbPerS: mb / seconds,
    mbPerSAfterStartup: mb / Math.max(1e-9, seconds - startupSeconds),
    cpuSeconds,
    mbPerCpuS: mb / cpuSeconds,
    peakRssMb: Math.max(peakHwmMb, peakRssMb),
    rssGoalMb: RSS_GOAL_MB,
    checks,
  };
  const ok =
    code === 1 && checks.linesMatch && checks.errorsMatch && checks.firstHashMatches && result.peakRssMb < RSS_GOAL_MB;

  if (args.json) {
    console.log(JSON.stringify({ ...result, ok }));
  } else {
    console.log(`node ${process.version}, ${result.cpus}, load average ${loadText(result.loadavg)}`);
    console.log(
      `input: ${(inputBytes / 1e6).toFixed(0)} MB (${(inputBytes / 2 ** 20).toFixed(0)} MiB), ${inputLines} lines (${copies} copies of a ${docsPerCopy}-snapshot corpus + 1 refused line each), generated in ${genSeconds.toFixed(1)} s, read from the page cache`,
    );
    console.log('');
    console.log('| measure | value |');
    console.log('|---|---:|');
    console.log(`| wall time | ${seconds.toFixed(2)} s (start-up alone ${startupSeconds.toFixed(2)} s) |`);
    console.log(
      `| throughput | ${result.mbPerS.toFixed(1)} MB/s (${result.mbPerSAfterStartup.toFixed(1)} MB/s without start-up) |`,
    );
    console.log(
      `| CPU time of the child | ${cpuSeconds.toFixed(2)} s (${result.mbPerCpuS.toFixed(1)} MB per CPU second) |`,
    );
    console.log(`| peak RSS of the child (VmHWM) | ${result.peakRssMb.toFixed(1)} MB (goal < ${RSS_GOAL_MB} MB) |`);
    console.log(`| output lines / input lines | ${outputLines} / ${inputLines} |`);
    console.log(`| error lines (expected ${copies}) | ${errorLines} |`);
    console.log(`| exit code (1: refused lines present) | ${code} |`);
    console.log('');
    console.log(
      ok
        ? 'OK: one output line per input line, peak RSS under the goal'
        : `FAILED: ${JSON.stringify(checks)}, peak RSS ${result.peakRssMb.toFixed(1)} MB`,
    );
  }
  process.exitCode = ok ? 0 : 1;
} finally {
  cleanup();
}
