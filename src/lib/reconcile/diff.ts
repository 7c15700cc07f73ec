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
import { createHash, type Hash } from 'node:crypto';
import { mkdir, open, rename, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify as csvStringify } from 'csv-stringify/sync';
import { SafetyError, UsageError } from '../cli/exit.js';
import { fsyncDir, tempPathFor, writeFileAtomic } from '../fs/atomic.js';
import { type ManifestSource, ManifestReader, loadManifestSource } from '../manifest/reader.js';
import { compareKeys, type ManifestRow, normalizeDateTime } from '../manifest/row.js';
import { CATEGORIES, type Category, classify, emptyCounts, REPAIR_CATEGORIES, SETTLED_CATEGORIES } from './classify.js';
import { taskStartRefusal } from './checks.js';

export const SUMMARY_FORMAT = 'fcctl.reconcile.summary.v1';

/** The files `reconcile diff` writes into its output directory. */
export const DIFF_FILES = {
  report: 'report.csv',
  repairPlan: 'repair-plan.jsonl',
  localAhead: 'local-ahead.jsonl',
  retireCandidates: 'retire-candidates.jsonl',
  summary: 'summary.json',
} as const;

/** The columns of `report.csv`, in order. */
export const REPORT_COLUMNS = [
  'category',
  'answerUuid',
  'schId',
  'fcRevision',
  'fcContentHash',
  'fcIsDeleted',
  'localRevision',
  'localContentHash',
  'localIsDeleted',
  'localCreateTime',
  'localRetiredAt',
] as const;

/** A line of `repair-plan.jsonl` or `local-ahead.jsonl`. */
export interface PlanLine {
  readonly category: Category;
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
  /** the local triple as read; all three null when the local row is missing */
  readonly expectedRevision: string | null;
  readonly expectedHash: string | null;
  readonly expectedIsDeleted: boolean | null;
  readonly fcRevision: string;
  readonly fcContentHash: string;
  readonly fcIsDeleted: boolean;
}

/** A line of `retire-candidates.jsonl`. */
export interface RetireCandidateLine {
  readonly category: 'ABSENT_AT_FC';
  readonly answerUuid: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly expectedRevision: string;
  readonly expectedHash: string;
  readonly expectedIsDeleted: boolean;
  readonly localCreateTime: string;
  readonly taskStart: string;
}

export interface DiffOptions {
  readonly fcFile: string;
  readonly shFile: string;
  readonly fcCheckpoints: readonly string[];
  readonly shCheckpoints: readonly string[];
  /** `yyyy-MM-dd HH:mm:ss` (a `T` is accepted) in the SH database's clock */
  readonly taskStart: string;
  /**
   * the same instant as the SH database's UTC_TIMESTAMP() (`reconcile run` records it): the check
   * against the FC scan's start is then made in UTC, whatever zones the two databases are in
   */
  readonly taskStartUtc?: string;
  readonly outDir: string;
}

export interface DiffDeps {
  readonly signal?: AbortSignal;
  readonly now?: () => Date;
  /** called every 10,000 joined answers */
  readonly onProgress?: (answers: number) => void;
}

/** One input as `summary.json` names it. */
export interface DiffInput {
  readonly file: string;
  readonly bytes: number;
  readonly rows: number;
  readonly sha256: string;
  readonly completedAt: string;
  readonly checkpoints: ReadonlyArray<{ readonly path: string; readonly shard: string | null; readonly rows: number; readonly sha256: string }>;
}

/** `summary.json`. */
export interface DiffSummary {
  readonly format: typeof SUMMARY_FORMAT;
  readonly taskStart: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly shards: readonly (string | null)[];
  readonly wholeKeySpace: boolean;
  readonly inputs: { readonly fc: DiffInput; readonly sh: DiffInput };
  readonly counts: Readonly<Record<Category, number>>;
  readonly differences: number;
  readonly outputs: Readonly<Record<string, { readonly rows: number; readonly sha256: string }>>;
  readonly createdAt: string;
}

export type DiffResult = { readonly kind: 'done'; readonly summary: DiffSummary; readonly outDir: string } | { readonly kind: 'stopped'; readonly reason: string; readonly answers: number };

/**
 * `--task-start` as manifest time text, or a {@link UsageError}.
 * @example parseTaskStart('2026-11-30T01:00:00') // '2026-11-30 01:00:00'
 */
export function parseTaskStart(text: string): string {
  const t = normalizeDateTime(text.trim());
  if (t === null || text.includes('.') || !isCalendarTime(t)) throw new UsageError(`--task-start ${JSON.stringify(text)} is not a time like 2026-11-30 01:00:00 (the SH database's clock)`);
  return t;
}

