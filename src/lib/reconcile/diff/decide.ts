/**
 * The decisions of `reconcile diff`, pure: the task start's text, whether two manifests belong to
 * one scan, each answer's lines in the output files, the summary, the exit code and the summary line.
 */
import { normalizeDateTime } from '../../time/datetime.js';
import { formulaSafe } from '../../files/csv-cell.js';
import { ExitCode, UsageError } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import type { ManifestSource } from '../../manifest/reader.js';
import type { ManifestRow } from '../../manifest/row.js';
import {
  DIFF_FILES,
  type DiffInput,
  type DiffResult,
  type DiffSummary,
  type PlanLine,
  type RetireCandidateLine,
  SUMMARY_FORMAT,
} from './types.js';
import { compareRevisions } from '../../manifest/row.js';
/**
 * `--task-start` as manifest time text, or a {@link UsageError}.
 * @example parseTaskStart('2026-11-30T01:00:00') // '2026-11-30 01:00:00'
 */
export function parseTaskStart(text: string): string {
  const t = normalizeDateTime(text.trim());
  if (t === null || text.includes('.') || !isCalendarTime(t))
    throw new UsageError(
      `--task-start ${JSON.stringify(text)} is not a time like 2026-11-30 01:00:00 (the SH database's clock)`,
    );
  return t;
}

/**
 * A `yyyy-MM-dd HH:mm:ss` that names a real second of DATETIME's range: month 13 or February 30
 * would otherwise be compared as text against every createTime.
 */
function isCalendarTime(t: string): boolean {
  const [y, mo, d, h, mi, s] = t.split(/[- :]/).map(Number) as [number, number, number, number, number, number];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return (
    y >= 1000 &&
    at.getUTCFullYear() === y &&
    at.getUTCMonth() === mo - 1 &&
    at.getUTCDate() === d &&
    at.getUTCHours() === h &&
    at.getUTCMinutes() === mi &&
    at.getUTCSeconds() === s
  );
}

type ScanOf = Pick<ManifestSource, 'schId' | 'formUuid' | 'shards'>;

/**
 * Why two manifests cannot be joined (exit 4), or null: of another school or form, or of other
 * parts of the key space.
 * @example sameScanRefusal({ schId: '5', formUuid: 'f', shards: [] }, { schId: '6', formUuid: 'f', shards: [] }) // 'the manifests are of different scans: …'
 */
export function sameScanRefusal(fc: ScanOf, sh: ScanOf): string | null {
  if (fc.schId !== sh.schId || fc.formUuid !== sh.formUuid) {
    return `the manifests are of different scans: FC school ${fc.schId} form ${fc.formUuid}, SH school ${sh.schId} form ${sh.formUuid}`;
  }
  if (fc.shards.join(',') !== sh.shards.join(',')) {
    return `the manifests cover different parts of the key space: FC shards ${fc.shards.join(',') || 'none'}, SH shards ${sh.shards.join(',') || 'none'}`;
  }
  return null;
}

const csvCell = (v: string | boolean | null | undefined) =>
  v === null || v === undefined ? '' : typeof v === 'boolean' ? (v ? '1' : '0') : v;

/**
 * The `report.csv` row of a difference (isDeleted as 0/1, empty cells for a side without the row).
 * Its cells come from the databases: one a spreadsheet would take for a formula is marked with `'`
 * (`csv-cell.ts`; fcctl's CSV reader takes it off).
 */
export function reportRow(category: Category, f: ManifestRow | null, l: ManifestRow | null): string[] {
  const row = (f ?? l)!;
  return [
    category,
    row.answerUuid,
    row.schId,
    csvCell(f?.revision),
    csvCell(f?.contentHash),
    csvCell(f?.isDeleted),
    csvCell(l?.revision),
    csvCell(l?.contentHash),
    csvCell(l?.isDeleted),
    csvCell(l?.createTime),
    csvCell(l?.retiredAt),
  ].map(formulaSafe);
}

