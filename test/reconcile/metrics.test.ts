import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatMetrics, type Gauge, NO_PREVIOUS, type PreviousMetrics } from '../../src/lib/metrics/textfile.js';
import { type ParsedSample, parseExposition } from '../../src/lib/metrics/parse.js';
import {
  allPairsSeries,
  type ReconcilePairResult,
  reconcilePairSeries,
  singlePairSeries,
} from '../../src/lib/reconcile/metrics.js';
import { CATEGORIES, emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { collectedValue, collectTextfiles } from '../helpers/textfile.js';

const prev = (metrics: readonly Gauge[]): PreviousMetrics => ({
  samples: parseExposition(formatMetrics(metrics)).flatMap((f) => f.samples),
});
const sample = (metrics: readonly Gauge[], name: string, labels: Record<string, string>) => {
  const text = formatMetrics(metrics);
  const fam = parseExposition(text).find((f) => f.name === name);
  return fam?.samples.find(
    (s) => JSON.stringify(Object.entries(s.labels).sort()) === JSON.stringify(Object.entries(labels).sort()),
  )?.value;
};
const counts = (over: Partial<Record<string, number>>) => ({ ...emptyCounts(), ...over });
const pair = (schId: string, formUuid: string, over: Partial<ReconcilePairResult> = {}): ReconcilePairResult => ({
  schId,
  formUuid,
  exitCode: 0,
  finishedAtSeconds: 2000,
  durationSeconds: 3,
  counts: counts({ IN_SYNC: 10, MISSING_LOCAL: 2, RETIRED: 1 }),
  ...over,
});
const A = { school: '5', form: 'fa' };

describe('reconcilePairSeries: every series names its pair', () => {
  it('a single pair: rows by category, differences, empty, exit code, duration, last success, rows_total; run series with command, school, form', () => {
    const m = reconcilePairSeries([pair('5', 'fa', { paused: false })], { previous: NO_PREVIOUS });
    expect(sample(m, 'fcctl_reconcile_rows', { ...A, category: 'IN_SYNC' })).toBe(10);
    expect(sample(m, 'fcctl_reconcile_rows', { ...A, category: 'HASH_CONFLICT' })).toBe(0);
    expect(parseExposition(formatMetrics(m)).find((f) => f.name === 'fcctl_reconcile_rows')?.samples).toHaveLength(
      CATEGORIES.length,
    );
    expect(sample(m, 'fcctl_reconcile_differences', A)).toBe(2); // IN_SYNC and RETIRED are no difference
    expect(sample(m, 'fcctl_reconcile_empty', A)).toBe(0);
    expect(sample(m, 'fcctl_reconcile_exit_code', A)).toBe(0);
    expect(sample(m, 'fcctl_reconcile_duration_seconds', A)).toBe(3);
    expect(sample(m, 'fcctl_reconcile_last_success_timestamp_seconds', A)).toBe(2000);
    expect(sample(m, 'fcctl_reconcile_rows_total', { ...A, category: 'MISSING_LOCAL' })).toBe(2);
    const run = { command: 'reconcile run', ...A };
    expect(sample(m, 'fcctl_run_exit_code', run)).toBe(0);
    expect(sample(m, 'fcctl_last_success_timestamp_seconds', run)).toBe(2000);
    expect(sample(m, 'fcctl_runs_total', { ...run, exit_code: '0' })).toBe(1);
    expect(sample(m, 'fcctl_paused', run)).toBe(0);
    expect(formatMetrics(m)).toContain('# TYPE fcctl_reconcile_rows_total counter\n');
    // no series without its pair
    for (const f of parseExposition(formatMetrics(m))) for (const s of f.samples) expect(s.labels).toMatchObject(A);
  });

  it("counters grow across runs (read from the previous file); gauges are this run's", () => {
    const first = reconcilePairSeries([pair('5', 'fa')], { previous: NO_PREVIOUS });
    const second = reconcilePairSeries(
      [pair('5', 'fa', { finishedAtSeconds: 3000, counts: counts({ IN_SYNC: 12 }) })],
      { previous: prev(first) },
    );
    expect(sample(second, 'fcctl_reconcile_rows_total', { ...A, category: 'IN_SYNC' })).toBe(22);
    expect(sample(second, 'fcctl_reconcile_rows_total', { ...A, category: 'MISSING_LOCAL' })).toBe(2);
    expect(sample(second, 'fcctl_reconcile_rows', { ...A, category: 'MISSING_LOCAL' })).toBe(0);
    expect(sample(second, 'fcctl_reconcile_differences', A)).toBe(0);
    expect(sample(second, 'fcctl_runs_total', { command: 'reconcile run', ...A, exit_code: '0' })).toBe(2);
  });

  it.each([
    ['an empty side (exit 1)', { exitCode: 1, empty: true }, true],
    ['stopped by a signal', { exitCode: 1, interrupted: true, counts: undefined }, false],
    ['paused', { exitCode: 0, interrupted: true, paused: true, counts: undefined }, false],
    ['exit 3', { exitCode: 3, counts: undefined }, false],
  ] as const)('%s: the last success is kept from the previous file', (_name, over, hasDiff) => {
    const before = reconcilePairSeries([pair('5', 'fa', { finishedAtSeconds: 1000 })], { previous: NO_PREVIOUS });
    const m = reconcilePairSeries(
      [pair('5', 'fa', { ...over, finishedAtSeconds: 2000 } as Partial<ReconcilePairResult>)],
      { previous: prev(before) },
    );
    expect(sample(m, 'fcctl_reconcile_last_success_timestamp_seconds', A)).toBe(1000);
    expect(sample(m, 'fcctl_last_success_timestamp_seconds', { command: 'reconcile run', ...A })).toBe(1000);
    expect(sample(m, 'fcctl_reconcile_exit_code', A)).toBe(over.exitCode);
    expect(sample(m, 'fcctl_reconcile_differences', A) !== undefined).toBe(hasDiff);
    if (hasDiff) expect(sample(m, 'fcctl_reconcile_empty', A)).toBe(1);
    // the counters of the run before are carried
    expect(sample(m, 'fcctl_reconcile_rows_total', { ...A, category: 'IN_SYNC' })).toBe(hasDiff ? 20 : 10);
  });

  it('--all: every pair in one file, the run series once with command only; pairs of earlier runs keep their counters', () => {
    const run = { exitCode: 0, finishedAtSeconds: 2000, durationSeconds: 9, paused: false };
    const first = reconcilePairSeries([pair('5', 'fa'), pair('5', 'fb'), pair('6', 'fa')], {
      previous: NO_PREVIOUS,
      run,
    });
    const m = reconcilePairSeries([pair('5', 'fa'), pair('6', 'fa', { exitCode: 3, counts: undefined })], {
      previous: prev(first),
      run: { ...run, exitCode: 1 },
    });
    expect(() => formatMetrics(m)).not.toThrow();
    expect(sample(m, 'fcctl_run_exit_code', { command: 'reconcile run' })).toBe(1);
    expect(sample(m, 'fcctl_runs_total', { command: 'reconcile run', exit_code: '1' })).toBe(1);
    expect(sample(m, 'fcctl_runs_total', { command: 'reconcile run', exit_code: '0' })).toBe(1);
    expect(sample(m, 'fcctl_paused', { command: 'reconcile run' })).toBe(0);
    expect(sample(m, 'fcctl_reconcile_rows_total', { school: '5', form: 'fa', category: 'IN_SYNC' })).toBe(20);
    expect(sample(m, 'fcctl_reconcile_rows_total', { school: '5', form: 'fb', category: 'IN_SYNC' })).toBe(10);
    expect(sample(m, 'fcctl_reconcile_rows_total', { school: '6', form: 'fa', category: 'IN_SYNC' })).toBe(10);
    expect(sample(m, 'fcctl_reconcile_last_success_timestamp_seconds', { school: '6', form: 'fa' })).toBe(2000);
    expect(sample(m, 'fcctl_reconcile_exit_code', { school: '6', form: 'fa' })).toBe(3);
    expect(sample(m, 'fcctl_reconcile_rows', { school: '6', form: 'fa', category: 'IN_SYNC' })).toBeUndefined();
  });

  it("--all: a pair not run this time keeps its last success (so a pair failing on another host goes stale), not its last run's gauges", () => {
    // night 1 on host A: 5/fa and 5/fb done; night 2 A runs 5/fb only (5/fa moved to host B, where it fails)
    const run = { exitCode: 0, finishedAtSeconds: 1000, durationSeconds: 9 };
    const night1 = reconcilePairSeries(
      [pair('5', 'fa', { finishedAtSeconds: 1000 }), pair('5', 'fb', { finishedAtSeconds: 1000 })],
      { previous: NO_PREVIOUS, run },
    );
    const night2 = reconcilePairSeries([pair('5', 'fb', { finishedAtSeconds: 90000 })], {
      previous: prev(night1),
      run: { ...run, finishedAtSeconds: 90000 },
    });
    expect(() => formatMetrics(night2)).not.toThrow();
    expect(sample(night2, 'fcctl_reconcile_last_success_timestamp_seconds', A)).toBe(1000);
    expect(sample(night2, 'fcctl_reconcile_last_success_timestamp_seconds', { school: '5', form: 'fb' })).toBe(90000);
    expect(sample(night2, 'fcctl_reconcile_rows_total', { ...A, category: 'IN_SYNC' })).toBe(10);
    for (const name of [
      'fcctl_reconcile_exit_code',
      'fcctl_reconcile_duration_seconds',
      'fcctl_reconcile_differences',
      'fcctl_reconcile_empty',
    ])
      expect(sample(night2, name, A), name).toBeUndefined();
    expect(sample(night2, 'fcctl_reconcile_rows', { ...A, category: 'IN_SYNC' })).toBeUndefined();
    // night 3: 5/fa back on A and failing: its carried time stays, its exit code is tonight's
    const night3 = reconcilePairSeries(
      [pair('5', 'fa', { exitCode: 3, counts: undefined, finishedAtSeconds: 180000 })],
      { previous: prev(night2), run: { ...run, exitCode: 1, finishedAtSeconds: 180000 } },
    );
    expect(sample(night3, 'fcctl_reconcile_last_success_timestamp_seconds', A)).toBe(1000);
    expect(sample(night3, 'fcctl_reconcile_exit_code', A)).toBe(3);
    expect(sample(night3, 'fcctl_reconcile_last_success_timestamp_seconds', { school: '5', form: 'fb' })).toBe(90000);
    // a single-pair file carries the same way; the command-level series (with school, form) are carried by the counters only
    const single = reconcilePairSeries([pair('5', 'fb')], {
      previous: prev(reconcilePairSeries([pair('5', 'fa', { finishedAtSeconds: 1000 })], { previous: NO_PREVIOUS })),
    });
    expect(sample(single, 'fcctl_reconcile_last_success_timestamp_seconds', A)).toBe(1000);
    expect(sample(single, 'fcctl_runs_total', { command: 'reconcile run', ...A, exit_code: '0' })).toBe(1);
  });

  it('--all with 5,000 pairs: merged into the previous file reading each previous sample a bounded number of times, and formatted', () => {
    const night = (failing: boolean) =>
      Array.from({ length: 5000 }, (_, i) =>
        pair(String(5 + (i % 100)), `f-${i}`, {
          finishedAtSeconds: failing ? 3000 : 2000,
          ...(failing && i % 10 === 0 ? { exitCode: 3, counts: undefined } : {}),
        }),
      );
    const run = { exitCode: 1, finishedAtSeconds: 2000, durationSeconds: 1 };
    const plain = prev(reconcilePairSeries(night(false), { previous: NO_PREVIOUS, run }));
    let reads = 0;
    const counted: PreviousMetrics = {
      samples: new Proxy(plain.samples as ParsedSample[], {
        get: (t, k, r) => (typeof k === 'string' && /^\d+$/.test(k) && reads++, Reflect.get(t, k, r)),
      }),
    };
    const text = formatMetrics(
      reconcilePairSeries(night(true), { previous: counted, run: { ...run, finishedAtSeconds: 3000 } }),
    );
    // was a scan of the previous samples per pair: 5,000 × 100,000 reads
    expect(reads).toBeLessThanOrEqual(2 * plain.samples.length);
    expect(text).toContain('fcctl_reconcile_rows_total{school="6",form="f-1",category="IN_SYNC"} 20\n');
    expect(text).toContain('fcctl_reconcile_last_success_timestamp_seconds{school="5",form="f-0"} 2000\n'); // failed tonight: its first night's time
    expect(text).toContain('fcctl_reconcile_last_success_timestamp_seconds{school="6",form="f-1"} 3000\n');
    expect(text).toContain('fcctl_runs_total{command="reconcile run",exit_code="1"} 2\n');
  }, 60_000);

  it("singlePairSeries and allPairsSeries: withRunMetrics's facts as pair results", () => {
    const run = { command: 'reconcile run', durationSeconds: 2, exitCode: 1, finishedAtSeconds: 2000, suspect: true };
    const one = singlePairSeries(
      { schId: '5', formUuid: 'fa' },
      {
        run,
        outcome: { exitCode: 1, rowsByResult: emptyCounts(), suspect: true, paused: false },
        previous: NO_PREVIOUS,
      },
    );
    expect(sample(one, 'fcctl_reconcile_empty', A)).toBe(1);
    expect(sample(one, 'fcctl_last_success_timestamp_seconds', { command: 'reconcile run', ...A })).toBeUndefined();
    const all = allPairsSeries([pair('5', 'fa')], {
      run: { ...run, suspect: false, exitCode: 0 },
      outcome: { exitCode: 0, paused: false },
      previous: NO_PREVIOUS,
    });
    expect(sample(all, 'fcctl_last_success_timestamp_seconds', { command: 'reconcile run' })).toBe(2000);
  });
});

describe('the files of the documented setup, as node_exporter reads them', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'fcctl-textfile-'));
    dirs.push(d);
    return d;
  };
  it('two single-pair files and an --all file: no series in two files; every HELP and TYPE agrees', () => {
    const d = dir();
    writeFileSync(
      join(d, 'a.prom'),
      formatMetrics(reconcilePairSeries([pair('5', 'fa', { paused: false })], { previous: NO_PREVIOUS })),
    );
    writeFileSync(
      join(d, 'b.prom'),
      formatMetrics(
        reconcilePairSeries([pair('5', 'fb', { paused: true, interrupted: true, counts: undefined })], {
          previous: NO_PREVIOUS,
        }),
      ),
    );
    writeFileSync(
      join(d, 'all.prom'),
      formatMetrics(
        reconcilePairSeries([pair('6', 'fa')], {
          previous: NO_PREVIOUS,
          run: { exitCode: 0, finishedAtSeconds: 1, durationSeconds: 1, paused: false },
        }),
      ),
    );
    const c = collectTextfiles(d);
    expect(c.errors).toEqual([]);
    expect(collectedValue(c, 'fcctl_paused', { command: 'reconcile run', school: '5', form: 'fb' })).toBe(1);
    expect(collectedValue(c, 'fcctl_paused', { command: 'reconcile run' })).toBe(0);
  });

  it('the helper finds what node_exporter refuses: a series in two files, another TYPE, another HELP, a file that does not parse', () => {
    const d = dir();
    writeFileSync(
      join(d, 'a.prom'),
      '# HELP m h\n# TYPE m gauge\nm{command="reconcile run"} 1\n# TYPE t counter\nt_total 1\n# HELP k one\nk 1\n',
    );
    writeFileSync(
      join(d, 'b.prom'),
      '# HELP m h\n# TYPE m gauge\nm{command="reconcile run"} 2\nm{command="x"} 3\n# TYPE t_total gauge\nt_total 1\n# HELP k two\nk{a="1"} 1\n',
    );
    writeFileSync(join(d, 'c.prom'), 'm{command=} 1\n');
    writeFileSync(join(d, 'ignored.txt'), 'not read');
    const c = collectTextfiles(d);
    expect(c.errors).toEqual([
      'collected metric m{command="reconcile run"} from b.prom was collected before with the same name and label values',
      expect.stringMatching(/^collected metric t_total from b\.prom has type gauge but should have untyped$/),
      'collected metric k from b.prom has help "two" but should have "one"',
      expect.stringMatching(/^failed to parse textfile data from .*c\.prom: line 1: /),
    ]);
    expect(collectedValue(c, 'm', { command: 'x' })).toBe(3);
  });
});

