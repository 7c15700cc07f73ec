/**
 * `reconcile diff`: a merge-join of the complete FC and SH manifests of one school and form (both
 * sorted by `answerUuid`), streamed line by line in constant memory, into five files:
 *
 * - `report.csv` — one row per difference (every category but `IN_SYNC` and `RETIRED`), columns
 *   `category, answerUuid, schId, fcRevision, fcContentHash, fcIsDeleted, localRevision,
 *   localContentHash, localIsDeleted, localCreateTime, localRetiredAt` (isDeleted as 0/1; empty
 *   cells for a side without the row);
 * - `repair-plan.jsonl` — `MISSING_LOCAL`, `STALE_LOCAL`, `HASH_CONFLICT` with the expected local
 *   triple as read (all null for a missing row) and the FC values;
 * - `local-ahead.jsonl` — `LOCAL_AHEAD`, same shape;
 * - `retire-candidates.jsonl` — `ABSENT_AT_FC` with the expected local triple, the local
 *   createTime and the task start;
 * - `summary.json` — counts by category, the inputs (file, bytes, rows, SHA-256, completion time,
 *   checkpoints), the outputs (rows, SHA-256), the task start.
 *
 * Every file is written to a temp file beside it and renamed only when the whole join succeeded,
 * `summary.json` last: a refused input (exit 2 for a bad line, exit 4 for a manifest its
 * checkpoints do not vouch for) leaves the directory as it was.
 */
import { mkdir, rmdir, stat, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify as csvStringify } from 'csv-stringify/sync';
import { SafetyError, UsageError } from '../../cli/exit.js';
import { fsyncDir, writeFileAtomic } from '../../files/atomic.js';
import { type ManifestSource, ManifestReader, loadManifestSource } from '../../manifest/reader.js';
import { compareKeys, type ManifestRow } from '../../manifest/row.js';
import { classify, emptyCounts, SETTLED_CATEGORIES } from './decide.js';
import { taskStartRefusal } from '../decide.js';
import { diffSummary, parseTaskStart, planLineOf, reportRow, sameScanRefusal } from './decide.js';
import { Sink } from './sink.js';
import { DIFF_FILES, type DiffDeps, type DiffOptions, type DiffResult, REPORT_COLUMNS } from './types.js';

/**
 * Runs the diff. Inputs are checked before anything is written: both checkpoints complete and of
 * the same school, form and shards, the task start before the FC scan's start (else exit 4);
 * every line as it is read (exit 2 naming it).
 * @example const r = await runDiff({ fcFile, shFile, fcCheckpoints: [fcCp], shCheckpoints: [shCp], taskStart: '2026-11-30 01:00:00', outDir: 'out' })
 */
export async function runDiff(o: DiffOptions, deps: DiffDeps = {}): Promise<DiffResult> {
  const now = deps.now ?? (() => new Date());
  const taskStart = parseTaskStart(o.taskStart);
  const sources = await loadInputs(o, taskStart);
  const { outDir, createdDir } = await prepareOutDir(o.outDir);
  const fc = await ManifestReader.open(sources.fc);
  const sh = await ManifestReader.open(sources.sh);
  const sinks: Sink[] = [];
  let committed = false;
  try {
    const out = new DiffOutput(await openSinks(outDir, sinks), sources.fc.formUuid, taskStart);
    const joined = await mergeJoin(fc, sh, out, deps);
    if (joined.kind === 'stopped') return joined;
    const outputs: Record<string, { rows: number; sha256: string }> = {};
    for (const s of sinks) outputs[s.finalPath.slice(outDir.length + 1)] = await s.seal();
    const summary = diffSummary({
      taskStart,
      fc: sources.fc,
      sh: sources.sh,
      sha256: { fc: fc.sha256!, sh: sh.sha256! },
      counts: out.counts,
      outputs,
      createdAt: now().toISOString(),
    });
    // The old summary goes first: a directory with a summary always holds that summary's files.
    await unlink(join(outDir, DIFF_FILES.summary)).catch(() => undefined);
    for (const s of sinks) await s.rename();
    committed = true;
    await writeFileAtomic(join(outDir, DIFF_FILES.summary), `${JSON.stringify(summary, null, 2)}\n`, 0o600);
    await fsyncDir(outDir);
    return { kind: 'done', summary, outDir };
  } finally {
    await fc.close();
    await sh.close();
    if (!committed) {
      for (const s of sinks) await s.discard();
      if (createdDir) await rmdir(outDir).catch(() => undefined);
    }
  }
}

