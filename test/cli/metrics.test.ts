import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkMetricsFile, escapeHelp, escapeLabelValue, formatMetrics, gauge, runGauges, writeMetricsFile } from '../../src/lib/cli/metrics.js';

describe('Prometheus text format', () => {
  it('writes HELP, TYPE gauge and one line per sample', () => {
    const text = formatMetrics([
      { name: 'fcctl_deliveries_rows', help: 'rows by state', samples: [{ labels: { state: 'PENDING' }, value: 3 }, { labels: { state: 'DEAD' }, value: 0 }] },
      gauge('fcctl_deliveries_due', 'due now', 12),
      gauge('fcctl_run_duration_seconds', 'duration', 0.25, { command: 'deliveries scan' }),
    ]);
    expect(text).toBe(
      [
        '# HELP fcctl_deliveries_rows rows by state',
        '# TYPE fcctl_deliveries_rows gauge',
        'fcctl_deliveries_rows{state="PENDING"} 3',
        'fcctl_deliveries_rows{state="DEAD"} 0',
        '# HELP fcctl_deliveries_due due now',
        '# TYPE fcctl_deliveries_due gauge',
        'fcctl_deliveries_due 12',
        '# HELP fcctl_run_duration_seconds duration',
        '# TYPE fcctl_run_duration_seconds gauge',
        'fcctl_run_duration_seconds{command="deliveries scan"} 0.25',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values (\\ " newline) and help text (\\ newline only)', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeHelp('say "hi"\\\nbye')).toBe('say "hi"\\\\\\nbye');
    const text = formatMetrics([gauge('m', 'x\ny', 1, { reason: 'NACK: "no"\nC:\\q' })]);
    expect(text).toBe('# HELP m x\\ny\n# TYPE m gauge\nm{reason="NACK: \\"no\\"\\nC:\\\\q"} 1\n');
    // Every sample stays on one line whatever the label holds.
    expect(text.trimEnd().split('\n')).toHaveLength(3);
  });

  it('writes NaN and infinities the way Prometheus parses them', () => {
    expect(formatMetrics([{ name: 'm', help: 'h', samples: [{ value: NaN }, { value: Infinity, labels: { a: '1' } }, { value: -Infinity, labels: { a: '2' } }] }])).toContain('m NaN\nm{a="1"} +Inf\nm{a="2"} -Inf\n');
  });

  it('refuses invalid metric and label names and a metric given twice', () => {
    expect(() => formatMetrics([gauge('fcctl-x', 'h', 1)])).toThrow(TypeError);
    expect(() => formatMetrics([gauge('1x', 'h', 1)])).toThrow(TypeError);
    expect(() => formatMetrics([gauge('x', 'h', 1, { 'bad-label': 'v' })])).toThrow(TypeError);
    expect(() => formatMetrics([gauge('x', 'h', 1, { __name__: 'v' })])).toThrow(TypeError);
    expect(() => formatMetrics([gauge('x', 'h', 1), gauge('x', 'h', 2)])).toThrow(TypeError);
  });
});

describe('writeMetricsFile (atomic)', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'fcctl-metrics-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('writes the file and leaves no temp file behind', async () => {
    const d = dir();
    const path = join(d, 'scan.prom');
    await writeMetricsFile(path, [gauge('fcctl_x', 'h', 1)]);
    expect(readFileSync(path, 'utf8')).toBe('# HELP fcctl_x h\n# TYPE fcctl_x gauge\nfcctl_x 1\n');
    expect(readdirSync(d)).toEqual(['scan.prom']);
  });

  it('replaces by rename: a reader holding the old file still reads all of the old content', async () => {
    const d = dir();
    const path = join(d, 'scan.prom');
    await writeMetricsFile(path, [gauge('fcctl_x', 'old', 1)]);
    const oldIno = statSync(path).ino;
    const fd = openSync(path, 'r');
    try {
      await writeMetricsFile(path, [gauge('fcctl_x', 'new', 2)]);
      const buf = Buffer.alloc(4096);
      const n = readSync(fd, buf, 0, buf.length, 0);
      // An in-place rewrite would have truncated what this descriptor sees.
      expect(buf.subarray(0, n).toString('utf8')).toBe('# HELP fcctl_x old\n# TYPE fcctl_x gauge\nfcctl_x 1\n');
    } finally {
      closeSync(fd);
    }
    expect(statSync(path).ino).not.toBe(oldIno);
    expect(readFileSync(path, 'utf8')).toContain('fcctl_x 2');
  });

  it('a concurrent reader only ever sees a complete file', async () => {
    const d = dir();
    const path = join(d, 'big.prom');
    // Two large versions (~400 KB each) with different sample counts: a partial read matches neither.
    const version = (v: number, n: number) => [{ name: 'fcctl_big', help: `version ${v}`, samples: Array.from({ length: n }, (_, i) => ({ labels: { i: String(i), pad: 'x'.repeat(40) }, value: v })) }];
    const a = version(1, 6000);
    const b = version(2, 7000);
    await writeMetricsFile(path, a);
    const expectedA = readFileSync(path, 'utf8');
    let done = false;
    let reads = 0;
    const bad: number[] = [];
    const reader = (async () => {
      let expectedB: string | undefined;
      while (!done) {
        const text = await readFile(path, 'utf8');
        reads++;
        if (text !== expectedA) {
          expectedB ??= formatMetrics(b);
          if (text !== expectedB) bad.push(text.length);
        }
      }
    })();
    for (let k = 0; k < 40; k++) await writeMetricsFile(path, k % 2 === 0 ? b : a);
    done = true;
    await reader;
    expect(reads).toBeGreaterThan(0);
    expect(bad).toEqual([]);
    expect(readdirSync(d)).toEqual(['big.prom']);
  });

  it('a failed write leaves the old file and no temp file', async () => {
    const d = dir();
    const path = join(d, 'target.prom');
    mkdirSync(path); // renaming a file over a directory fails
    await expect(writeMetricsFile(path, [gauge('fcctl_x', 'h', 1)])).rejects.toThrow();
    expect(readdirSync(d)).toEqual(['target.prom']);
    await expect(writeMetricsFile(join(d, 'missing', 'x.prom'), [gauge('fcctl_x', 'h', 1)])).rejects.toMatchObject({ code: 'ENOENT' });
    const keep = join(d, 'keep.prom');
    writeFileSync(keep, 'old\n');
    await expect(writeMetricsFile(keep, [gauge('bad-name', 'h', 1)])).rejects.toThrow(TypeError);
    expect(readFileSync(keep, 'utf8')).toBe('old\n');
    expect(readdirSync(d).sort()).toEqual(['keep.prom', 'target.prom']);
  });
});


