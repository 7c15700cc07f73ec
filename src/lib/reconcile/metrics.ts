/**
 * The metrics of `reconcile run`, pure: every series carries the pair it is about (`school`,
 * `form`), so the files of two pairs never hold the same series, and `reconcile run --all` writes
 * every pair's series in one file. Counters are added to the previous file's (see
 * `accumulateCounters`).
 */
import { pausedGauge } from '../metrics/paused.js';
import {
  accumulateCounters,
  type Gauge,
  type PreviousMetrics,
  previousSamples,
  previousValue,
  runCounters,
  runGauges,
} from '../metrics/textfile.js';
import type { RunSeriesInput } from '../metrics/run-metrics.js';
import { CATEGORIES, differencesOf } from './diff/decide.js';

export const RECONCILE_COMMAND = 'reconcile run';

/** One pair's result, as its run (or `--all`'s run of it) ended. */
export interface ReconcilePairResult {
  readonly schId: string;
  readonly formUuid: string;
  readonly exitCode: number;
  /** when the pair's run ended, Unix seconds */
  readonly finishedAtSeconds: number;
  readonly durationSeconds: number;
  /** rows by category, when the diff was written (absent: stopped, paused or failed) */
  readonly counts?: Readonly<Record<string, number>>;
  /** the diff came with the empty-side warning: no success */
  readonly empty?: boolean;
  /** stopped by a signal or the pause switch before its diff */
  readonly interrupted?: boolean;
  /** the pause switch stopped it (`fcctl_paused` in single-pair mode; undefined: not known, not written) */
  readonly paused?: boolean;
}

/** The run of `reconcile run --all` as a whole: its file's run series, with `command` only. */
export interface ReconcileAllRun {
  readonly exitCode: number;
  readonly finishedAtSeconds: number;
  readonly durationSeconds: number;
  /** ended early (signal, pause): the last success is not advanced */
  readonly interrupted?: boolean;
  /** ran to the end but is no success (say, no pair found at all) */
  readonly suspect?: boolean;
  readonly paused?: boolean;
}

const PAIR_LAST_SUCCESS = 'fcctl_reconcile_last_success_timestamp_seconds';

/** The labels naming a pair. */
export function pairLabels(p: Pick<ReconcilePairResult, 'schId' | 'formUuid'>): { school: string; form: string } {
  return { school: p.schId, form: p.formUuid };
}

/** The pair ran to its diff and the diff is no suspect one (exit 0 or 1, not interrupted, not empty). */
export function pairSucceeded(p: ReconcilePairResult): boolean {
  return p.counts !== undefined && !p.empty && !p.interrupted && (p.exitCode === 0 || p.exitCode === 1);
}

/**
 * Every reconcile series of a file. Per pair (`{school, form}`): `fcctl_reconcile_rows{category}`,
 * `fcctl_reconcile_differences` (rows in a category that is a difference: not IN_SYNC, RETIRED nor
 * ABSENT_CREATED_AFTER_TASK_START, see `differencesOf`),
 * `fcctl_reconcile_empty` (those three when the diff was written), `fcctl_reconcile_exit_code`,
 * `fcctl_reconcile_duration_seconds`, `fcctl_reconcile_last_success_timestamp_seconds` (kept from
 * the previous file when the pair did not succeed, and carried for the previous file's pairs not
 * run this time) and the counter
 * `fcctl_reconcile_rows_total{category}`. Then the run series: with `run` (`--all`) once, labelled
 * `command="reconcile run"`; without (single-pair runs) each pair's own, labelled with `command`,
 * `school` and `form` too.
 * @example reconcilePairSeries([{ schId: '5', formUuid: 'f', exitCode: 0, finishedAtSeconds: 1764480000, durationSeconds: 3, counts: { IN_SYNC: 10 } }], { previous: NO_PREVIOUS })
 */
