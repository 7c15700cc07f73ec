/**
 * `reconcile report`: the data of one `--all` run read once — its task rows (SH), each pair's
 * directory (which files it holds, sample rows of report.csv), the ledger's nights — then rendered
 * by the pure {@link renderReport} into one self-contained HTML file, written atomically.
 *
 * A pair's directory is rewritten by each night run into the same `--out-dir`: its files are shown
 * only when its run.json names this run (`allRunId`); an older run's report says they are gone.
 */
import { createReadStream } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { EnvironmentError, UsageError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import { writeFileAtomic } from '../../files/atomic.js';
import { CATEGORIES, type Category, emptyCounts } from '../diff/decide.js';
import { DIFF_FILES } from '../diff/types.js';
import { RUN_FILES, RUN_MANIFESTS } from '../run/types.js';
import { pairFolderProblem } from '../all/decide.js';
import {
  csvFields,
  differencesIn,
  outOverwritesRun,
  changeBasis,
  pairActions,
  pairKey,
  previousNightOf,
  runDirsOf,
  type ReportTask,
  runShape,
  SAMPLE_CATEGORIES,
  sampleOf,
  taskResultOf,
  throttledOf,
  processesOf,
  trendOf,
  type TrendPairNight,
} from './decide.js';
import { ledgerNights, ledgerPairs } from '../ledger/store.js';
import { renderReport } from './render.js';
import { reportTasks } from './store.js';
import {
  type PairFiles,
  REPORT_FILE,
  type ReportData,
  type ReportPair,
  SAMPLE_BUDGET,
  SAMPLES_PER_CATEGORY,
  type Sample,
  TREND_NIGHTS,
  type Trend,
  type TrendNight,
} from './types.js';

/** The ledger's read functions the trend needs (src/lib/reconcile/ledger/store.ts, the contract of issue 30). */
export interface TrendSource {
  ledgerNights(db: Db, o: { last: number; upTo?: string }): Promise<readonly TrendNight[]>;
  ledgerPairs(db: Db, o: { runIds: string[] }): Promise<readonly TrendPairNight[]>;
}

/** The drift ledger's reads (src/lib/reconcile/ledger/store.ts): the nights and their pairs. */
export const LEDGER_TREND: TrendSource = { ledgerNights, ledgerPairs };

export interface ReportDeps {
  readonly shDb: () => Promise<Db>;
  readonly now: () => Date;
  readonly trend: TrendSource;
}

/** Where a report goes and which run it shows; `ofDir`: the run is the one DIR/summary.json names. */
export interface ReportTarget {
  readonly outDir: string;
  readonly runId: string;
  readonly consumer: string | null;
  readonly outFile: string;
  readonly ofDir: boolean;
}

/** The run DIR/summary.json names, and the consumer it recorded; null when DIR holds none. */
export async function runOfDir(outDir: string): Promise<{ runId: string; consumer: string | null } | null> {
  const text = await readFile(join(outDir, 'summary.json'), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as { runId?: unknown; consumer?: unknown };
    if (typeof v.runId !== 'string') return null;
    return { runId: v.runId, consumer: typeof v.consumer === 'string' ? v.consumer : null };
  } catch {
    return null;
  }
}

/**
 * The trend of the last {@link TREND_NIGHTS} nights up to this run, from the drift ledger: the one
 * place the report reads it.
 */
export async function readTrend(
  source: TrendSource,
  shDb: Db,
  runId: string,
): Promise<Trend & { readonly pairNights: readonly TrendPairNight[] }> {
  const nights = await source.ledgerNights(shDb, { last: TREND_NIGHTS, upTo: runId });
  const pairs = nights.length === 0 ? [] : await source.ledgerPairs(shDb, { runIds: nights.map((n) => n.runId) });
  return { ...trendOf(nights, pairs), pairNights: pairs };
}

/**
 * A path with every symlink followed: the file it names when it exists (a link to a file is that
 * file), else its folder's real path and its name.
 */
async function realPathOf(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return join(await realpath(dirname(path)).catch(() => dirname(path)), basename(path));
  }
}