/** Both manifests, vouched for by their checkpoints, of one scan, and a task start before the FC scan's. */
async function loadInputs(o: DiffOptions, taskStart: string): Promise<{ fc: ManifestSource; sh: ManifestSource }> {
  const fc = await loadManifestSource('fc', o.fcFile, o.fcCheckpoints);
  const sh = await loadManifestSource('sh', o.shFile, o.shCheckpoints);
  const other = sameScanRefusal(fc, sh);
  if (other !== null) throw new SafetyError(other);
  // A task start is taken on trust no longer: a late one turns answers created at FC during the
  // scan into retire candidates.
  const late = taskStartRefusal(
    { local: taskStart, utc: o.taskStartUtc },
    fc.checkpoints.map(({ path, checkpoint }) => ({
      path,
      dbStartedAt: checkpoint.dbStartedAt,
      dbStartedAtUtc: checkpoint.dbStartedAtUtc,
    })),
  );
  if (late !== null) throw new SafetyError(late);
  return { fc, sh };
}

/** The output directory, created when missing (and removed again if the diff fails). */
async function prepareOutDir(dir: string): Promise<{ outDir: string; createdDir: boolean }> {
  const outDir = resolve(dir);
  try {
    const s = await stat(outDir);
    if (!s.isDirectory()) throw new UsageError(`--out-dir ${outDir} is not a directory`);
    return { outDir, createdDir: false };
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new UsageError(
        `cannot use --out-dir ${outDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    try {
      await mkdir(outDir, { recursive: true });
    } catch (e) {
      throw new UsageError(
        `cannot create --out-dir ${outDir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    return { outDir, createdDir: true };
  }
}

interface Sinks {
  readonly report: Sink;
  readonly plan: Sink;
  readonly ahead: Sink;
  readonly retire: Sink;
}

/** The four files under temp names; each joins `all` as it opens, so a failure discards those opened. */
async function openSinks(outDir: string, all: Sink[]): Promise<Sinks> {
  const one = async (name: string) => {
    const s = await Sink.open(join(outDir, name));
    all.push(s);
    return s;
  };
  const report = await one(DIFF_FILES.report);
  const plan = await one(DIFF_FILES.repairPlan);
  const ahead = await one(DIFF_FILES.localAhead);
  const retire = await one(DIFF_FILES.retireCandidates);
  report.write(csvStringify([], { header: true, columns: [...REPORT_COLUMNS] }), 0);
  return { report, plan, ahead, retire };
}

/** Each joined answer into its category's count and its lines, report rows batched for the CSV writer. */
class DiffOutput {
  readonly counts = emptyCounts();
  private csvBatch: string[][] = [];

  constructor(
    readonly sinks: Sinks,
    private readonly formUuid: string,
    private readonly taskStart: string,
  ) {}

  emit(f: ManifestRow | null, l: ManifestRow | null): void {
    const category = classify(f, l, this.taskStart);
    this.counts[category]++;
    if (SETTLED_CATEGORIES.includes(category)) return;
    this.csvBatch.push(reportRow(category, f, l));
    if (this.csvBatch.length >= 1000) this.flushCsv();
    const planned = planLineOf(category, f, l, this.formUuid, this.taskStart);
    if (planned !== null) this.sinks[planned.file].write(`${JSON.stringify(planned.line)}\n`);
  }

  flushCsv(): void {
    if (this.csvBatch.length === 0) return;
    const n = this.csvBatch.length;
    const text = csvStringify(this.csvBatch);
    this.csvBatch = [];
    this.sinks.report.write(text, n);
  }

  async flushFull(): Promise<void> {
    for (const s of Object.values(this.sinks)) if (s.full) await s.flush();
  }
}

/** The merge-join of two manifests sorted by answer uuid, in constant memory; stops at the signal. */
async function mergeJoin(
  fc: ManifestReader,
  sh: ManifestReader,
  out: DiffOutput,
  deps: DiffDeps,
): Promise<{ kind: 'joined' } | Extract<DiffResult, { kind: 'stopped' }>> {
  // Rows are taken without a promise while a chunk lasts (tryNext), read on when it runs out.
  const pull = async (r: ManifestReader): Promise<ManifestRow | null> => r.next();
  let a: ManifestRow | null = await pull(fc);
  let b: ManifestRow | null = await pull(sh);
  let answers = 0;
  while (a !== null || b !== null) {
    const c = a === null ? 1 : b === null ? -1 : compareKeys(a.answerUuid, b.answerUuid);
    if (c <= 0) out.emit(a, c === 0 ? b : null);
    else out.emit(null, b);
    if (c <= 0) {
      const next = fc.tryNext();
      a = next === undefined ? await pull(fc) : next;
    }
    if (c >= 0) {
      const next = sh.tryNext();
      b = next === undefined ? await pull(sh) : next;
    }
    if (++answers % 10_000 === 0) {
      deps.onProgress?.(answers);
      if (deps.signal?.aborted)
        return {
          kind: 'stopped',
          reason: String((deps.signal.reason as Error | undefined)?.message ?? 'signal'),
          answers,
        };
      await out.flushFull();
    }
  }
  fc.finish();
  sh.finish();
  out.flushCsv();
  return { kind: 'joined' };
}
