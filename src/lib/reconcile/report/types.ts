/** The shapes of `reconcile report`: the data a report is rendered from, and the command's options. */
import type { Category } from '../diff/decide.js';

export const REPORT_FILE = 'report.html';
/** Sample rows per difference category and pair (issue 30 §1). */
export const SAMPLES_PER_CATEGORY = 50;
/** Nights of trend. */
export const TREND_NIGHTS = 30;
/**
 * Sample rows over the whole report: 10,000 pairs with 50 rows in each category would be hundreds of
 * megabytes; the pairs with the most differences get theirs first, the others link to report.csv.
 */
export const SAMPLE_BUDGET = 8_000;

export interface ReconcileReportOptions {
  /** the `--all` run's directory (`reconcile run --all --out-dir`); null: the one the run recorded (needs `runId`) */
  readonly outDir: string | null;
  /** null: the run DIR/summary.json names (the newest run written there) */
  readonly runId: string | null;
  /** null: DIR/report.html */
  readonly out: string | null;
}

/** One sample row of report.csv (the FC side and the local side of one answer). */
export interface Sample {
  readonly answerUuid: string;
  readonly fcRevision: string;
  readonly fcHash: string;
  readonly fcDeleted: string;
  readonly localRevision: string;
  readonly localHash: string;
  readonly localDeleted: string;
  readonly localCreateTime: string;
}

/** A pair's files, as links relative to the report (null: not there). */
export interface PairFiles {
  readonly dir: string;
  readonly report: string | null;
  readonly repairPlan: string | null;
  readonly retireCandidates: string | null;
  readonly summary: string | null;
  readonly fcManifest: string | null;
}

/** One pair of the run, as the report shows it. */
export interface ReportPair {
  readonly schId: string;
  readonly formUuid: string;
  readonly state: string;
  readonly counts: Readonly<Record<Category, number>> | null;
  readonly differences: number;
  readonly error: string | null;
  readonly seconds: number | null;
  readonly host: string | null;
  /** the pair's directory holds this run's files (false: another night's, or none) */
  readonly filesOfRun: boolean;
  readonly files: PairFiles | null;
  /** absolute path of the pair's directory (for the commands) */
  readonly absDir: string;
  readonly samples: Readonly<Partial<Record<Category, readonly Sample[]>>>;
  /** samples left out by {@link SAMPLE_BUDGET} */
  readonly samplesLeftOut: boolean;
  /** what to do, as decide.ts `pairActions` bits (0: nothing); the text is `commandsOf` this */
  readonly actions: number;
}

/** A command shown under "What to do": dry run first, then the one that writes. */
export interface PairCommand {
  readonly title: string;
  readonly why: string;
  readonly dryRun: readonly string[];
  readonly execute: string | null;
}

/** The fleet of one night (the contract's LedgerNight, as the report needs it). */
export interface TrendNight {
  readonly runId: string;
  readonly runStartedAt: string;
  readonly counts: Readonly<Record<Category, number>>;
  readonly pairs: number;
  readonly pairsWithDifferences: number;
  readonly failed: number;
}

/** The trend: the fleet per night, and each pair's counts per night (categories with a count only). */
export interface Trend {
  readonly nights: readonly TrendNight[];
  /** `school/form` → category → counts per night, in the order of `nights` (null: the pair was not run that night) */
  readonly pairs: Readonly<Record<string, Readonly<Partial<Record<Category, readonly (number | null)[]>>>>>;
}

/** Everything a report shows: what the run recorded, read once, rendered by a pure function. */
export interface ReportData {
  readonly runId: string;
  readonly generatedAt: string;
  readonly outDir: string;
  readonly consumer: string | null;
  /** the run's first task registered and last finished (UTC `YYYY-MM-DD HH:MM:SS`) */
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  /** null when not recorded */
  readonly throttledSeconds: number | null;
  readonly hosts: readonly string[];
  readonly byState: Readonly<Record<string, number>>;
  /** claim owners (processes) holding pairs now, with their host */
  /** the processes that finished pairs of the run (empty for a run of an fcctl before they were kept) */
  readonly processes: readonly string[];
  readonly holders: readonly { readonly owner: string; readonly host: string | null; readonly pairs: number }[];
  readonly counts: Readonly<Record<Category, number>>;
  /**
   * the previous night of the same pairs (null: none in the ledger): its counts and this run's over
   * the pairs done on both nights (decide.ts `changeBasis`), and how many of this run's were left out
   */
  readonly previous: {
    readonly runId: string;
    readonly counts: Readonly<Record<Category, number>>;
    readonly now: Readonly<Record<Category, number>>;
    readonly leftOut: number;
  } | null;
  readonly pairs: readonly ReportPair[];
  readonly trend: Trend;
}