/** The plan file an answer of this category goes to, with its line; null for none. */
export function planLineOf(
  category: Category,
  f: ManifestRow | null,
  l: ManifestRow | null,
  formUuid: string,
  taskStart: string,
): { file: 'plan' | 'ahead'; line: PlanLine } | { file: 'retire'; line: RetireCandidateLine } | null {
  if (REPAIR_CATEGORIES.includes(category) || category === 'LOCAL_AHEAD') {
    const row = (f ?? l)!;
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
    return { file: category === 'LOCAL_AHEAD' ? 'ahead' : 'plan', line };
  }
  if (category !== 'ABSENT_AT_FC') return null;
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
  return { file: 'retire', line };
}

/** One input as `summary.json` names it. */
export function inputOf(source: ManifestSource, sha256: string): DiffInput {
  return {
    file: source.file,
    bytes: source.bytes,
    rows: source.rows,
    sha256,
    completedAt: source.completedAt,
    checkpoints: source.checkpoints.map(({ path, checkpoint }) => ({
      path,
      shard: checkpoint.params.shard,
      rows: checkpoint.rows,
      sha256: checkpoint.sha256,
    })),
  };
}

/** `summary.json` of a finished join. */
export function diffSummary(o: {
  taskStart: string;
  fc: ManifestSource;
  sh: ManifestSource;
  sha256: { fc: string; sh: string };
  counts: Readonly<Record<Category, number>>;
  outputs: Record<string, { rows: number; sha256: string }>;
  createdAt: string;
}): DiffSummary {
  return {
    format: SUMMARY_FORMAT,
    taskStart: o.taskStart,
    schId: o.fc.schId,
    formUuid: o.fc.formUuid,
    shards: o.fc.shards,
    wholeKeySpace: o.fc.wholeKeySpace,
    inputs: { fc: inputOf(o.fc, o.sha256.fc), sh: inputOf(o.sh, o.sha256.sh) },
    counts: Object.fromEntries(CATEGORIES.map((k) => [k, o.counts[k]])) as Record<Category, number>,
    differences: CATEGORIES.filter((k) => !SETTLED_CATEGORIES.includes(k)).reduce((n, k) => n + o.counts[k], 0),
    outputs: o.outputs,
    createdAt: o.createdAt,
  };
}

/** Differences are findings, not failures: exit 0 when the files were written, 1 when a stop signal ended the diff. */
export function diffExitCode(result: Pick<DiffResult, 'kind'>): number {
  return result.kind === 'done' ? ExitCode.OK : ExitCode.ITEMS_FAILED;
}

/** The summary fields of a finished diff (shared with `reconcile run`). */
export function diffSummaryFields(result: Extract<DiffResult, { kind: 'done' }>): Record<string, unknown> {
  const s = result.summary;
  return {
    taskStart: s.taskStart,
    schId: s.schId,
    formUuid: s.formUuid,
    fcRows: s.inputs.fc.rows,
    shRows: s.inputs.sh.rows,
    differences: s.differences,
    repairPlan: s.outputs[DIFF_FILES.repairPlan]?.rows ?? 0,
    localAhead: s.outputs[DIFF_FILES.localAhead]?.rows ?? 0,
    retireCandidates: s.outputs[DIFF_FILES.retireCandidates]?.rows ?? 0,
    outDir: result.outDir,
  };
}

/** The summary line of `reconcile diff` (with its counts, when written). */
export function summarizeDiff(
  result: DiffResult,
  elapsedMs: number,
): { fields: Summary; counts?: Readonly<Record<Category, number>> } {
  const seconds = Math.round(elapsedMs / 100) / 10;
  const exitCode = diffExitCode(result);
  if (result.kind === 'stopped')
    return {
      fields: {
        command: 'reconcile diff',
        exitCode,
        stoppedBy: 'signal',
        answers: result.answers,
        written: false,
        seconds,
      },
    };
  return {
    fields: { command: 'reconcile diff', exitCode, ...diffSummaryFields(result), seconds },
    counts: result.summary.counts,
  };
}

/*
 * The one decision of `reconcile diff`: how an answer's FC manifest row and its local (SH) row
 * relate. Pure; the merge-join only collects facts and calls {@link classify}.
 */