/**
 * A `yyyy-MM-dd HH:mm:ss` that names a real second of DATETIME's range: month 13 or February 30
 * would otherwise be compared as text against every createTime.
 */
function isCalendarTime(t: string): boolean {
  const [y, mo, d, h, mi, s] = t.split(/[- :]/).map(Number) as [number, number, number, number, number, number];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return y >= 1000 && at.getUTCFullYear() === y && at.getUTCMonth() === mo - 1 && at.getUTCDate() === d && at.getUTCHours() === h && at.getUTCMinutes() === mi && at.getUTCSeconds() === s;
}

/** A temp file that becomes `finalPath` on commit; counts lines and hashes what it writes. */
class Sink {
  rows = 0;
  private readonly hash: Hash = createHash('sha256');
  private parts: string[] = [];
  private size = 0;

  private constructor(
    readonly finalPath: string,
    private readonly tmp: string,
    private readonly fh: FileHandle,
  ) {}

  static async open(finalPath: string): Promise<Sink> {
    const tmp = tempPathFor(finalPath);
    return new Sink(finalPath, tmp, await open(tmp, 'wx', 0o600));
  }

  /** Buffers text; {@link full} says when a {@link flush} is due. */
  write(text: string, rows = 1): void {
    this.parts.push(text);
    this.size += text.length;
    this.rows += rows;
  }

  get full(): boolean {
    return this.size >= 256 * 1024;
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    const buf = Buffer.from(this.parts.join(''), 'utf8');
    this.parts = [];
    this.size = 0;
    this.hash.update(buf);
    let done = 0;
    while (done < buf.length) done += (await this.fh.write(buf, done, buf.length - done)).bytesWritten;
  }

  /** Flushes and fsyncs; the file stays under its temp name until {@link rename}. */
  async seal(): Promise<{ rows: number; sha256: string }> {
    await this.flush();
    await this.fh.sync();
    await this.fh.close();
    return { rows: this.rows, sha256: this.hash.digest('hex') };
  }

  async rename(): Promise<void> {
    await rename(this.tmp, this.finalPath);
  }

  async discard(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await unlink(this.tmp).catch(() => undefined);
  }
}

const csvCell = (v: string | boolean | null | undefined) => (v === null || v === undefined ? '' : typeof v === 'boolean' ? (v ? '1' : '0') : v);

function inputOf(source: ManifestSource, sha256: string): DiffInput {
  return {
    file: source.file,
    bytes: source.bytes,
    rows: source.rows,
    sha256,
    completedAt: source.completedAt,
    checkpoints: source.checkpoints.map(({ path, checkpoint }) => ({ path, shard: checkpoint.params.shard, rows: checkpoint.rows, sha256: checkpoint.sha256 })),
  };
}

/**
 * Runs the diff. Inputs are checked before anything is written: both checkpoints complete and of
 * the same school, form and shards, the task start before the FC scan's start (else exit 4);
 * every line as it is read (exit 2 naming it).
 * @example const r = await runDiff({ fcFile, shFile, fcCheckpoints: [fcCp], shCheckpoints: [shCp], taskStart: '2026-11-30 01:00:00', outDir: 'out' })
 */
