/**
 * What `fcctl explain` reads and shows (issue 29 §1): plain rows per section, the facts one verdict
 * is decided from, and the document `--json` prints. Section names are stable (docs/commands/explain.md).
 */

export type { Section, Unread } from '../cli/section.js';

/** The FC `answer` row, with its hash recomputed now (fc.canon.v1) and the newest outbox row's. */
export interface FcAnswer {
  readonly answerUuid: string;
  readonly formUuid: string;
  readonly formVersion: number;
  readonly schId: string;
  readonly revision: string;
  readonly isDeleted: boolean;
  readonly updateTime: string | null;
  /** null when the row cannot make a snapshot (the error says why) */
  readonly contentHash: string | null;
  readonly hashError: string | null;
  /** the newest outbox row's content_hash (highest revision, any consumer), null without one */
  readonly outboxHash: string | null;
  readonly outboxRevision: string | null;
  /** the recomputed hash equals the newest outbox row's, when both exist and their revisions are equal */
  readonly hashMatches: boolean | null;
}

export interface GrantFacts {
  /** the form the grant is of: a verdict takes only its answer's form's grant */
  readonly formUuid: string;
  readonly consumerAppKey: string;
  readonly schId: string;
  readonly grantVersion: string;
  readonly read: boolean;
  readonly subscribe: boolean;
  readonly push: boolean;
  readonly revoked: boolean;
}

/** A live, stale or gone registry row of the process that holds a claim (`fcctl_worker`), in `fcctl status`'s words. */
export interface ClaimHolder {
  readonly workerId: string;
  readonly host: string;
  readonly pid: number;
  readonly state: string;
  readonly lastBeatAt: string;
  /** missed three of its beats, not yet gone (service/sql.ts STALE_NOT_GONE) */
  readonly stale: boolean;
  /** silent 20 of its intervals and an hour: the process is gone (service/sql.ts GONE_WORKER) */
  readonly gone: boolean;
}

/** One `answer_delivery` row, times relative to the FC database's clock when read. */
export interface OutboxRow {
  readonly eventId: string;
  readonly eventType: string;
  readonly consumerAppKey: string;
  readonly schId: string;
  readonly grantVersion: string;
  readonly formUuid: string;
  readonly revision: string;
  readonly isDeleted: boolean;
  readonly contentHash: string;
  /** the generation: `replay_op_digest` of the last replay, null before any */
  readonly generation: string | null;
  readonly state: string;
  readonly retryCount: number;
  readonly lastError: string | null;
  readonly nextRetryAt: string | null;
  /** seconds from now to `next_retry_at` (negative: overdue), null without one */
  readonly nextRetryInSeconds: number | null;
  readonly brokerAcceptedAt: string | null;
  readonly acceptedAgoSeconds: number | null;
  readonly consumerAppliedAt: string | null;
  readonly consumerOutcome: string | null;
  readonly claimOwner: string | null;
  readonly claimExpiresAt: string | null;
  /** the lease has not expired */
  readonly claimLive: boolean;
  /** the owner's registry row (host and pid from the owner id), null when it has none */
  readonly claimHolder: ClaimHolder | null;
  readonly createTime: string;
}

/** The SH projection row (snapshot and business columns left out). */
export interface ProjectionFacts {
  readonly schId: string;
  readonly formUuid: string;
  readonly revision: string;
  readonly contentHash: string;
  readonly isDeleted: boolean;
  readonly linkState: string;
  readonly applyId: string | null;
  readonly flowGuid: string | null;
  readonly conflictFlag: boolean;
  readonly projectionVersion: string;
  readonly createTime: string | null;
  readonly updateTime: string | null;
  readonly retiredAt: string | null;
  readonly retireProofId: string | null;
  readonly lastRepairProofId: string | null;
  readonly lastRepairedAt: string | null;
}

export interface AuditRow {
  readonly action: string;
  readonly outcome: string;
  readonly reason: string | null;
  readonly proofId: string | null;
  readonly runId: string;
  readonly host: string;
  readonly schId: string | null;
  readonly createTime: string;
}

/** The last `reconcile run --all` that covered the projection's (school, form), and this answer's category in it. */
export interface ReconcileFacts {
  readonly runId: string;
  readonly schId: string;
  readonly formUuid: string;
  readonly state: string;
  readonly finishedAt: string | null;
  /** the pair's counts by category, as the task table recorded them */
  readonly counts: Readonly<Record<string, number>> | null;
  /** this answer's category, or why it is not known */
  readonly category: string;
  readonly categorySource: string;
}