/**
 * Whether `outFile` would overwrite a run's files, judged from its real folder up: each folder on
 * the way that is `outDir` (by identity: device and inode, so a bind mount or a second mount of it
 * is no way round) or holds a `reconcile run --all` summary.json (a run's folder, whatever
 * `--out-dir` and `--run-id` name) is a run whose summary.json and pair folders are not for the
 * report. The reason, or null.
 */
async function overwritesARun(outDir: string, outFile: string): Promise<string | null> {
  const given = await stat(outDir).catch(() => null);
  const names = [basename(outFile)];
  let dir = await realpath(dirname(outFile)).catch(() => dirname(outFile));
  for (;;) {
    const here = await stat(dir).catch(() => null);
    const isGiven = here !== null && given !== null && here.dev === given.dev && here.ino === given.ino;
    if (isGiven || (await runOfDir(dir)) !== null) {
      const why = outOverwritesRun(dir, join(dir, ...[...names].reverse()));
      if (why !== null) return why;
    }
    const up = dirname(dir);
    if (up === dir) return null;
    names.push(basename(dir));
    dir = up;
  }
}

/**
 * `--out-dir` of a run given by `--run-id` alone: the folder its processes recorded in the task
 * table, the first of them (most pairs first) that holds the run's summary.json on this host, else
 * the first that exists with no summary.json at all. A run unknown, one that recorded none (finished
 * before fcctl recorded it), whose folders are all elsewhere or now hold another run's summary.json
 * (a later night in the same --out-dir: its report.html is not overwritten): exit 2, naming what to give.
 */
export async function recordedRunDir(shDb: Db, runId: string): Promise<string> {
  const tasks = await reportTasks(shDb, runId);
  if (tasks.length === 0)
    throw new UsageError(`no run ${JSON.stringify(runId)} in the task table (fcctl_reconcile_task)`);
  const dirs = runDirsOf(tasks);
  if (dirs.length === 0)
    throw new UsageError(
      `run ${JSON.stringify(runId)} recorded no folder (it ran before fcctl recorded them): give its --out-dir`,
    );
  const held = await Promise.all(dirs.map(async (d) => ({ d, run: (await runOfDir(d))?.runId ?? null })));
  const own = held.find((h) => h.run === runId);
  if (own !== undefined) return own.d;
  // a folder a later night rewrote (one --out-dir every night) holds that night's report.html: the
  // report of this run is never written over it, nor drawn from that night's pair folders
  for (const { d, run } of held) if (run === null && (await stat(d).catch(() => null))?.isDirectory()) return d;
  const later = held.find((h) => h.run !== null);
  if (later !== undefined)
    throw new UsageError(
      `run ${JSON.stringify(runId)} recorded ${later.d}, which now holds run ${JSON.stringify(later.run)}: give --out-dir and --out (another file) to report it`,
    );
  throw new UsageError(
    `run ${JSON.stringify(runId)} recorded ${dirs.join(', ')}, not on this host: give its --out-dir`,
  );
}

/**
 * Where the report goes and which run it shows, checked before anything is read: `--out`'s folder
 * must exist and `--out` must not be one of the run's own files (exit 2), the run must be known (exit 2).
 * The run's files are compared by real paths and by the folders' identities: a symlink to the run
 * folder, to a folder in it or to one of its files, a bind mount of it, or another `--out-dir`
 * with `--run-id`, is no way round.
 */
