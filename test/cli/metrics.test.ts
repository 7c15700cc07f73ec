import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  accumulateCounters,
  checkMetricsFile,
  counter,
  escapeHelp,
  escapeLabelValue,
  formatMetrics,
  gauge,
  type Gauge,
  NO_PREVIOUS,
  type PreviousMetrics,
  previousValue,
  readPreviousMetrics,
  runGauges,
  runSeries,
  withFileLabel,
  writeMetricsFile,
} from '../../src/lib/metrics/textfile.js';
import { ExpositionError, type ParsedSample, parseExposition, seriesKey } from '../../src/lib/metrics/parse.js';
import { collectTextfiles, readProm } from '../helpers/textfile.js';

describe('Prometheus text format', () => {
  it('writes HELP, TYPE gauge and one line per sample', () => {
    const text = formatMetrics([
      {
        name: 'fcctl_deliveries_rows',
        help: 'rows by state',
        samples: [
          { labels: { state: 'PENDING' }, value: 3 },
          { labels: { state: 'DEAD' }, value: 0 },
        ],
      },
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
    expect(
      formatMetrics([
        {
          name: 'm',
          help: 'h',
          samples: [{ value: NaN }, { value: Infinity, labels: { a: '1' } }, { value: -Infinity, labels: { a: '2' } }],
        },
      ]),
    ).toContain('m NaN\nm{a="1"} +Inf\nm{a="2"} -Inf\n');
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
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('writes the file and leaves no temp file behind', async () => {
    const d = dir();
    const path = join(d, 'scan.prom');
    await writeMetricsFile(path, [gauge('fcctl_x', 'h', 1)]);
    expect(readFileSync(path, 'utf8')).toBe(
      '# HELP fcctl_x h\n# TYPE fcctl_x gauge\nfcctl_x{metrics_file="scan.prom"} 1\n',
    );
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
      expect(buf.subarray(0, n).toString('utf8')).toBe(
        '# HELP fcctl_x old\n# TYPE fcctl_x gauge\nfcctl_x{metrics_file="scan.prom"} 1\n',
      );
    } finally {
      closeSync(fd);
    }
    expect(statSync(path).ino).not.toBe(oldIno);
    expect(readFileSync(path, 'utf8')).toContain('fcctl_x{metrics_file="scan.prom"} 2');
  });

  it('a concurrent reader only ever sees a complete file', async () => {
    const d = dir();
    const path = join(d, 'big.prom');
    // Two large versions (~400 KB each) with different sample counts: a partial read matches neither.
    const version = (v: number, n: number) => [
      {
        name: 'fcctl_big',
        help: `version ${v}`,
        samples: Array.from({ length: n }, (_, i) => ({ labels: { i: String(i), pad: 'x'.repeat(40) }, value: v })),
      },
    ];
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
          expectedB ??= formatMetrics(withFileLabel(b, 'big.prom'));
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
    await expect(writeMetricsFile(join(d, 'missing', 'x.prom'), [gauge('fcctl_x', 'h', 1)])).rejects.toMatchObject({
      code: 'ENOENT',
    });
    const keep = join(d, 'keep.prom');
    writeFileSync(keep, 'old\n');
    await expect(writeMetricsFile(keep, [gauge('bad-name', 'h', 1)])).rejects.toThrow(TypeError);
    expect(readFileSync(keep, 'utf8')).toBe('old\n');
    expect(readdirSync(d).sort()).toEqual(['keep.prom', 'target.prom']);
  });

  // Issue 26 §5: the same series written into two files of one collector directory (a one-off
  // pair run beside the nightly file, one command run into two files) must not collide.
  it("labels every series with the file's base name: the same series in two files of one directory are two series", async () => {
    const d = dir();
    const run = {
      command: 'reconcile run',
      labels: { school: '5', form: 'f' },
      durationSeconds: 1,
      exitCode: 0,
      finishedAtSeconds: 2000,
      rowsByResult: { IN_SYNC: 3 },
    };
    for (const file of ['fcctl_reconcile.prom', 'fcctl_reconcile_pair.prom'])
      await writeMetricsFile(join(d, file), runSeries(run, NO_PREVIOUS));
    const c = collectTextfiles(d);
    expect(c.errors).toEqual([]);
    expect(c.families.get('fcctl_run_exit_code')!.samples.map((s) => s.labels)).toEqual([
      { command: 'reconcile run', school: '5', form: 'f', metrics_file: 'fcctl_reconcile.prom' },
      { command: 'reconcile run', school: '5', form: 'f', metrics_file: 'fcctl_reconcile_pair.prom' },
    ]);
    // a label of that name given by a caller is the file's
    await writeMetricsFile(join(d, 'x.prom'), [gauge('fcctl_x', 'h', 1, { metrics_file: 'other.prom' })]);
    expect(readFileSync(join(d, 'x.prom'), 'utf8')).toContain('fcctl_x{metrics_file="x.prom"} 1\n');
  });

  it('reads the previous file without the label, so counters go on adding up — and from a file written before the label, too', async () => {
    const d = dir();
    const file = join(d, 'send.prom');
    const run = {
      command: 'deliveries send',
      durationSeconds: 1,
      exitCode: 0,
      finishedAtSeconds: 2000,
      rowsByResult: { accepted: 3 },
    };
    // an older fcctl's file: no metrics_file label
    writeFileSync(file, formatMetrics(runSeries(run, NO_PREVIOUS)));
    await writeMetricsFile(file, runSeries(run, await readPreviousMetrics(file)));
    expect(readFileSync(file, 'utf8')).toContain(
      'fcctl_rows_total{command="deliveries send",result="accepted",metrics_file="send.prom"} 6\n',
    );
    expect((await readPreviousMetrics(file)).samples.every((s) => !('metrics_file' in s.labels))).toBe(true);
    await writeMetricsFile(file, runSeries(run, await readPreviousMetrics(file)));
    expect(readProm(file)).toContain('fcctl_rows_total{command="deliveries send",result="accepted"} 9\n');
    expect(readProm(file)).toContain('fcctl_runs_total{command="deliveries send",exit_code="0"} 3\n');
  });
});

describe('run gauges: when a run counts as completed', () => {
  const lastSuccess = (facts: Partial<Parameters<typeof runGauges>[0]>) =>
    runGauges({
      command: 'deliveries send',
      durationSeconds: 1,
      exitCode: 0,
      finishedAtSeconds: 2000,
      previousLastSuccess: 1000,
      ...facts,
    }).find((g) => g.name === 'fcctl_last_success_timestamp_seconds')?.samples[0]?.value;
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
    [
      'a missing directory',
      () => join(d, 'missing', 'm.prom'),
      /^cannot write --metrics-file .*m\.prom: directory .*missing does not exist; nothing was done$/,
    ],
    [
      'a file as its directory',
      () => {
        writeFileSync(join(d, 'f'), '');
        return join(d, 'f', 'm.prom');
      },
      /f is not a directory; nothing was done$/,
    ],
    [
      'a directory as the file',
      () => {
        mkdirSync(join(d, 'x.prom'), { recursive: true });
        return join(d, 'x.prom');
      },
      /: it is a directory; nothing was done$/,
    ],
  ] as const)('refuses %s (exit 3)', async (_name, path, says) => {
    const err = await checkMetricsFile(path()).then(
      () => null,
      (e: unknown) => e as Error & { exitCode: number },
    );
    expect(err?.exitCode).toBe(3);
    expect(err?.message).toMatch(says);
  });
});

describe('counters: TYPE counter, _total, added to the previous file', () => {
  const prev = (text: string): PreviousMetrics => ({ samples: parseExposition(text).flatMap((f) => f.samples) });
  it('writes TYPE counter; refuses a counter not named _total, a negative or non-finite value, a series given twice', () => {
    expect(formatMetrics([counter('fcctl_runs_total', 'runs', 3, { command: 'x' })])).toBe(
      '# HELP fcctl_runs_total runs\n# TYPE fcctl_runs_total counter\nfcctl_runs_total{command="x"} 3\n',
    );
    expect(() => formatMetrics([counter('fcctl_runs', 'runs', 1)])).toThrow(/must end in _total/);
    expect(() => formatMetrics([counter('fcctl_runs_total', 'runs', -1)])).toThrow(TypeError);
    expect(() => formatMetrics([counter('fcctl_runs_total', 'runs', NaN)])).toThrow(TypeError);
    expect(() =>
      formatMetrics([
        {
          name: 'g',
          help: 'h',
          samples: [
            { labels: { a: '1' }, value: 1 },
            { labels: { a: '1' }, value: 2 },
          ],
        },
      ]),
    ).toThrow(/given twice/);
  });
  it.each([
    ['no previous file: this run only', '', 2],
    ['the previous value is added', 'fcctl_x_total{a="1",b="2"} 5\n', 7],
    ['labels in another order are the same series', 'fcctl_x_total{b="2",a="1"} 5\n', 7],
    ['another series is not added', 'fcctl_x_total{a="9",b="2"} 5\n', 2],
    ['NaN previously: from 0', 'fcctl_x_total{a="1",b="2"} NaN\n', 2],
    ['+Inf previously: from 0', 'fcctl_x_total{a="1",b="2"} +Inf\n', 2],
    ['negative previously: from 0', 'fcctl_x_total{a="1",b="2"} -3\n', 2],
  ])('%s', (_name, text, want) => {
    const [m] = accumulateCounters([counter('fcctl_x_total', 'x', 2, { a: '1', b: '2' })], prev(text));
    expect(m!.samples[0]!.value).toBe(want);
  });
  it('carries the previous samples this run did not touch (valid ones), and leaves gauges alone', () => {
    const out = accumulateCounters(
      [counter('fcctl_x_total', 'x', 1, { r: 'a' }), gauge('fcctl_g', 'g', 1)],
      prev('fcctl_x_total{r="b"} 4\nfcctl_x_total{r="c"} NaN\nfcctl_g 7\n'),
    );
    expect(out[0]!.samples).toEqual([
      { labels: { r: 'a' }, value: 1 },
      { labels: { r: 'b' }, value: 4 },
    ]);
    expect(out[1]).toEqual(gauge('fcctl_g', 'g', 1));
  });
  it('runSeries: fcctl_runs_total{command,exit_code} for every exit code, fcctl_rows_total{command,result}; over two runs', () => {
    const run = {
      command: 'deliveries send',
      durationSeconds: 1,
      exitCode: 1,
      finishedAtSeconds: 2000,
      rowsByResult: { accepted: 3, failed: 1 },
    };
    const first = runSeries(run, NO_PREVIOUS);
    const second = runSeries({ ...run, exitCode: 0, rowsByResult: { accepted: 2 } }, prev(formatMetrics(first)));
    const text = formatMetrics(second);
    expect(text).toContain('# TYPE fcctl_runs_total counter\n');
    for (const [code, n] of [
      ['0', 1],
      ['1', 1],
      ['2', 0],
      ['3', 0],
      ['4', 0],
    ] as const)
      expect(text).toContain(`fcctl_runs_total{command="deliveries send",exit_code="${code}"} ${n}\n`);
    expect(text).toContain('fcctl_rows_total{command="deliveries send",result="accepted"} 5\n');
    expect(text).toContain('fcctl_rows_total{command="deliveries send",result="failed"} 1\n');
    // the gauges stay this run's
    expect(text).toContain('fcctl_rows{command="deliveries send",result="accepted"} 2\n');
    expect(text).not.toContain('fcctl_rows{command="deliveries send",result="failed"}');
  });
  it('a run that wrote none of a counter family (send exit 3: no rows) carries it whole from the previous file', async () => {
    const ok = {
      command: 'deliveries send',
      durationSeconds: 1,
      exitCode: 0,
      finishedAtSeconds: 2000,
      rowsByResult: { accepted: 3, dead: 1 },
    };
    const d = mkdtempSync(join(tmpdir(), 'fcctl-metrics-carry-'));
    try {
      const file = join(d, 'send.prom');
      await writeMetricsFile(file, runSeries(ok, NO_PREVIOUS));
      await writeMetricsFile(
        file,
        runSeries({ ...ok, exitCode: 3, rowsByResult: undefined }, await readPreviousMetrics(file)),
      );
      const text = readProm(file);
      expect(text).toContain(
        '# HELP fcctl_rows_total rows handled by the command, by result, over all runs\n# TYPE fcctl_rows_total counter\n',
      );
      expect(text).toContain('fcctl_rows_total{command="deliveries send",result="accepted"} 3\n');
      expect(text).toContain('fcctl_rows_total{command="deliveries send",result="dead"} 1\n');
      expect(text).toContain('fcctl_runs_total{command="deliveries send",exit_code="3"} 1\n');
      expect(text).not.toContain('fcctl_rows{'); // the gauge is this run's: none
      // a later run that writes rows again adds to the carried counts
      await writeMetricsFile(
        file,
        runSeries({ ...ok, rowsByResult: { accepted: 2 } }, await readPreviousMetrics(file)),
      );
      expect(readProm(file)).toContain('fcctl_rows_total{command="deliveries send",result="accepted"} 5\n');
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
  it('carries a previous counter family by TYPE when read from a file, by _total when built by hand; never a gauge', () => {
    const byHand = accumulateCounters([], prev('fcctl_a_total{r="x"} 2\nfcctl_a_total{r="y"} NaN\nfcctl_g 7\n'));
    expect(byHand).toEqual([
      {
        name: 'fcctl_a_total',
        help: 'carried from the previous file',
        type: 'counter',
        samples: [{ labels: { r: 'x' }, value: 2 }],
      },
    ]);
    const typed = {
      ...prev('fcctl_b_total 4\nfcctl_c 1\n'),
      families: [
        { name: 'fcctl_b_total', type: 'gauge' },
        { name: 'fcctl_c', type: 'counter' },
      ],
    };
    expect(accumulateCounters([], typed)).toEqual([]); // a gauge named _total, and a "counter" formatMetrics would refuse
  });
  it('merging into a big previous file reads each previous sample a bounded number of times (no scan per series)', () => {
    const pairs = 300;
    const series = (n: number): Gauge[] => [
      {
        name: 'fcctl_p',
        help: 'p',
        samples: Array.from({ length: n }, (_, i) => ({ labels: { pair: String(i) }, value: i })),
      },
      {
        name: 'fcctl_p_total',
        help: 'p',
        type: 'counter',
        samples: Array.from({ length: n * 3 }, (_, i) => ({
          labels: { pair: String(Math.floor(i / 3)), k: String(i % 3) },
          value: 1,
        })),
      },
    ];
    const plain = prev(formatMetrics(series(pairs)));
    let reads = 0;
    const counted: PreviousMetrics = {
      samples: new Proxy(plain.samples as ParsedSample[], {
        get: (t, k, r) => (typeof k === 'string' && /^\d+$/.test(k) && reads++, Reflect.get(t, k, r)),
      }),
    };
    const out = accumulateCounters(series(pairs), counted);
    for (const g of series(pairs))
      for (const x of g.samples)
        expect(previousValue(counted, g.name, x.labels ?? {})).toBe(x.value === 1 ? 1 : x.value);
    expect(out[1]!.samples.every((s) => s.value === 2)).toBe(true);
    expect(reads).toBeLessThanOrEqual(2 * plain.samples.length);
  });
  it('runSeries carries the previous last success for a run that did not complete, with its labels', () => {
    const previous = prev(
      'fcctl_last_success_timestamp_seconds{command="reconcile run",school="5",form="f"} 1000\nfcctl_last_success_timestamp_seconds{command="reconcile run"} 900\n',
    );
    const g = runSeries(
      {
        command: 'reconcile run',
        labels: { school: '5', form: 'f' },
        durationSeconds: 1,
        exitCode: 3,
        finishedAtSeconds: 2000,
      },
      previous,
    ).find((m) => m.name === 'fcctl_last_success_timestamp_seconds');
    expect(g?.samples).toEqual([{ labels: { command: 'reconcile run', school: '5', form: 'f' }, value: 1000 }]);
  });
  it('readPreviousMetrics: a missing, unreadable or unparsable file is no previous file', async () => {
    const d = mkdtempSync(join(tmpdir(), 'fcctl-metrics-prev-'));
    try {
      expect(await readPreviousMetrics(join(d, 'missing.prom'))).toEqual(NO_PREVIOUS);
      mkdirSync(join(d, 'dir.prom'));
      expect(await readPreviousMetrics(join(d, 'dir.prom'))).toEqual(NO_PREVIOUS);
      writeFileSync(join(d, 'bad.prom'), 'fcctl_x_total{a="1"} 5\nnot a metric line at all\n');
      expect(await readPreviousMetrics(join(d, 'bad.prom'))).toEqual(NO_PREVIOUS);
      writeFileSync(join(d, 'ok.prom'), formatMetrics([counter('fcctl_x_total', 'x', 5, { a: '1' })]));
      expect(await readPreviousMetrics(join(d, 'ok.prom'))).toEqual({
        samples: [{ name: 'fcctl_x_total', labels: { a: '1' }, value: 5 }],
        families: [{ name: 'fcctl_x_total', help: 'x', type: 'counter' }],
      });
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('parseExposition reads back what formatMetrics writes, and refuses what the Go parser refuses', () => {
  it('round trip: escapes, NaN and infinities, HELP and TYPE', () => {
    const metrics = [
      {
        name: 'm',
        help: 'a\\b\nc',
        samples: [
          { labels: { r: 'x"y\\z\nw' }, value: 1.5 },
          { value: NaN },
          { labels: { i: '1' }, value: Infinity },
          { labels: { i: '2' }, value: -Infinity },
        ],
      },
      counter('n_total', 'n', 2),
    ];
    const back = parseExposition(formatMetrics(metrics));
    expect(back.map((f) => [f.name, f.help, f.type])).toEqual([
      ['m', 'a\\b\nc', 'gauge'],
      ['n_total', 'n', 'counter'],
    ]);
    expect(back[0]!.samples.map((s) => [s.labels, s.value])).toEqual([
      [{ r: 'x"y\\z\nw' }, 1.5],
      [{}, NaN],
      [{ i: '1' }, Infinity],
      [{ i: '2' }, -Infinity],
    ]);
  });
  it.each([
    ['a second TYPE', '# TYPE m gauge\n# TYPE m gauge\n'],
    ['TYPE after samples', 'm 1\n# TYPE m gauge\n'],
    ['a second HELP', '# HELP m a\n# HELP m b\n'],
    ['an unknown type', '# TYPE m gauges\n'],
    ['a bad value', 'm one\n'],
    ['a bad label name', 'm{1a="x"} 1\n'],
    ['an unterminated label value', 'm{a="x} 1\n'],
    ['a duplicate label', 'm{a="x",a="y"} 1\n'],
    ['no space before the value', 'm{a="x"}1\n'],
  ])('%s', (_name, text) => {
    expect(() => parseExposition(text)).toThrow(ExpositionError);
  });
  it('seriesKey: labels sorted, empty values dropped (as Prometheus treats them)', () => {
    expect(seriesKey('m', { b: '2', a: '1', c: '' })).toBe(seriesKey('m', { a: '1', b: '2' }));
  });
});
