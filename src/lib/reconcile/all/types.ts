/** The shapes of `reconcile run --all`: pairs, tasks, each pair's result, the run's summary. */
import type { PauseState } from '../../pause/decide.js';
import type { Category } from '../diff/decide.js';
import type { ReconcileRunDeps } from '../run/types.js';
import type { Pruned } from '../ledger/types.js';

export const ALL_SUMMARY_FORMAT = 'fcctl.reconcile.all.v1';

/** `--school` and `--form` of `--all`: empty lists take every school or form. */
export interface PairFilter {
  readonly schools: readonly string[];
  readonly forms: readonly string[];
}

/** One (school, form) pair, and where it was found. */
export interface Pair {
  readonly schId: string;
  readonly formUuid: string;
}

export type PairFound = Pair & { readonly atFc: boolean; readonly atSh: boolean };

/** A task row as read back (`fcctl_reconcile_task`). */
export interface TaskRow {
  readonly id: string | number;
  readonly sch_id: string;
  readonly form_uuid: string;
  readonly state: string;
  readonly claim_owner: string | null;
  readonly claim_generation: string | number;
  readonly attempts: number;
  readonly host: string | null;
  readonly result_json: string | null;
}

/** What one pair's run came to, as recorded in `result_json` and printed on its `pair` line. */
export type PairResult =
  | {
      readonly result: 'done';
      readonly counts: Readonly<Record<Category, number>>;
      /** answers in a category that is a difference (not IN_SYNC, not RETIRED) */
      readonly differences: number;
      readonly fcRows: number;
      readonly shRows: number;
      readonly pairRunId: string;
      readonly resumed: boolean;
      readonly seconds: number;
      /** of `seconds`, waiting on `--max-load`/`--max-lag` (this process's wait while the pair ran) */
      readonly throttledSeconds?: number;
    }
  | {
      readonly result: 'failed';
      readonly exitCode: number;
      readonly error: string;
      readonly seconds: number;
      readonly throttledSeconds?: number;
    }
  /**
   * not finished here, given back (or taken by another): paused, stopped by a signal or by an
   * outage (`error`: a database or disk this process cannot use, not the pair's fault), the lease lost
   */
  | {
      readonly result: 'paused' | 'stopped' | 'lost';
      readonly seconds: number;
      readonly paused?: PauseState;
      readonly error?: string;
    }
  /** the pair's directory holds this run's completed diff (its task row was not written): taken as done */
  | {
      readonly result: 'adopted';
      readonly counts: Readonly<Record<Category, number>>;
      readonly differences: number;
      readonly pairRunId: string;
      readonly seconds: number;
    };

/** One pair as this process ran it. */
export type PairOutcome = Pair & { readonly attempt: number; readonly outDir: string } & PairResult;

export interface RunAllOptions {
  readonly outDir: string;
  readonly runId: string | null;
  readonly filter: PairFilter;
  readonly consumerAppKey: string;
  readonly concurrency: number;
  readonly leaseSeconds: number;
  readonly size: number;
  readonly fcDatabase: string;
  readonly shDatabase: string;
  /** `--keep-nights`: after the summary, the drift ledger's nights older than the newest N pruned (none when absent) */
  readonly keepNights?: number;
}

export interface RunAllDeps extends Pick<ReconcileRunDeps, 'fcDb' | 'shDb' | 'signal' | 'now' | 'paused' | 'throttle'> {
  readonly host: string;
  /** unique per process run: the claim tokens are built from it */
  readonly owner: string;
  readonly onPairs?: (found: {
    runId: string;
    pairs: number;
    atFcOnly: number;
    atShOnly: number;
    both: number;
  }) => void;
  readonly onPair?: (p: PairOutcome) => void;
}

/** The run over every pair, as the task table tells it when this process ends. */
export interface RunAllSummary {
  readonly format: typeof ALL_SUMMARY_FORMAT;
  readonly runId: string;
  readonly pairs: number;
  readonly byState: Readonly<Record<string, number>>;
  readonly counts: Readonly<Record<Category, number>>;
  readonly pairsWithDifferences: readonly (Pair & { readonly differences: number })[];
  readonly pairsFailed: readonly (Pair & { readonly error: string })[];
  readonly updatedAt: string;
}

/** Why this process stopped before the run was done: the pause, a signal, or an outage (exit 3). */
export type StopReason =
  | { readonly by: 'paused'; readonly paused?: PauseState }
  | { readonly by: 'signal' }
  | { readonly by: 'error'; readonly message: string; readonly exitCode: number };

export type RunAllResult = {
  readonly runId: string;
  readonly found: {
    readonly pairs: number;
    readonly atFc: number;
    readonly atSh: number;
    /** `--school`/`--form` values that matched no pair on either side (a typo?) */
    readonly unmatched?: readonly string[];
  };
  /** every pair of the run was done before this process began (a run id reused?) */
  readonly completeAtStart?: boolean;
  /** false: the default run id (a run joined or begun, see ./decide.ts `defaultRunChoice`); true: `--run-id` */
  readonly runIdGiven?: boolean;
  /** the pairs this process ran, in the order they ended */
  readonly outcomes: readonly PairOutcome[];
  /**
   * the run's pairs this host finished before this process (DONE or FAILED by another process of
   * the run on this host: the night's first process, before a retry): their numbers stay in the
   * host's metrics file (issue 36 §7 review)
   */
  readonly earlier?: readonly TaskRow[];
  /** null when the task table could not be read at the end (the outage that stopped the run) */
  readonly summary: RunAllSummary | null;
  readonly stop: StopReason | null;
  /** report.html written by this process (the last of the run to finish), or why it could not be; null: not this process's to write */
  readonly report?: { readonly file: string } | { readonly error: string } | null;
  /** what `--keep-nights` pruned; null when not pruned (stopped, or no `keepNights`) */
  readonly pruned?: Pruned | null;
};