/**
 * The closed set of categories, in report order.
 *
 * | category | FC | local | listed in |
 * |---|---|---|---|
 * | `IN_SYNC` | present | same revision, hash and isDeleted, not retired | counts only |
 * | `MISSING_LOCAL` | present | absent | report, repair plan (expected triple null) |
 * | `STALE_LOCAL` | present | lower revision | report, repair plan |
 * | `HASH_CONFLICT` | present | same revision, another hash or another isDeleted | report, repair plan |
 * | `LOCAL_AHEAD` | present | higher revision (never downgraded) | report, local-ahead |
 * | `RETIRED_PRESENT_AT_FC` | present | retired | report (a person decides) |
 * | `ABSENT_AT_FC` | absent | createTime not null, not after the task start, not retired | report, retire candidates |
 * | `ABSENT_CREATED_AFTER_TASK_START` | absent | createTime after the task start | report |
 * | `ABSENT_CREATE_TIME_NULL` | absent | createTime null | report |
 * | `RETIRED` | absent | retired already | counts only |
 *
 * @example CATEGORIES.includes('ABSENT_AT_FC') // true
 */
export const CATEGORIES = [
  'IN_SYNC',
  'MISSING_LOCAL',
  'STALE_LOCAL',
  'HASH_CONFLICT',
  'LOCAL_AHEAD',
  'RETIRED_PRESENT_AT_FC',
  'ABSENT_AT_FC',
  'ABSENT_CREATED_AFTER_TASK_START',
  'ABSENT_CREATE_TIME_NULL',
  'RETIRED',
] as const;
export type Category = (typeof CATEGORIES)[number];

/** Categories that go to `repair-plan.jsonl` (seed 000 §8.1: repaired from FC, conditionally). */
export const REPAIR_CATEGORIES: readonly Category[] = ['MISSING_LOCAL', 'STALE_LOCAL', 'HASH_CONFLICT'];
/** Categories that are no difference: counted, not listed in `report.csv`. */
export const SETTLED_CATEGORIES: readonly Category[] = ['IN_SYNC', 'RETIRED'];

/**
 * Categories that are no difference for `--fail-if-diff`, the `differences` counts and the
 * `fcctl_reconcile_differences` gauge: the settled ones, and a local row created after the task
 * start (in flight: listed in the report, judged by the next run).
 */
export const NOT_DIFFERENCES: readonly Category[] = [...SETTLED_CATEGORIES, 'ABSENT_CREATED_AFTER_TASK_START'];

/** Answers in a category that is a difference ({@link NOT_DIFFERENCES}). */
export function differencesOf(counts: Readonly<Partial<Record<string, number>>>): number {
  return CATEGORIES.filter((c) => !NOT_DIFFERENCES.includes(c)).reduce((n, c) => n + (counts[c] ?? 0), 0);
}

/**
 * Classifies one answer. `taskStart` is `yyyy-MM-dd HH:mm:ss` in the SH database's clock; a local
 * row absent at FC is a retire candidate only when its createTime is known and not after it
 * (seed 000 §8.1: a page is no consistent snapshot, so a row created during the run — or one whose
 * creation time is unknown — is never read as "absent at FC").
 * @throws {TypeError} when both rows are null
 * @example classify(null, { answerUuid: 'a', revision: '1', contentHash: 'h', isDeleted: false, schId: '5', createTime: '2026-10-01 00:00:00', retiredAt: null }, '2026-11-01 00:00:00') // 'ABSENT_AT_FC'
 */
export function classify(fc: ManifestRow | null, local: ManifestRow | null, taskStart: string): Category {
  if (fc === null && local === null) throw new TypeError('classify needs at least one row');
  if (local === null) return 'MISSING_LOCAL';
  const retired = local.retiredAt !== undefined && local.retiredAt !== null;
  if (fc === null) {
    if (retired) return 'RETIRED';
    if (local.createTime === null) return 'ABSENT_CREATE_TIME_NULL';
    return local.createTime > taskStart ? 'ABSENT_CREATED_AFTER_TASK_START' : 'ABSENT_AT_FC';
  }
  if (retired) return 'RETIRED_PRESENT_AT_FC';
  const c = compareRevisions(local.revision, fc.revision);
  if (c < 0) return 'STALE_LOCAL';
  if (c > 0) return 'LOCAL_AHEAD';
  return local.contentHash === fc.contentHash && local.isDeleted === fc.isDeleted ? 'IN_SYNC' : 'HASH_CONFLICT';
}

/** A zero count for every category, in report order. */
export function emptyCounts(): Record<Category, number> {
  return Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
}