export async function reportTarget(o: {
  outDir: string;
  runId: string | null;
  out: string | null;
}): Promise<ReportTarget> {
  const outDir = resolve(o.outDir);
  const outFile = resolve(o.out ?? join(outDir, REPORT_FILE));
  const folder = await stat(dirname(outFile)).catch(() => null);
  if (folder === null || !folder.isDirectory())
    throw new UsageError(`--out ${outFile}: its folder ${dirname(outFile)} does not exist`);
  const overwrites =
    outOverwritesRun(await realPathOf(outDir), await realPathOf(outFile)) ?? (await overwritesARun(outDir, outFile));
  if (overwrites !== null) throw new UsageError(`--out ${outFile}: ${overwrites}, not a place for the report`);
  const recorded = await runOfDir(outDir);
  if (o.runId === null && recorded === null)
    throw new UsageError(`${outDir} holds no summary.json of reconcile run --all: give the run's --out-dir`);
  const runId = o.runId ?? recorded!.runId;
  return { outDir, runId, consumer: recorded?.consumer ?? null, outFile, ofDir: recorded?.runId === runId };
}

/** Builds the report's data: the run's tasks, its pairs' files and samples, the trend. */
export async function buildReportData(t: ReportTarget, deps: ReportDeps): Promise<ReportData> {
  const shDb = await deps.shDb();
  const tasks = await reportTasks(shDb, t.runId);
  // a run DIR/summary.json names is known even with no pair (nothing found to compare): a page of 0 pairs
  if (tasks.length === 0 && !t.ofDir)
    throw new UsageError(`no run ${JSON.stringify(t.runId)} in the task table (fcctl_reconcile_task)`);
  const shape = runShape(tasks);
  const results = tasks.map((task) => taskResultOf(task.result_json));
  const pairs = await Promise.all(tasks.map((task) => pairOf(task, t)));
  await addSamples(pairs);
  const { pairNights, ...trend } = await readTrend(deps.trend, shDb, t.runId);
  const counts = emptyCounts();
  for (const p of pairs) for (const c of CATEGORIES) counts[c] += p.counts?.[c] ?? 0;
  // the change is against the last night of the same pairs: an ad-hoc run of one pair is no night of the fleet
  const previous = previousNightOf(
    t.runId,
    tasks.map((x) => pairKey(x.sch_id, x.form_uuid)),
    trend.nights,
    pairNights,
  );
  return {
    runId: t.runId,
    generatedAt: deps.now().toISOString(),
    outDir: t.outDir,
    consumer: t.consumer,
    startedAt: shape.startedAt,
    finishedAt: shape.finishedAt,
    throttledSeconds: throttledOf(results),
    processes: processesOf(results),
    hosts: shape.hosts,
    byState: shape.byState,
    holders: shape.holders,
    counts,
    previous: previous === null ? null : comparedWith(previous.runId, pairs, pairNights),
    pairs,
    trend,
  };
}

/** The previous night's counts and this run's over the pairs done on both (a failed pair is no change). */
function comparedWith(runId: string, pairs: readonly ReportPair[], pairNights: readonly TrendPairNight[]) {
  const tonight = pairs.map((p) => ({ key: pairKey(p.schId, p.formUuid), counts: p.counts }));
  const { now, before, leftOut } = changeBasis(tonight, runId, pairNights);
  return { runId, counts: before, now, leftOut };
}

type Building = ReportPair & { samples: Partial<Record<Category, Sample[]>>; samplesLeftOut: boolean };

