/** The formats of `reconcile diff`'s files and the shapes its runner takes and returns. */
import type { Category } from './decide.js';

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
  readonly checkpoints: ReadonlyArray<{
    readonly path: string;
    readonly shard: string | null;
    readonly rows: number;
    readonly sha256: string;
  }>;
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

export type DiffResult =
  | { readonly kind: 'done'; readonly summary: DiffSummary; readonly outDir: string }
  | { readonly kind: 'stopped'; readonly reason: string; readonly answers: number };