export async function runDiff(o: DiffOptions, deps: DiffDeps = {}): Promise<DiffResult> {
  const now = deps.now ?? (() => new Date());
  const taskStart = parseTaskStart(o.taskStart);
  const fcSource = await loadManifestSource('fc', o.fcFile, o.fcCheckpoints);
  const shSource = await loadManifestSource('sh', o.shFile, o.shCheckpoints);
  if (fcSource.schId !== shSource.schId || fcSource.formUuid !== shSource.formUuid) {
    throw new SafetyError(`the manifests are of different scans: FC school ${fcSource.schId} form ${fcSource.formUuid}, SH school ${shSource.schId} form ${shSource.formUuid}`);
  }
  if (fcSource.shards.join(',') !== shSource.shards.join(',')) {
    throw new SafetyError(`the manifests cover different parts of the key space: FC shards ${fcSource.shards.join(',') || 'none'}, SH shards ${shSource.shards.join(',') || 'none'}`);
  }
  // A task start is taken on trust no longer: a late one turns answers created at FC during the
  // scan into retire candidates.
  const late = taskStartRefusal(
    { local: taskStart, utc: o.taskStartUtc },
    fcSource.checkpoints.map(({ path, checkpoint }) => ({ path, dbStartedAt: checkpoint.dbStartedAt, dbStartedAtUtc: checkpoint.dbStartedAtUtc })),
  );
  if (late !== null) throw new SafetyError(late);
  const outDir = resolve(o.outDir);
  let createdDir = false;
  try {
    const s = await stat(outDir);
    if (!s.isDirectory()) throw new UsageError(`--out-dir ${outDir} is not a directory`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new UsageError(`cannot use --out-dir ${outDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    try {
      await mkdir(outDir, { recursive: true });
    } catch (e) {
      throw new UsageError(`cannot create --out-dir ${outDir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    createdDir = true;
  }

  const fc = await ManifestReader.open(fcSource);
  const sh = await ManifestReader.open(shSource);
  const sinks: Sink[] = [];
  let committed = false;
  try {
    const report = await Sink.open(join(outDir, DIFF_FILES.report));
    sinks.push(report);
    const plan = await Sink.open(join(outDir, DIFF_FILES.repairPlan));
    sinks.push(plan);
    const ahead = await Sink.open(join(outDir, DIFF_FILES.localAhead));
    sinks.push(ahead);
    const retire = await Sink.open(join(outDir, DIFF_FILES.retireCandidates));
    sinks.push(retire);
    report.write(csvStringify([], { header: true, columns: [...REPORT_COLUMNS] }), 0);

    const counts = emptyCounts();
    const formUuid = fcSource.formUuid;
    let csvBatch: string[][] = [];
    const flushCsv = () => {
      if (csvBatch.length === 0) return;
      const n = csvBatch.length;
      const text = csvStringify(csvBatch);
      csvBatch = [];
      report.write(text, n);
    };
    const emit = (f: ManifestRow | null, l: ManifestRow | null) => {
      const category = classify(f, l, taskStart);
      counts[category]++;
      if (SETTLED_CATEGORIES.includes(category)) return;
      const row = (f ?? l)!;
      csvBatch.push([
        category, row.answerUuid, row.schId,
        csvCell(f?.revision), csvCell(f?.contentHash), csvCell(f?.isDeleted),
        csvCell(l?.revision), csvCell(l?.contentHash), csvCell(l?.isDeleted), csvCell(l?.createTime), csvCell(l?.retiredAt),
      ]);
      if (csvBatch.length >= 1000) flushCsv();
      if (REPAIR_CATEGORIES.includes(category) || category === 'LOCAL_AHEAD') {
        const line: PlanLine = {
          category,
          answerUuid: row.answerUuid,
          schId: row.schId,
          formUuid,
          expectedRevision: l?.revision ?? null,
          expectedHash: l?.contentHash ?? null,
          expectedIsDeleted: l?.isDeleted ?? null,
          fcRevision: f!.revision,
          fcContentHash: f!.contentHash,
          fcIsDeleted: f!.isDeleted,
        };
        (category === 'LOCAL_AHEAD' ? ahead : plan).write(`${JSON.stringify(line)}\n`);
      } else if (category === 'ABSENT_AT_FC') {
        const line: RetireCandidateLine = {
          category,
          answerUuid: l!.answerUuid,
          schId: l!.schId,
          formUuid,
          expectedRevision: l!.revision,
          expectedHash: l!.contentHash,
          expectedIsDeleted: l!.isDeleted,
          localCreateTime: l!.createTime!,
          taskStart,
        };
        retire.write(`${JSON.stringify(line)}\n`);
      }
    };

    // Rows are taken without a promise while a chunk lasts (tryNext), read on when it runs out.
    const pull = async (r: ManifestReader): Promise<ManifestRow | null> => r.next();
    let a: ManifestRow | null = await pull(fc);
    let b: ManifestRow | null = await pull(sh);
    let answers = 0;
    while (a !== null || b !== null) {
      const c = a === null ? 1 : b === null ? -1 : compareKeys(a.answerUuid, b.answerUuid);
      if (c <= 0) emit(a, c === 0 ? b : null);
      else emit(null, b);
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
        if (deps.signal?.aborted) return { kind: 'stopped', reason: String((deps.signal.reason as Error | undefined)?.message ?? 'signal'), answers };
        for (const s of sinks) if (s.full) await s.flush();
      }
    }
    fc.finish();
    sh.finish();
    flushCsv();

    const outputs: Record<string, { rows: number; sha256: string }> = {};
    for (const s of sinks) outputs[s.finalPath.slice(outDir.length + 1)] = await s.seal();
    const summary: DiffSummary = {
      format: SUMMARY_FORMAT,
      taskStart,
      schId: fcSource.schId,
      formUuid,
      shards: fcSource.shards,
      wholeKeySpace: fcSource.wholeKeySpace,
      inputs: { fc: inputOf(fcSource, fc.sha256!), sh: inputOf(shSource, sh.sha256!) },
      counts: Object.fromEntries(CATEGORIES.map((k) => [k, counts[k]])) as Record<Category, number>,
      differences: CATEGORIES.filter((k) => !SETTLED_CATEGORIES.includes(k)).reduce((n, k) => n + counts[k], 0),
      outputs,
      createdAt: now().toISOString(),
    };
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