describe("allPairsSeries keeps the body's own gauges, but for the names it writes itself", () => {
  it('fcctl_paused from outcome.paused wins over an extra gauge of that name; other extras are kept', async () => {
    const { gauge } = await import('../../src/lib/metrics/textfile.js');
    const run = { command: 'reconcile run', durationSeconds: 2, exitCode: 0, finishedAtSeconds: 2000 };
    const extraGauges = [
      gauge('fcctl_paused', 'the last run found its command paused (fcctl pause, or --pause-file): 1, else 0', 1, {
        command: 'reconcile run',
      }),
      gauge('fcctl_reconcile_pairs', 'pairs', 3),
    ];
    const m = allPairsSeries([pair('5', 'fa')], {
      run,
      outcome: { exitCode: 0, paused: false, extraGauges },
      previous: NO_PREVIOUS,
    });
    expect(() => formatMetrics(m)).not.toThrow();
    expect(sample(m, 'fcctl_paused', { command: 'reconcile run' })).toBe(0);
    expect(sample(m, 'fcctl_reconcile_pairs', {})).toBe(3);
    // without outcome.paused, the extra gauge says it
    const m2 = allPairsSeries([], { run, outcome: { exitCode: 0, extraGauges }, previous: NO_PREVIOUS });
    expect(sample(m2, 'fcctl_paused', { command: 'reconcile run' })).toBe(1);
  });
});