export function reconcilePairSeries(
  pairs: readonly ReconcilePairResult[],
  options: {
    readonly previous: PreviousMetrics;
    readonly run?: ReconcileAllRun;
    /**
     * pairs this host finished earlier in the same `--all` run: their gauges written as they were,
     * neither counted again in the counters nor advancing their last success (carried)
     */
    readonly earlier?: readonly ReconcilePairResult[];
  },
): Gauge[] {
  const { previous, run } = options;
  const done = pairs.filter((p) => p.counts !== undefined);
  const shown = [...pairs, ...(options.earlier ?? [])];
  const shownDone = shown.filter((p) => p.counts !== undefined);
  const family = (name: string, help: string, samples: Gauge['samples'], type: Gauge['type'] = 'gauge'): Gauge => ({
    name,
    help,
    type,
    samples,
  });
  const byCategory = (p: ReconcilePairResult) =>
    CATEGORIES.map((category) => ({ labels: { ...pairLabels(p), category }, value: p.counts?.[category] ?? 0 }));
  const ran = new Set(pairs.map((p) => pairKey(pairLabels(p))));
  const lastSuccess = [
    ...pairs.flatMap((p) => {
      const value = pairSucceeded(p) ? p.finishedAtSeconds : previousValue(previous, PAIR_LAST_SUCCESS, pairLabels(p));
      return value === undefined ? [] : [{ labels: pairLabels(p), value }];
    }),
    ...carriedLastSuccess(previous, ran),
  ];
  const series: Gauge[] = [
    family('fcctl_reconcile_rows', "rows of the pair's last diff, by category", shownDone.flatMap(byCategory)),
    family(
      'fcctl_reconcile_differences',
      "rows of the pair's last diff in a category that is a difference (not IN_SYNC, RETIRED nor ABSENT_CREATED_AFTER_TASK_START)",
      shownDone.map((p) => ({ labels: pairLabels(p), value: differencesOf(p.counts ?? {}) })),
    ),
    family(
      'fcctl_reconcile_empty',
      "the pair's last diff warned of an empty side: 1 (no rows at FC nor at SH, or none at FC while SH has some), else 0",
      shownDone.map((p) => ({ labels: pairLabels(p), value: p.empty ? 1 : 0 })),
    ),
    family(
      'fcctl_reconcile_exit_code',
      "exit code of the pair's last run",
      shown.map((p) => ({ labels: pairLabels(p), value: p.exitCode })),
    ),
    family(
      'fcctl_reconcile_duration_seconds',
      "duration of the pair's last run in seconds",
      shown.map((p) => ({ labels: pairLabels(p), value: p.durationSeconds })),
    ),
    family(PAIR_LAST_SUCCESS, 'when the pair last completed its diff without warning, Unix seconds', lastSuccess),
    family(
      'fcctl_reconcile_rows_total',
      'rows diffed for the pair over all runs, by category',
      done.flatMap(byCategory),
      'counter',
    ),
  ];
  const runLevel = run ? allRunSeries(run, done, previous) : pairs.flatMap((p) => pairRunSeries(p, previous));
  // Merged before the counters are added, so each family carries the previous file's samples once.
  return accumulateCounters(mergeFamilies([...series, ...runLevel]), previous);
}

/** A pair's identity as a map key. */
function pairKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify([labels.school ?? '', labels.form ?? '']);
}

/**
 * The previous file's last-success times of the pairs not run this time: processes sharing a run
 * take different pairs on different nights, and a pair that moved to a host where it keeps
 * failing would otherwise vanish from every file, and its stale alert never fire. The gauges of
 * a pair's last run (exit code, rows, differences, empty, duration) are not carried: they would
 * show an old night as tonight's, and an exit 3 carried on a host that no longer runs the pair
 * would page for ever.
 */
function carriedLastSuccess(previous: PreviousMetrics, ran: ReadonlySet<string>): Gauge['samples'] {
  return previousSamples(previous, PAIR_LAST_SUCCESS)
    .filter(
      (s) =>
        s.labels.school !== undefined &&
        s.labels.form !== undefined &&
        Object.keys(s.labels).length === 2 &&
        Number.isFinite(s.value) &&
        !ran.has(pairKey(s.labels)),
    )
    .map((s) => ({ labels: pairLabels({ schId: s.labels.school!, formUuid: s.labels.form! }), value: s.value }));
}

/** A single-pair run's run series: the shared names, with the pair's labels after `command`. */
function pairRunSeries(p: ReconcilePairResult, previous: PreviousMetrics): Gauge[] {
  const labels = pairLabels(p);
  const facts = {
    command: RECONCILE_COMMAND,
    labels,
    durationSeconds: p.durationSeconds,
    exitCode: p.exitCode,
    finishedAtSeconds: p.finishedAtSeconds,
    ...(p.interrupted ? { interrupted: true } : {}),
    ...(p.empty ? { suspect: true } : {}),
  };
  const carried = previousValue(previous, 'fcctl_last_success_timestamp_seconds', {
    command: RECONCILE_COMMAND,
    ...labels,
  });
  const paused = p.paused === undefined ? [] : [labelled(pausedGauge(RECONCILE_COMMAND, p.paused), labels)];
  // fcctl_rows{command,school,form,result} as before; the counter is fcctl_reconcile_rows_total
  const gauges = runGauges({
    ...facts,
    ...(p.counts ? { rowsByResult: p.counts } : {}),
    ...(carried !== undefined ? { previousLastSuccess: carried } : {}),
  });
  return [...gauges, ...runCounters(facts), ...paused];
}

