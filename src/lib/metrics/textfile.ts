/**
 * Prometheus text exposition format (version 0.0.4) for the node_exporter textfile collector:
 * cron commands write their gauges and counters to a `.prom` file, replaced atomically so the
 * collector never reads half a file. Counters (`…_total`) grow across runs: each run reads the
 * previous file at the same path and adds to it (see {@link accumulateCounters}). Every series
 * of a file carries the file's base name ({@link FILE_LABEL}), so no two files of one collector
 * directory hold the same series, whatever they are called and whatever ran into them.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { writeFileAtomic } from '../files/atomic.js';
import { acquireLock, type FileLock } from '../files/lock.js';
import { EnvironmentError } from '../cli/exit.js';
import { parseExposition, type ParsedSample, seriesKey } from './parse.js';

/** Re-exported for the callers that imported it from here before it moved to `src/lib/files/atomic.ts`. */
export { writeFileAtomic };

/** One sample of a gauge: its labels and value. */
export interface Sample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * A metric family with its help text and samples (an empty list still writes HELP and TYPE): a
 * gauge unless `type` says `counter`. Named `Gauge` for the callers that predate counters.
 */
export interface Gauge {
  readonly name: string;
  readonly help: string;
  readonly type?: 'gauge' | 'counter';
  readonly samples: readonly Sample[];
}
/** A gauge or a counter. */
export type Metric = Gauge;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * A gauge with one sample.
 * @example gauge('fcctl_deliveries_due', 'rows due now', 12)
 */
export function gauge(name: string, help: string, value: number, labels?: Readonly<Record<string, string>>): Gauge {
  return { name, help, samples: [labels ? { labels, value } : { value }] };
}

/**
 * A counter with one sample: this run's increment, until {@link accumulateCounters} adds the
 * previous file's value. Its name must end in `_total`.
 * @example counter('fcctl_runs_total', 'runs by exit code', 1, { command: 'deliveries send', exit_code: '0' })
 */
export function counter(name: string, help: string, value: number, labels?: Readonly<Record<string, string>>): Gauge {
  return { name, help, type: 'counter', samples: [labels ? { labels, value } : { value }] };
}