/** One pair: its task row's result, and which of its files are this run's. */
async function pairOf(task: ReportTask, t: ReportTarget): Promise<Building> {
  const absDir = join(t.outDir, task.sch_id, task.form_uuid);
  const r = taskResultOf(task.result_json);
  // a form uuid that is no folder name (`../..`) points outside the run: nothing read there
  const run =
    pairFolderProblem(task.form_uuid) !== null
      ? null
      : await readFile(join(absDir, RUN_FILES.run), 'utf8').then(
          (s) => JSON.parse(s) as { allRunId?: unknown },
          () => null,
        );
  const filesOfRun = run !== null && run.allRunId === t.runId;
  const names = filesOfRun ? new Set(await readdir(absDir).catch(() => [])) : new Set<string>();
  const rel = relative(dirname(t.outFile), absDir).split(sep).join('/');
  const has = (name: string) => (names.has(name) ? name : null);
  const files: PairFiles | null = filesOfRun
    ? {
        dir: rel,
        report: has(DIFF_FILES.report),
        repairPlan: has(DIFF_FILES.repairPlan),
        retireCandidates: has(DIFF_FILES.retireCandidates),
        summary: has(DIFF_FILES.summary),
        fcManifest: has(RUN_MANIFESTS.fc.manifest),
      }
    : null;
  return {
    schId: task.sch_id,
    formUuid: task.form_uuid,
    state: task.state,
    counts: task.state === 'DONE' ? r.counts : null,
    differences: task.state === 'DONE' ? differencesIn(r.counts) : 0,
    error: task.state === 'FAILED' ? (r.error ?? 'unknown') : null,
    seconds: r.seconds,
    host: task.host,
    filesOfRun,
    files,
    absDir,
    samples: {},
    samplesLeftOut: false,
    actions:
      task.state === 'DONE' && filesOfRun
        ? pairActions({
            counts: r.counts,
            hasRepairPlan: files?.repairPlan !== null,
            hasRetireCandidates: files?.retireCandidates !== null,
          })
        : 0,
  };
}

/** Sample rows for the pairs with the most differences first, within {@link SAMPLE_BUDGET}. */
async function addSamples(pairs: Building[]): Promise<void> {
  let budget = SAMPLE_BUDGET;
  const order = pairs.filter((p) => p.differences > 0 && p.files?.report).sort((a, b) => b.differences - a.differences);
  for (const p of order) {
    if (budget <= 0) {
      p.samplesLeftOut = true;
      continue;
    }
    p.samples = await readSamples(join(p.absDir, DIFF_FILES.report), p.counts!);
    budget -= Object.values(p.samples).reduce((n, s) => n + s.length, 0);
  }
}

/** Up to {@link SAMPLES_PER_CATEGORY} rows per difference category of a report.csv, read until each has them. */
async function readSamples(
  file: string,
  counts: Readonly<Record<Category, number>>,
): Promise<Partial<Record<Category, Sample[]>>> {
  const want = (c: Category) => Math.min(counts[c] ?? 0, SAMPLES_PER_CATEGORY);
  let missing = SAMPLE_CATEGORIES.reduce((n, c) => n + want(c), 0);
  const out: Partial<Record<Category, Sample[]>> = {};
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
  let columns: string[] | null = null;
  try {
    for await (const line of lines) {
      if (columns === null) {
        columns = csvFields(line);
        continue;
      }
      const s = line === '' ? null : sampleOf(csvFields(line), columns);
      if (s === null || (out[s.category]?.length ?? 0) >= want(s.category)) continue;
      (out[s.category] ??= []).push(s.sample);
      if (--missing <= 0) break;
    }
  } finally {
    lines.close();
  }
  return out;
}

/** Writes the report atomically; a file that cannot be written is exit 3. */
export async function writeReport(outFile: string, data: ReportData): Promise<{ bytes: number }> {
  const html = renderReport(data);
  await writeFileAtomic(outFile, html, 0o600).catch((err: NodeJS.ErrnoException) => {
    throw new EnvironmentError(`cannot write ${outFile}: ${err.code ?? err.message}`);
  });
  return { bytes: Buffer.byteLength(html) };
}

/**
 * report.html at the end of a `reconcile run --all` process that found no pair pending or held
 * (the last one of the run to finish): the run's directory, its run id and consumer.
 */
export async function writeRunReport(
  o: { outDir: string; runId: string; consumer: string },
  deps: { shDb: () => Promise<Db>; now: () => Date },
): Promise<string> {
  const target = await reportTarget({ outDir: o.outDir, runId: o.runId, out: null });
  const data = await buildReportData({ ...target, consumer: o.consumer }, { ...deps, trend: LEDGER_TREND });
  await writeReport(target.outFile, data);
  return target.outFile;
}