/** `--all`'s run series: once for the file, `command` only; `fcctl_rows` sums the pairs diffed. */
function allRunSeries(run: ReconcileAllRun, done: readonly ReconcilePairResult[], previous: PreviousMetrics): Gauge[] {
  const { paused, ...rest } = run;
  const facts = { command: RECONCILE_COMMAND, ...rest };
  const carried = previousValue(previous, 'fcctl_last_success_timestamp_seconds', { command: RECONCILE_COMMAND });
  const rowsByResult = Object.fromEntries(
    CATEGORIES.map((c) => [c, done.reduce((n, p) => n + (p.counts?.[c] ?? 0), 0)]),
  );
  const gauges = runGauges({
    ...facts,
    ...(done.length > 0 ? { rowsByResult } : {}),
    ...(carried !== undefined ? { previousLastSuccess: carried } : {}),
  });
  return [...gauges, ...runCounters(facts), ...(paused === undefined ? [] : [pausedGauge(RECONCILE_COMMAND, paused)])];
}

function labelled(g: Gauge, labels: Readonly<Record<string, string>>): Gauge {
  return { ...g, samples: g.samples.map((s) => ({ ...s, labels: { ...s.labels, ...labels } })) };
}

/** Several pairs' run series share names: one family per name, samples in pair order (linear in samples). */
function mergeFamilies(gauges: readonly Gauge[]): Gauge[] {
  const byName = new Map<string, { first: Gauge; samples: Gauge['samples'][number][] }>();
  for (const g of gauges) {
    const known = byName.get(g.name);
    if (known)
      for (const x of g.samples) known.samples.push(x); // no spread: a --all family has samples by the ten thousand
    else byName.set(g.name, { first: g, samples: [...g.samples] });
  }
  return [...byName.values()].map(({ first, samples }) => ({ ...first, samples }));
}

/**
 * The series of a single-pair `reconcile run --metrics-file`, for `withRunMetrics`: the run's facts
 * and outcome as one pair's result.
 */
export function singlePairSeries(
  pair: { readonly schId: string; readonly formUuid: string },
  { run, outcome, previous }: RunSeriesInput,
): Gauge[] {
  const result: ReconcilePairResult = {
    ...pair,
    exitCode: run.exitCode,
    finishedAtSeconds: run.finishedAtSeconds,
    durationSeconds: run.durationSeconds,
    ...(outcome.rowsByResult ? { counts: outcome.rowsByResult } : {}),
    ...(outcome.suspect ? { empty: true } : {}),
    ...(outcome.interrupted ? { interrupted: true } : {}),
    ...(outcome.paused !== undefined ? { paused: outcome.paused } : {}),
  };
  return withExtra(reconcilePairSeries([result], { previous }), outcome.extraGauges);
}

/** The body's own gauges, but for a name the series have already (`fcctl_paused`: from `outcome.paused`). */
function withExtra(series: Gauge[], extra: readonly Gauge[] | undefined): Gauge[] {
  const names = new Set(series.map((g) => g.name));
  return [...series, ...(extra ?? []).filter((g) => !names.has(g.name))];
}

/**
 * The series of `reconcile run --all --metrics-file`, for `withRunMetrics`: every pair this
 * process ran, and the run series once (`command="reconcile run"`). `fcctl_paused` comes of
 * `outcome.paused` when set, else of the outcome's own gauges.
 * @example withRunMetrics(RECONCILE_COMMAND, file, clock, body, (input) => allPairsSeries(pairsRan, input))
 */
export function allPairsSeries(
  pairs: readonly ReconcilePairResult[],
  { run, outcome, previous }: RunSeriesInput,
  earlier: readonly ReconcilePairResult[] = [],
): Gauge[] {
  const all: ReconcileAllRun = {
    exitCode: run.exitCode,
    finishedAtSeconds: run.finishedAtSeconds,
    durationSeconds: run.durationSeconds,
    ...(run.interrupted ? { interrupted: true } : {}),
    ...(run.suspect ? { suspect: true } : {}),
    ...(outcome.paused !== undefined ? { paused: outcome.paused } : {}),
  };
  return withExtra(reconcilePairSeries(pairs, { previous, run: all, earlier }), outcome.extraGauges);
}
