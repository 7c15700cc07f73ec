/**
 * What `fcctl status` reads and shows (issue 29 §2): the sections of the one snapshot document,
 * with stable names (docs/commands/status.md). A section of a side that is not configured or did
 * not answer says so (the same `Section` as `fcctl explain`).
 */
import type { Section } from '../explain/types.js';

export type { Section, Unread } from '../explain/types.js';

/** One reason and how many rows carry it. */
export interface ReasonCount {
  readonly reason: string | null;
  readonly n: number;
}

/** The outbox or the apply commands: counts of one instant of its database's clock. */
export interface QueueFacts {
  /** every state's row count (0 for a state with none) */
  readonly states: Readonly<Record<string, number>>;
  /**
   * the states whose count is an estimate (the history state — BROKER_ACCEPTED, DONE — on a table
   * of 200,000 rows or more, unless `--exact-counts`); the others are exact
   */
  readonly estimated: readonly string[];
  /** rows the next claim would take */
  readonly due: number;
  /** outbox rows held by push_allowed = 0; null for apply commands (nothing holds them) */
  readonly held: number | null;
  /** rows claimed by a process whose lease expired */
  readonly stuck: number;
  /** seconds the oldest due row has been due; null with none due */
  readonly oldestDueAgeSeconds: number | null;
  /** the top reasons of DEAD and of FAILED rows, most frequent first */
  readonly reasons: { readonly DEAD: readonly ReasonCount[]; readonly FAILED: readonly ReasonCount[] };
  /** accepted by the broker (outbox) or DONE (apply commands) in the last 5 minutes and the last hour */
  readonly accepted: { readonly last5m: number; readonly last1h: number };
  /** what an operator should fix in the schema (an index `db init` adds, missing: read without it) */
  readonly warnings: readonly string[];
  /** apply commands only: the app keys with commands due (at most 200), each needing a resolver of its own */
  readonly dueAppKeys?: readonly string[];
}

/** A process of the fleet registry `fcctl_worker`. */
export interface Worker {
  readonly workerId: string;
  readonly command: string;
  readonly host: string;
  readonly pid: number;
  readonly version: string;
  readonly state: string;
  /** why it is in outage or misconfigured, as the service said it (its target and error, escaped); else null */
  readonly detail: string | null;
  readonly rowsPerSecond: number;
  readonly startedAt: string;
  readonly lastBeatAt: string;
  readonly heartbeatSeconds: number;
  /** last beat older than three of its own intervals, not yet gone: an alarm */
  readonly stale: boolean;
  /** last beat older than 20 of its intervals and an hour: the process is gone, not counted; a live service deletes the row */
  readonly gone: boolean;
}

/** The owner of live claims, with how many rows it holds. */
export interface ClaimOwner {
  readonly owner: string;
  /** `host` and `pid` from the owner id `host:pid:random`, null for another shape */
  readonly host: string | null;
  readonly pid: number | null;
  readonly rows: number;
  readonly expiresAt: string;
}

/** A pause switch in force. */
export interface PauseInForce {
  readonly command: string;
  readonly reason: string;
  readonly pausedBy: string;
  readonly pausedAt: string | null;
  /** null: until resumed */
  readonly until: string | null;
}

/** The newest `reconcile run --all` run: its pairs and who is working on them. */
export interface ReconcileRunFacts {
  readonly runId: string;
  readonly startedAt: string | null;
  readonly total: number;
  readonly done: number;
  readonly failed: number;
  readonly pending: number;
  readonly claimed: number;
  readonly withDifferences: number;
  /** the processes holding a live claim of the run (claim tokens without their per-claim suffix) */
  readonly processes: readonly string[];
  /** at the rate finished so far; 0 when every pair is finished, null before any */
  readonly etaSeconds: number | null;
}

/** Both databases' view of one kind of thing. */
export interface Sides<T extends object> {
  readonly fc: Section<T>;
  readonly sh: Section<T>;
}

/** `--format`: the report (a terminal; JSON with `--json` or off one), or one line for scripts and status bars. */
export const STATUS_FORMATS = ['report', 'line'] as const;
export type StatusFormat = (typeof STATUS_FORMATS)[number];

/** The named conditions of `--fail-if`. */
export const FAIL_CONDITIONS = [
  'dead',
  'paused',
  'stale-workers',
  'failed-pairs',
  'outage',
  'not-ready',
  'no-relay',
  'apply-due',
] as const;
export type FailCondition = (typeof FAIL_CONDITIONS)[number];

/** Live registry rows (neither stale nor gone) of one command in one state. */
export interface LiveCount {
  readonly command: string;
  readonly state: string;
  readonly n: number;
}

/** A registry's rows: at most 200 listed, the stale, gone and live ones counted over all of them. */
export interface Fleet {
  readonly workers: readonly Worker[];
  /** rows whose last beat is older than three of their own intervals and that are not gone, all rows counted */
  readonly stale: number;
  /** rows whose last beat is older than 20 of their intervals and an hour: not counted as stale (a live service deletes them) */
  readonly gone: number;
  /** the live rows (neither stale nor gone) by command and state */
  readonly live: readonly LiveCount[];
}

/** A `--fail-if` condition that could not be judged: the sections it needs that were not read. */
export interface Unjudged {
  readonly condition: FailCondition;
  readonly sections: readonly string[];
}

/** `--json`'s one document (docs/commands/status.md). */
export interface StatusDocument {
  /** ISO 8601, the local clock when the snapshot was taken */
  readonly takenAt: string;
  readonly outbox: Section<QueueFacts>;
  readonly applyCommands: Section<QueueFacts>;
  readonly fleet: Sides<Fleet>;
  /** live claim owners of batch runs: outbox rows (FC), apply commands (SH) */
  readonly claims: Sides<{ readonly owners: readonly ClaimOwner[] }>;
  readonly pauses: Sides<{ readonly pauses: readonly PauseInForce[] }>;
  readonly reconcile: Section<{ readonly run: ReconcileRunFacts | null }>;
  /** each `--fail-if` condition, whether it holds now */
  readonly conditions: Readonly<Record<FailCondition, boolean>>;
  /** the conditions named by `--fail-if` that hold */
  readonly failing: readonly FailCondition[];
  /** the conditions named by `--fail-if` that could not be judged (a section they need not read): exit 3 */
  readonly unjudged: readonly Unjudged[];
  readonly exitCode: number;
}