describe('run gauges: when a run counts as completed', () => {
  const lastSuccess = (facts: Partial<Parameters<typeof runGauges>[0]>) =>
    runGauges({ command: 'deliveries send', durationSeconds: 1, exitCode: 0, finishedAtSeconds: 2000, previousLastSuccess: 1000, ...facts }).find((g) => g.name === 'fcctl_last_success_timestamp_seconds')?.samples[0]?.value;
  it.each([
    ['exit 0', { exitCode: 0 }, 2000],
    ['exit 1, items failed: it ran to the end', { exitCode: 1 }, 2000],
    ['exit 1, interrupted: not to the end, the previous time kept', { exitCode: 1, interrupted: true }, 1000],
    ['exit 1, ran to the end but warned of an empty side: no success (was 2000)', { exitCode: 1, suspect: true }, 1000],
    ['exit 3', { exitCode: 3 }, 1000],
    ['exit 4', { exitCode: 4 }, 1000],
  ] as const)('%s', (_name, facts, want) => {
    expect(lastSuccess(facts)).toBe(want);
  });
});

describe('checkMetricsFile: found before any work', () => {
  const d = mkdtempSync(join(tmpdir(), 'fcctl-metrics-check-'));
  afterAll(() => rmSync(d, { recursive: true, force: true }));
  it('accepts a new file in an existing directory, and an existing file', async () => {
    await expect(checkMetricsFile(join(d, 'new.prom'))).resolves.toBeUndefined();
    writeFileSync(join(d, 'old.prom'), 'x');
    await expect(checkMetricsFile(join(d, 'old.prom'))).resolves.toBeUndefined();
  });
  it.each([
    ['a missing directory', () => join(d, 'missing', 'm.prom'), /^cannot write --metrics-file .*m\.prom: directory .*missing does not exist; nothing was done$/],
    ['a file as its directory', () => { writeFileSync(join(d, 'f'), ''); return join(d, 'f', 'm.prom'); }, /f is not a directory; nothing was done$/],
    ['a directory as the file', () => { mkdirSync(join(d, 'x.prom'), { recursive: true }); return join(d, 'x.prom'); }, /: it is a directory; nothing was done$/],
  ] as const)('refuses %s (exit 3)', async (_name, path, says) => {
    const err = await checkMetricsFile(path()).then(() => null, (e: unknown) => e as Error & { exitCode: number });
    expect(err?.exitCode).toBe(3);
    expect(err?.message).toMatch(says);
  });
});