export interface ApplyCommandFacts {
  /** `flow_apply_command.id`, null when there is no command (state `NO_COMMAND`) */
  readonly id: string | null;
  readonly bizType: string;
  readonly bizId: string;
  readonly state: string;
  readonly lastBranch: string | null;
  readonly remoteStatus: number | null;
  readonly remoteInstanceId: string | null;
  readonly retryCount: number;
  readonly nextRetryAt: string | null;
  /** seconds from now to `next_retry_at` (negative: overdue), null without one */
  readonly nextRetryInSeconds: number | null;
  readonly lastError: string | null;
  /** when the row last changed: a requeue's operation id names it, so a later DEAD gets a new one */
  readonly updateTime: string | null;
  readonly flowStatus: number | null;
  /** the school of the projection linked to it (`explain answer`; absent for `explain command`) */
  readonly schId?: string;
}

/** The flow instance looked up now (one signed GET), or why there is none. */
export type FlowLookup =
  | { readonly status: 'not configured' }
  | { readonly status: 'found'; readonly instance: Readonly<Record<string, unknown>> }
  | { readonly status: 'not found' }
  | { readonly status: 'error'; readonly error: string };

/** What one verdict is decided from: one consumer and school of the answer. */
export interface VerdictFacts {
  readonly answerUuid: string;
  readonly consumerAppKey: string;
  readonly schId: string;
  /** the FC answer: found (its revision, hash, isDeleted), absent, or not read */
  readonly fc:
    | {
        readonly kind: 'found';
        /** the answer's own school (`answer.sch_id`): repair-authoritative repairs only that school's projection */
        readonly schId?: string;
        readonly revision: string;
        readonly contentHash: string | null;
        readonly isDeleted: boolean;
      }
    | { readonly kind: 'absent' }
    | { readonly kind: 'unread' };
  /** null: no grant row */
  readonly grant: GrantFacts | null | 'unread';
  /** the newest outbox row of this consumer and school (highest revision), null: none listed */
  readonly newest: OutboxRow | null;
  /** the outbox list was cut at its limit: a pair without a listed row may still have rows */
  readonly outboxCut?: boolean;
  /**
   * every consumer of this school compared with the one SH projection (no `--consumer`): SH is one
   * consumer's deployment, so with more than one a repair is right only under SH's own key
   */
  readonly shConsumers?: readonly string[];
  /**
   * the apply commands of the projection at this school (its `apply_id`): once the answer is
   * delivered and applied, what is left to happen at the flow center; absent or empty: none read
   */
  readonly applyCommands?: readonly ApplyCommandFacts[];
  /** the projection, when SH speaks for this consumer and school (see docs) */
  readonly sh:
    | { readonly kind: 'found'; readonly row: ProjectionFacts }
    | { readonly kind: 'absent' }
    | { readonly kind: 'unread' };
}

export type VerdictKind =
  | 'DELIVERED_APPLIED'
  | 'ACCEPTED_NOT_APPLIED'
  | 'CONSUMER_REFUSED'
  | 'SENDING'
  | 'WAITING'
  | 'CANNOT_SEND'
  | 'HELD'
  | 'DEAD'
  | 'GRANT_REVOKED'
  | 'WILL_BE_REVOKED'
  | 'NO_GRANT'
  | 'NO_DELIVERY_ROW'
  | 'OUTBOX_BEHIND'
  | 'SH_STALE'
  | 'SH_MISSING'
  | 'SH_DIFFERS'
  | 'SH_AHEAD'
  | 'RETIRED_PRESENT_AT_FC'
  | 'ABSENT_AT_FC'
  | 'RETIRED'
  | 'REGRANTED'
  | 'APPLY_PENDING'
  | 'APPLY_UNKNOWN'
  | 'APPLY_FAILED'
  | 'APPLY_DEAD'
  | 'UNKNOWN';

/** One line per consumer and school: what is the case, and the exact next command where one helps. */
export interface Verdict {
  readonly consumerAppKey: string;
  readonly schId: string;
  readonly kind: VerdictKind;
  readonly text: string;
  /** a command to run as printed, or null: for a command that writes only with `--execute`, its dry run */
  readonly command: string | null;
  /** the write that follows the dry run: the same line with `--execute`, or null */
  readonly execute: string | null;
}
