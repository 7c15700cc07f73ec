/**
 * The drift ledger (`fcctl_reconcile_ledger`, sql/sh.sql, schema version 7): what each pair of each
 * night of `reconcile run --all` found. A night is one run id; its start is the run's first task
 * registered (UTC), the same on every row of the run.
 */
import type { Category } from '../diff/decide.js';

/** What a finished pair writes (the night's start and the finish time are the database's). */
export interface LedgerEntry {
  readonly runId: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly result: 'DONE' | 'FAILED';
  /** answers by category (all 0 for a FAILED pair) */
  readonly counts: Readonly<Record<Category, number>>;
  readonly differences: number;
  /** null: a FAILED pair, or a pair adopted from its directory (its row counts not recorded there) */
  readonly fcRows: number | null;
  readonly shRows: number | null;
  readonly error: string | null;
  readonly seconds: number;
  /** of `seconds`, waiting on the throttle (`--max-load`/`--max-lag`) */
  readonly throttledSeconds: number;
  readonly host: string | null;
}

/** One pair of one night, as read back. */
export interface LedgerPair extends LedgerEntry {
  /** 'YYYY-MM-DD HH:MM:SS', UTC: MIN(create_time) of the run's tasks */
  readonly runStartedAt: string;
  /** 'YYYY-MM-DD HH:MM:SS', UTC */
  readonly finishedAt: string;
}

/** The fleet, one night: its pairs recorded so far, summed. */
export interface LedgerNight {
  readonly runId: string;
  readonly runStartedAt: string;
  readonly pairs: number;
  readonly pairsWithDifferences: number;
  readonly failed: number;
  readonly counts: Readonly<Record<Category, number>>;
  readonly differences: number;
  /** wall-clock seconds from the night's start to its last pair finished */
  readonly seconds: number;
  /** the pairs' throttled seconds, summed (pairs run at once each count their own wait) */
  readonly throttledSeconds: number;
}

/** `reconcile history`'s selection: the last `last` nights, their pairs within the filters (empty: all). */
export interface HistoryFilter {
  readonly schools: readonly string[];
  readonly forms: readonly string[];
  readonly last: number;
}

/** What `--keep-nights` removed. */
export interface Pruned {
  readonly nights: number;
  readonly ledgerRows: number;
  readonly taskRows: number;
}