/** Label values escape `\`, `"` and newline (exposition format). */
export function escapeLabelValue(value: string): string {
  if (!/[\\"\n]/.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escapes `\` and newline only. */
export function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Go's ParseFloat reads these; JS `String()` gives `Infinity`, which it does not. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/**
 * The exposition text of some gauges and counters. Names, a series given twice and counter values
 * (finite, not negative) are checked up front (TypeError), so a typo fails the first test instead
 * of silently making the collector drop the whole file.
 * @example formatMetrics([gauge('fcctl_x', 'help', 1, { state: 'PENDING' })]) // '# HELP fcctl_x help\n# TYPE fcctl_x gauge\nfcctl_x{state="PENDING"} 1\n'
 */
export function formatMetrics(gauges: readonly Gauge[]): string {
  const seen = new Set<string>();
  const goodLabels = new Set<string>(); // checked once, not once per sample
  const lines: string[] = [];
  for (const g of gauges) {
    if (!METRIC_NAME.test(g.name)) throw new TypeError(`invalid metric name: ${JSON.stringify(g.name)}`);
    if (seen.has(g.name)) throw new TypeError(`metric ${g.name} given twice`);
    seen.add(g.name);
    const type = g.type ?? 'gauge';
    if (type === 'counter' && !g.name.endsWith('_total')) throw new TypeError(`counter ${g.name} must end in _total`);
    lines.push(`# HELP ${g.name} ${escapeHelp(g.help)}`, `# TYPE ${g.name} ${type}`);
    const series = new Set<string>();
    for (const s of g.samples) {
      const labels = Object.entries(s.labels ?? {});
      for (const [k] of labels) {
        if (goodLabels.has(k)) continue;
        if (!LABEL_NAME.test(k) || k.startsWith('__')) throw new TypeError(`invalid label name: ${JSON.stringify(k)}`);
        goodLabels.add(k);
      }
      const key = seriesKey(g.name, s.labels ?? {});
      if (series.has(key)) throw new TypeError(`series ${key} given twice`);
      series.add(key);
      if (type === 'counter' && !(Number.isFinite(s.value) && s.value >= 0))
        throw new TypeError(`counter ${key} has value ${s.value}`);
      const labelText =
        labels.length === 0 ? '' : `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
      lines.push(`${g.name}${labelText} ${formatValue(s.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * The label every series of a metrics file carries: the file's base name. node_exporter refuses a
 * series found in two files of its directory ("was collected before with the same name and label
 * values", node_exporter #753) and two files of one directory never share a base name, so the
 * nightly `--all` file, a one-off pair run's file beside it, or one command run into two files
 * never collide — which labels naming the command, the pair or the kind of run could not promise.
 */
export const FILE_LABEL = 'metrics_file';

/**
 * Every sample labelled with the file it is written to ({@link FILE_LABEL}), after its own labels.
 * @example withFileLabel([gauge('fcctl_x', 'help', 1)], 'fcctl_send.prom')[0].samples[0].labels // { metrics_file: 'fcctl_send.prom' }
 */
export function withFileLabel(gauges: readonly Gauge[], file: string): Gauge[] {
  return gauges.map((g) => ({
    ...g,
    samples: g.samples.map((s) => ({ ...s, labels: { ...s.labels, [FILE_LABEL]: file } })),
  }));
}

/**
 * A previous file's samples without {@link FILE_LABEL}: what the series builders look up and add
 * to. A file of an fcctl that wrote no such label reads the same, so its counters carry on.
 */
export function withoutFileLabel(samples: readonly ParsedSample[]): ParsedSample[] {
  return samples.map((s) => {
    if (!(FILE_LABEL in s.labels)) return s;
    const { [FILE_LABEL]: _file, ...labels } = s.labels;
    return { ...s, labels };
  });
}

/**
 * Formats and writes gauges to a textfile-collector file (see {@link writeFileAtomic}), every
 * series labelled with the file's base name ({@link FILE_LABEL}).
 * @example await writeMetricsFile('/var/lib/node_exporter/fcctl_scan.prom', [gauge('fcctl_deliveries_due', 'rows due now', 3)])
 */
export async function writeMetricsFile(path: string, gauges: readonly Gauge[]): Promise<void> {
  await writeFileAtomic(path, formatMetrics(withFileLabel(gauges, basename(path))));
}

/** What every cron command reports about its own run. */
export interface RunFacts {
  readonly command: string;
  /**
   * labels added to every run series after `command` (`reconcile run` of one pair: `school`,
   * `form`), so the files of two targets of one command never hold the same series
   */
  readonly labels?: Readonly<Record<string, string>>;
  readonly durationSeconds: number;
  readonly exitCode: number;
  readonly finishedAtSeconds: number;
  /** rows by result (`accepted`, `failed`, …); written as `fcctl_rows{command,result}` */
  readonly rowsByResult?: Readonly<Record<string, number>>;
  /** the previous file's last success time, kept when this run did not complete */
  readonly previousLastSuccess?: number;
  /** an interrupt (SIGINT/SIGTERM) ended it early: exit 1, but it did not run to the end */
  readonly interrupted?: boolean;
  /**
   * it ran to the end but warned that its input is suspect (`reconcile run`: an empty side, most
   * likely a typo or the wrong database): exit 1, and not a success either
   */
  readonly suspect?: boolean;
}

/**
 * The run gauges shared by every cron command: duration, exit code, rows by result and the last
 * time the command completed (exit 0 or 1: it ran to the end; items may have failed). A run that
 * did not complete — exit 3 or 4, or interrupted (exit 1 too) — or that warned its input is
 * suspect (exit 1 too) keeps the previous last-success time, so an alert on its age fires.
 * @example runGauges({ command: 'deliveries send', durationSeconds: 2, exitCode: 0, finishedAtSeconds: 1764480000, rowsByResult: { accepted: 10 } })
 */
export function runGauges(run: RunFacts): Gauge[] {
  const cmd = { command: run.command, ...run.labels };
  const completed = (run.exitCode === 0 || run.exitCode === 1) && !run.interrupted && !run.suspect;
  const lastSuccess = completed ? run.finishedAtSeconds : run.previousLastSuccess;
  const gauges: Gauge[] = [
    gauge('fcctl_run_duration_seconds', 'duration of the last run in seconds', run.durationSeconds, cmd),
    gauge('fcctl_run_exit_code', 'exit code of the last run', run.exitCode, cmd),
    gauge('fcctl_last_run_timestamp_seconds', 'when the command last ran, Unix seconds', run.finishedAtSeconds, cmd),
  ];
  if (lastSuccess !== undefined)
    gauges.push(gauge(LAST_SUCCESS, 'when the command last completed, Unix seconds', lastSuccess, cmd));
  if (run.rowsByResult) {
    gauges.push({
      name: 'fcctl_rows',
      help: 'rows handled by the last run, by result',
      samples: Object.entries(run.rowsByResult).map(([result, value]) => ({ labels: { ...cmd, result }, value })),
    });
  }
  return gauges;
}

const LAST_SUCCESS = 'fcctl_last_success_timestamp_seconds';
/** The exit codes a cron command's run can end with: each run counter starts at 0, so `increase()` sees the first 1. */
const EXIT_CODES = [0, 1, 2, 3, 4];

/**
 * This run's increments of the run counters: `fcctl_runs_total{command,exit_code}` (1 for this
 * run's code, 0 for the others, so a first failure is an increase and not a new series) and
 * `fcctl_rows_total{command,result}`. {@link accumulateCounters} adds the previous file's values.
 */
export function runCounters(run: RunFacts): Gauge[] {
  const cmd = { command: run.command, ...run.labels };
  const codes = EXIT_CODES.includes(run.exitCode) ? EXIT_CODES : [...EXIT_CODES, run.exitCode];
  const counters: Gauge[] = [
    {
      name: 'fcctl_runs_total',
      help: 'runs of the command, by exit code',
      type: 'counter',
      samples: codes.map((c) => ({ labels: { ...cmd, exit_code: String(c) }, value: c === run.exitCode ? 1 : 0 })),
    },
  ];
  if (run.rowsByResult) {
    counters.push({
      name: 'fcctl_rows_total',
      help: 'rows handled by the command, by result, over all runs',
      type: 'counter',
      samples: Object.entries(run.rowsByResult).map(([result, value]) => ({ labels: { ...cmd, result }, value })),
    });
  }
  return counters;
}

/**
 * Every run series of a command — gauges, and counters added to the previous file's — with the
 * last-success time carried from the previous file when this run did not complete.
 * @example runSeries({ command: 'deliveries send', durationSeconds: 2, exitCode: 0, finishedAtSeconds: 1764480000 }, NO_PREVIOUS)
 */
export function runSeries(run: RunFacts, previous: PreviousMetrics): Gauge[] {
  const previousLastSuccess =
    run.previousLastSuccess ?? previousValue(previous, LAST_SUCCESS, { command: run.command, ...run.labels });
  const facts = previousLastSuccess === undefined ? run : { ...run, previousLastSuccess };
  return accumulateCounters([...runGauges(facts), ...runCounters(run)], previous);
}

/** The samples of the file a command wrote last time at the same path (none when there is none). */
export interface PreviousMetrics {
  readonly samples: readonly ParsedSample[];
  /**
   * each family's HELP and TYPE as read, so a counter family this run wrote none of is carried
   * whole; without it (samples built by hand) a name ending in `_total` is taken for a counter
   */
  readonly families?: readonly { readonly name: string; readonly help?: string; readonly type: string }[];
}
export const NO_PREVIOUS: PreviousMetrics = { samples: [] };

interface PreviousIndex {
  readonly byKey: ReadonlyMap<string, ParsedSample>;
  readonly byName: ReadonlyMap<string, readonly ParsedSample[]>;
  readonly keyOf: ReadonlyMap<ParsedSample, string>;
}
// Built once per previous file: a --all file holds a dozen samples per pair, and looking each
// pair's up by a scan of all of them made writing the file quadratic in pairs.
const indexes = new WeakMap<readonly ParsedSample[], PreviousIndex>();

function indexOf(previous: PreviousMetrics): PreviousIndex {
  const known = indexes.get(previous.samples);
  if (known) return known;
  const byKey = new Map<string, ParsedSample>();
  const byName = new Map<string, ParsedSample[]>();
  const keyOf = new Map<ParsedSample, string>();
  for (const s of previous.samples) {
    const key = seriesKey(s.name, s.labels);
    if (byKey.has(key)) continue; // the first of a series given twice, as the collector would refuse the rest
    byKey.set(key, s);
    keyOf.set(s, key);
    const list = byName.get(s.name);
    if (list) list.push(s);
    else byName.set(s.name, [s]);
  }
  const index = { byKey, byName, keyOf };
  indexes.set(previous.samples, index);
  return index;
}

/** The previous file's samples of one family, in file order (a series given twice: its first). */
export function previousSamples(previous: PreviousMetrics, name: string): readonly ParsedSample[] {
  return indexOf(previous).byName.get(name) ?? [];
}

/**
 * The previous file at `path`, its samples without {@link FILE_LABEL} (see {@link withoutFileLabel}).
 * A missing, unreadable or unparsable file is no previous file:
 * counters start again from 0 (Prometheus reads a drop as a counter reset, so `increase()` stays
 * right), and no last-success time is carried.
 */
export async function readPreviousMetrics(path: string): Promise<PreviousMetrics> {
  try {
    const { readFile } = await import('node:fs/promises');
    const families = parseExposition(await readFile(path, 'utf8'));
    return {
      samples: withoutFileLabel(families.flatMap((f) => f.samples)),
      families: families.map(({ name, help, type }) => ({ name, ...(help !== undefined ? { help } : {}), type })),
    };
  } catch {
    return NO_PREVIOUS;
  }
}

/** One series' value in the previous file, if it is there and a finite number. */
export function previousValue(
  previous: PreviousMetrics,
  name: string,
  labels: Readonly<Record<string, string>>,
): number | undefined {
  const value = indexOf(previous).byKey.get(seriesKey(name, labels))?.value;
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/**
 * Adds the previous file's value to every counter sample, and carries the previous samples of
 * each counter this run did not touch (a result or pair absent this time keeps its count) — and
 * every previous counter family this run wrote none of (a send that failed with exit 3 writes no
 * `fcctl_rows_total`, which must not drop to nothing). A previous value that is not a finite
 * number ≥ 0 is taken as 0 (the series restarts, which Prometheus reads as a reset). Gauges pass
 * through unchanged.
 * @example accumulateCounters([counter('fcctl_runs_total', 'runs', 1)], { samples: [{ name: 'fcctl_runs_total', labels: {}, value: 4 }] }) // value 5
 */
export function accumulateCounters(metrics: readonly Gauge[], previous: PreviousMetrics): Gauge[] {
  const valid = (v: number | undefined) => (v !== undefined && Number.isFinite(v) && v >= 0 ? v : 0);
  const { byKey, keyOf } = indexOf(previous);
  const carry = (m: Gauge, seen: ReadonlySet<string>) =>
    previousSamples(previous, m.name)
      .filter((s) => !seen.has(keyOf.get(s)!) && valid(s.value) === s.value)
      .map((s) => ({ labels: s.labels, value: s.value }));
  const out = metrics.map((m) => {
    if (m.type !== 'counter') return m;
    const seen = new Set<string>();
    const now = m.samples.map((s) => {
      const key = seriesKey(m.name, s.labels ?? {});
      seen.add(key);
      return { ...s, value: s.value + valid(byKey.get(key)?.value) };
    });
    return { ...m, samples: [...now, ...carry(m, seen)] };
  });
  const written = new Set(metrics.map((m) => m.name));
  for (const f of previousCounterFamilies(previous)) {
    if (written.has(f.name)) continue;
    const family: Gauge = { name: f.name, help: f.help, type: 'counter', samples: [] };
    out.push({ ...family, samples: carry(family, new Set()) });
  }
  return out;
}

/** The previous file's counter families, by TYPE when it was read from a file, else by name. */
function previousCounterFamilies(previous: PreviousMetrics): { name: string; help: string }[] {
  const names = previous.families
    ? previous.families.filter((f) => f.type === 'counter').map((f) => f.name)
    : [...indexOf(previous).byName.keys()].filter((n) => n.endsWith('_total'));
  const help = new Map((previous.families ?? []).map((f) => [f.name, f.help]));
  return names
    .filter((n) => METRIC_NAME.test(n) && n.endsWith('_total'))
    .map((name) => ({ name, help: help.get(name) ?? 'carried from the previous file' }));
}

/** The last-success time in an existing metrics file, if any (so a failed run can carry it). */
export async function previousLastSuccess(
  path: string,
  command: string,
  labels?: Readonly<Record<string, string>>,
): Promise<number | undefined> {
  return previousValue(await readPreviousMetrics(path), LAST_SUCCESS, { command, ...labels });
}

/**
 * Checks, before a command does any work, that its metrics file can be written: the directory
 * exists, is a directory and is writable, and the path is not a directory. Otherwise an
 * {@link EnvironmentError} (exit 3): a run whose gauges would be lost must not publish 500 rows and
 * then fail, or alerts would stay silent while rows moved.
 * @example await checkMetricsFile('/var/lib/node_exporter/fcctl_send.prom')
 */
export async function checkMetricsFile(path: string): Promise<void> {
  const file = resolve(path);
  const dir = dirname(file);
  const refuse = (why: string) => new EnvironmentError(`cannot write --metrics-file ${path}: ${why}; nothing was done`);
  const dirStat = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    throw refuse(
      err.code === 'ENOENT'
        ? `directory ${dir} does not exist`
        : `cannot use directory ${dir} (${err.code ?? err.message})`,
    );
  });
  if (!dirStat.isDirectory()) throw refuse(`${dir} is not a directory`);
  // The file is written as a temp file in this directory and renamed over the path.
  await access(dir, constants.W_OK | constants.X_OK).catch((err: NodeJS.ErrnoException) => {
    throw refuse(`directory ${dir} is not writable (${err.code ?? err.message})`);
  });
  const fileStat = await stat(file).catch(() => null);
  if (fileStat?.isDirectory()) throw refuse('it is a directory');
}

/** How long a writer waits for another's read-merge-rename of the same file, in milliseconds. */
export const METRICS_LOCK_WAIT_MS = 5000;

/**
 * Reads the previous file at `path`, merges this run's series into it (`seriesOf`) and renames the
 * result over it, holding `<path>.lock` throughout (node_exporter reads only `*.prom`): two
 * commands writing one file would otherwise both read the same previous file, and the second
 * rename would lose the first's increments. The lock is held for milliseconds, so a writer waits
 * up to {@link METRICS_LOCK_WAIT_MS} for it; a dead holder's lock (same host, pid gone) is taken
 * over. A lock not had in time, or a file not written, is an environment error (exit 3).
 * @example await updateRunMetrics(file, 'deliveries send', (previous) => runSeries(run, previous))
 */
export async function updateRunMetrics(
  path: string,
  command: string,
  seriesOf: (previous: PreviousMetrics) => readonly Gauge[],
  waitMs = METRICS_LOCK_WAIT_MS,
): Promise<void> {
  let lock: FileLock;
  try {
    lock = await acquireLock(`${path}.lock`, command, `--metrics-file ${path}`, { waitMs });
  } catch (err) {
    throw new EnvironmentError(
      `cannot write --metrics-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      { cause: err },
    );
  }
  try {
    await writeRunMetrics(path, seriesOf(await readPreviousMetrics(path)));
  } finally {
    await lock.release();
  }
}

/**
 * Writes a command's metrics file; a file that cannot be written is an environment error
 * (exit 3). The summary is printed after it by main, with that exit code (see `SummaryHold`).
 */
export async function writeRunMetrics(path: string, gauges: readonly Gauge[]): Promise<void> {
  try {
    await writeMetricsFile(path, gauges);
  } catch (err) {
    throw new EnvironmentError(
      `cannot write --metrics-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      { cause: err },
    );
  }
}
