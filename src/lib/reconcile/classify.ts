/**
 * The one decision of `reconcile diff`: how an answer's FC manifest row and its local (SH) row
 * relate. Pure; the merge-join only collects facts and calls {@link classify}.
 */
import { compareRevisions, type ManifestRow } from '../manifest/row.js';

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
