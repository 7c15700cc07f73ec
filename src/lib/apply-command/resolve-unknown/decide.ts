/**
 * What to do with one claimed `flow_apply_command` row (SPEC §9, seed 000 §7.3–§7.4). Pure: the
 * lookup and apply results were obtained by the caller; nothing here does I/O.
 *
 * The two rules that matter most, enforced by the shape of {@link resolve}:
 * - an apply is only ever asked for (`post`) after a lookup that answered "not found";
 * - DONE is only ever decided from an instance the flow center described (looked up or created).
 */
import { pauseFields, type PauseState } from '../../pause/decide.js';
import { batchExitCode } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import { afterFailure, type RetryPolicy } from '../../deliveries/retry.js';
import {
  type ApplyBranch,
  type ApplyRequest,
  type ApplyResult,
  errorCode,
  type FlowError,
  type FlowInstance,
  type LookupResult,
} from '../../flow/client.js';
import {
  type ApplyCommandRow,
  COLUMN_WIDTH,
  type CommandGeneration,
  cutText,
  generationOf,
  type MirrorAtClaim,
} from '../types.js';

/** Branches after which the command is settled: the flow center holds exactly this command's instance. */
export const DONE_BRANCHES: readonly ApplyBranch[] = ['CREATED', 'SAME_REQUEST', 'IDEMPOTENT', 'CONCURRENT_CREATED'];

/** Reasons fcctl writes to `last_error` of a DEAD row decided here (the text after ':' is detail). */
export const DEAD_REASONS = ['OWNERSHIP_MISMATCH', 'UNEXPECTED_BRANCH', 'INVALID_COMMAND'] as const;
export type DeadReason = (typeof DEAD_REASONS)[number];

/**
 * Whether `code` is one of the reason codes fcctl writes before the ':' of `last_error` on a
 * FAILED or DEAD row: a {@link DeadReason}, or `LOOKUP_`/`APPLY_` with `TIMEOUT`, `NETWORK`,
 * `MALFORMED` or `HTTP_<status>` ({@link errorCode}).
 * @example isReasonCode('APPLY_HTTP_503') // true
 */
export function isReasonCode(code: string): boolean {
  return (
    (DEAD_REASONS as readonly string[]).includes(code) ||
    /^(LOOKUP|APPLY)_(TIMEOUT|NETWORK|MALFORMED|HTTP_[0-9]{3})$/.test(code)
  );
}

/** The decision for one row. */
export type Transition =
  /** the instance exists and is this row's: settle and mirror its status */
  | { readonly kind: 'done'; readonly via: 'lookup'; readonly instance: FlowInstance; readonly roundBehind: boolean }
  /** the resent apply was taken (or had been): settle with the instance the flow center returned */
  | {
      readonly kind: 'done';
      readonly via: 'apply';
      readonly branch: ApplyBranch;
      readonly instance: FlowInstance;
      readonly roundBehind: boolean;
    }
  /**
   * a person must look: someone else's instance, a branch that is not "taken" (one of the seven,
   * or one the flow center answered outside them: kept as answered), or a command that cannot be resent
   */
  | { readonly kind: 'dead'; readonly reason: DeadReason; readonly branch: string | null; readonly detail: string }
  /**
   * no usable answer: retry later with backoff (DEAD once the budget is spent). `charged` false:
   * the request never reached the flow center, so the retry budget is not spent.
   */
  | { readonly kind: 'fail'; readonly reason: string; readonly detail: string; readonly charged: boolean };

/** A transition, or: resend the apply (only ever after "not found"). */
export type Step = Transition | { readonly kind: 'post'; readonly request: ApplyRequest };

/**
 * Which ownership fields of an instance differ from the row's (seed 000 §7.4: apply app key,
 * submitter and flowGuid, any one differing is someone else's instance). Empty when owned.
 * @example ownershipMismatch(row, instance) // ['flowGuid']
 */
export function ownershipMismatch(row: ApplyCommandRow, instance: FlowInstance): string[] {
  const diff: string[] = [];
  if (instance.applyAppKey !== row.apply_app_key) diff.push('applyAppKey');
  if (instance.submitterId !== String(row.submitter_id)) diff.push('submitterId');
  if (instance.flowGuid !== row.flow_guid) diff.push('flowGuid');
  return diff;
}

/** Why a row cannot be resent safely, or null. A resend must carry the original token and attempt. */
export function invalidCommand(row: ApplyCommandRow): string | null {
  if (!row.request_token) return 'request_token is empty: a resend could not be recognised as the same request';
  const attempt = Number(row.attempt);
  if (!Number.isSafeInteger(attempt) || attempt < 1) return `attempt ${String(row.attempt)} is not a positive integer`;
  if (!/^-?(0|[1-9][0-9]*)$/.test(String(row.submitter_id))) return 'submitter_id is not an integer';
  return null;
}

/** The apply a row resends: its own token and attempt, never new ones. */
export function applyRequestOf(row: ApplyCommandRow): ApplyRequest {
  return {
    bizType: row.biz_type,
    bizId: row.biz_id,
    applyAppKey: row.apply_app_key,
    submitterId: String(row.submitter_id),
    flowGuid: row.flow_guid,
    requestToken: row.request_token,
    attempt: Number(row.attempt),
  };
}

/** Connection errors by which a request never reached the flow center (nothing was sent). */
const NOT_REACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether a failed call is charged to the row's retry budget. A flow center that cannot be
 * reached at all (refused, not resolved, no route) is an outage the rows should outlive: seed 000
 * §7.3 expects them to heal once it is back, not to go DEAD after a few minutes of it. Every
 * other error — timeouts, cut connections, HTTP statuses, bad bodies — may have reached it.
 * @example charged({ kind: 'network', detail: 'ECONNREFUSED' }) // false
 */
export function charged(error: FlowError): boolean {
  return !(error.kind === 'network' && NOT_REACHED.has(error.detail));
}

function describe(instance: FlowInstance): string {
  return `instance ${instance.instanceId} status ${instance.status}`;
}

const roundBehind = (row: ApplyCommandRow, instance: FlowInstance) =>
  instance.round !== null && instance.round < Number(row.attempt);

function afterApply(row: ApplyCommandRow, apply: ApplyResult): Transition {
  if (apply.kind !== 'applied' && apply.kind !== 'unknown-branch')
    return { kind: 'fail', reason: `APPLY_${errorCode(apply)}`, detail: apply.detail, charged: charged(apply) };
  // An unknown branch is shown quoted (JSON escapes): it is the flow center's text, not ours.
  const shown =
    apply.kind === 'applied'
      ? apply.branch
      : `${JSON.stringify(cutText(apply.branch, 200))} (not a branch code of seed 000 §7.4)`;
  const inst = apply.instance;
  // An unknown branch without a usable instance is still an answer: DEAD with the branch, never resent.
  if (inst === null)
    return {
      kind: 'dead',
      reason: 'UNEXPECTED_BRANCH',
      branch: apply.branch,
      detail: `${shown}, no valid instance (${apply.kind === 'unknown-branch' ? (apply.problem ?? '') : ''})`,
    };
  const foreign = ownershipMismatch(row, inst);
  if (foreign.length > 0) {
    return {
      kind: 'dead',
      reason: 'OWNERSHIP_MISMATCH',
      branch: apply.branch,
      detail: `apply ${shown} answered with ${describe(inst)} whose ${foreign.join(', ')} differ`,
    };
  }
  if (apply.kind === 'applied' && DONE_BRANCHES.includes(apply.branch)) {
    return { kind: 'done', via: 'apply', branch: apply.branch, instance: inst, roundBehind: roundBehind(row, inst) };
  }
  return { kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: apply.branch, detail: `${shown}, ${describe(inst)}` };
}

/**
 * SPEC §9 for one row. With only the lookup: a transition, or `post` when (and only when) the
 * lookup answered "not found". With the apply result too: the final transition. An apply result
 * given after any other lookup answer is ignored — it should not exist.
 * @example
 * const step = resolve(row, await flow.lookup(row.biz_type, row.biz_id));
 * const t = step.kind === 'post' ? resolve(row, lookup, await flow.apply(step.request)) : step;
 */
export function resolve(row: ApplyCommandRow, lookup: LookupResult): Step;
export function resolve(row: ApplyCommandRow, lookup: LookupResult, apply: ApplyResult): Transition;
export function resolve(row: ApplyCommandRow, lookup: LookupResult, apply?: ApplyResult): Step {
  switch (lookup.kind) {
    case 'found': {
      const foreign = ownershipMismatch(row, lookup.instance);
      if (foreign.length > 0) {
        return {
          kind: 'dead',
          reason: 'OWNERSHIP_MISMATCH',
          branch: null,
          detail: `lookup found ${describe(lookup.instance)} whose ${foreign.join(', ')} differ`,
        };
      }
      return { kind: 'done', via: 'lookup', instance: lookup.instance, roundBehind: roundBehind(row, lookup.instance) };
    }
    case 'not-found': {
      const invalid = invalidCommand(row);
      if (invalid) return { kind: 'dead', reason: 'INVALID_COMMAND', branch: null, detail: invalid };
      if (apply === undefined) return { kind: 'post', request: applyRequestOf(row) };
      return afterApply(row, apply);
    }
    default:
      return { kind: 'fail', reason: `LOOKUP_${errorCode(lookup)}`, detail: lookup.detail, charged: charged(lookup) };
  }
}

/**
 * Whether an answer shows the flow center accepted our signature: a well-formed 2xx answer, or a
 * 2xx it should not have given. A malformed body is not counted: an oversized one is refused
 * before its status is known.
 * @example signatureAccepted({ kind: 'not-found' }) // true
 */
export function signatureAccepted(answer: LookupResult | ApplyResult): boolean {
  if (answer.kind === 'http') return answer.status >= 200 && answer.status < 300;
  return (
    answer.kind === 'found' ||
    answer.kind === 'not-found' ||
    answer.kind === 'applied' ||
    answer.kind === 'unknown-branch'
  );
}

/**
 * Whether an answer refuses our credentials, so that the run stops uncharged (SPEC §10: a
 * misconfiguration never spends row budgets). A 401 (signature refused) always does. A 403 does
 * only while nothing signed was accepted in this run: once the flow center has taken our
 * signature, a 403 is about that one request (that row), and charging it as any other 4xx keeps
 * one row from stopping every run for good.
 * @example refusesCredentials({ kind: 'http', status: 403, detail: '' }, true) // false
 */
export function refusesCredentials(answer: LookupResult | ApplyResult, acceptedBefore: boolean): boolean {
  if (answer.kind !== 'http') return false;
  return answer.status === 401 || (answer.status === 403 && !acceptedBefore);
}

/**
 * Whose fault a row's error answer is, in a follow resolver (issue 34 §1): the row's (FAILED with
 * backoff and its retry charged, SPEC §9), the flow center's (an outage: the row is released
 * uncharged and the service waits it out), not known yet (ask the readiness lookup), or a suspect:
 * released uncharged this once and remembered, charged if it fails again alone.
 */
export type ErrorVerdict = 'row' | 'outage' | 'probe' | 'suspect';

/**
 * Rows whose lookup (or apply) failed with no lookup (or apply) of another row answered well
 * since: a follow resolver keeps them across passes, so that an outage of real requests is seen
 * even while the readiness lookup answers (it cannot vouch for POST apply at all).
 */
export interface Suspects {
  readonly lookup: Set<string>;
  readonly apply: Set<string>;
}

export const noSuspects = (): Suspects => ({ lookup: new Set(), apply: new Set() });

/** Empties both sets. */
export function forget(suspects: Suspects): void {
  suspects.lookup.clear();
  suspects.apply.clear();
}

/**
 * The rule: a request of the same kind (lookup, apply) for another row answered well since the
 * row's request was sent makes the error the row's. Otherwise: the readiness lookup failing too,
 * the run already tripped, or another row's request of that kind failing with none answered well
 * since (the flow center fails every real request, whatever the readiness lookup says) is an
 * outage. Otherwise a lookup error asks the readiness lookup (when the lease covers one); then
 * the row alone fails: charged if it failed so before, else a suspect (a row whose request always
 * fails still goes DEAD, one retry later).
 * @example errorVerdict({ answeredSince: false, probeFailed: true, tripped: false, otherSuspects: false, mayProbe: false, suspectBefore: false }) // 'outage'
 */
export function errorVerdict(s: {
  /** a well-formed answer to a request of the same kind came back after the row's request was sent */
  readonly answeredSince: boolean;
  /** a readiness lookup sent after the row's request came back with an error */
  readonly probeFailed: boolean;
  /** the run stopped for the flow center's errors (or another row's verdict was an outage) */
  readonly tripped: boolean;
  /** another row is a {@link Suspects} of the same kind */
  readonly otherSuspects: boolean;
  /** a lookup error not yet checked by a readiness lookup, and the row's lease covers one */
  readonly mayProbe: boolean;
  /** the row is already a suspect of that kind (it failed so before, nothing answered well since) */
  readonly suspectBefore: boolean;
}): ErrorVerdict {
  if (s.answeredSince) return 'row';
  if (s.probeFailed || s.tripped || s.otherSuspects) return 'outage';
  if (s.mayProbe) return 'probe';
  return s.suspectBefore ? 'row' : 'suspect';
}

/**
 * Whether a follow resolver waits the poll interval after a pass (issue 34 §2): when the pass
 * claimed nothing though rows were due — another transaction holds them (`SKIP LOCKED` passes
 * them by) or another resolver took them first — going round at once would only count them again.
 * @example idleAfterPass({ claimed: 0 }) // true
 */
export function idleAfterPass(part: Pick<ResolveSummary, 'claimed'>): boolean {
  return part.claimed === 0;
}

/** Backoff and budget of apply commands: 20 s × 2^n, capped at an hour, DEAD at the 6th failure. */
export const APPLY_RETRY_POLICY: RetryPolicy = { baseSeconds: 20, capSeconds: 3600, maxRetries: 6 };

/** The write of one row's outcome; every one is guarded by claim owner and generation in SQL. */
export type CommandWrite =
  | {
      readonly kind: 'done';
      readonly gen: CommandGeneration;
      readonly status: number;
      readonly instanceId: string;
      /** the apply branch, null when settled by the lookup (last_branch is then cleared: no branch settled it) */
      readonly branch: ApplyBranch | null;
      /** written to last_error; null clears it */
      readonly note: string | null;
      /**
       * the status mirrored into service_apply.flow_status, only into the row that existed at
       * claim and only over the value read then; `changedNote` / `deletedNote` are written to
       * last_error instead of `note` when that value has changed / that row has been deleted
       */
      readonly mirror: {
        readonly status: number;
        readonly claimed: MirrorAtClaim;
        readonly changedNote: string;
        readonly deletedNote: string;
      };
    }
  | {
      readonly kind: 'fail';
      readonly gen: CommandGeneration;
      readonly state: 'FAILED' | 'DEAD';
      readonly retryCount: number;
      readonly backoffSeconds: number | null;
      readonly lastError: string;
    }
  /** `branch` already cut to the width of last_branch */
  | {
      readonly kind: 'dead';
      readonly gen: CommandGeneration;
      readonly branch: string | null;
      readonly lastError: string;
    }
  | { readonly kind: 'release'; readonly gen: CommandGeneration };

/** The result of one row, as counted in the summary and reported in events. */
export type RowResult =
  | {
      readonly kind: 'done';
      readonly via: 'lookup' | 'apply';
      readonly status: number;
      readonly branch: ApplyBranch | null;
      readonly roundBehind: boolean;
    }
  | { readonly kind: 'failed'; readonly reason: string; readonly dead: boolean }
  | { readonly kind: 'dead'; readonly reason: DeadReason; readonly branch: string | null }
  | { readonly kind: 'released'; readonly reason: string };

const errorText = (reason: string, detail: string) =>
  cutText(detail ? `${reason}: ${detail}` : reason, COLUMN_WIDTH.lastError);

/** No mirror read at claim: nothing is mirrored (a service_apply row is only written as read at claim). */
const NOT_READ: MirrorAtClaim = { exists: false, status: null, id: null };

/**
 * The write and the reported result of a transition.
 * @example planWrite(row, { kind: 'fail', reason: 'LOOKUP_TIMEOUT', detail: '', charged: true }, APPLY_RETRY_POLICY) // FAILED, retry 1, 20 s
 */
export function planWrite(
  row: ApplyCommandRow,
  t: Transition,
  policy: RetryPolicy,
): { write: CommandWrite; result: RowResult } {
  const gen = generationOf(row);
  switch (t.kind) {
    case 'done': {
      const branch = t.via === 'apply' ? t.branch : null;
      const note = t.roundBehind
        ? `ROUND_BEHIND: ${describe(t.instance)} is in round ${t.instance.round}, this command is attempt ${row.attempt}`
        : null;
      const claimed = row.mirror ?? NOT_READ;
      const changed =
        `MIRROR_CHANGED: service_apply.flow_status was ${claimed.status ?? 'NULL'} at claim and has changed since; ` +
        `status ${t.instance.status} of ${describe(t.instance)} was not mirrored over it`;
      const deleted =
        `MIRROR_CHANGED: the service_apply row (flow_status ${claimed.status ?? 'NULL'} at claim) has been deleted since; ` +
        `status ${t.instance.status} of ${describe(t.instance)} was not mirrored`;
      const withNote = (text: string) => cutText(note ? `${note}; ${text}` : text, COLUMN_WIDTH.lastError);
      const mirror = {
        status: t.instance.status,
        claimed,
        changedNote: withNote(changed),
        deletedNote: withNote(deleted),
      };
      return {
        write: {
          kind: 'done',
          gen,
          status: t.instance.status,
          instanceId: t.instance.instanceId,
          branch,
          note,
          mirror,
        },
        result: { kind: 'done', via: t.via, status: t.instance.status, branch, roundBehind: t.roundBehind },
      };
    }
    case 'dead': {
      const branch = t.branch === null ? null : cutText(t.branch, COLUMN_WIDTH.lastBranch);
      return {
        write: { kind: 'dead', gen, branch, lastError: errorText(t.reason, t.detail) },
        result: { kind: 'dead', reason: t.reason, branch },
      };
    }
    case 'fail': {
      const retries = Number(row.retry_count);
      // Not charged: FAILED with the backoff of its current count, the count (and budget) kept.
      const next = t.charged
        ? afterFailure(retries, policy)
        : {
            state: 'FAILED' as const,
            retryCount: retries,
            backoffSeconds: Math.min(policy.capSeconds, policy.baseSeconds * 2 ** retries),
          };
      return {
        write: { kind: 'fail', gen, ...next, lastError: errorText(t.reason, t.detail) },
        result: { kind: 'failed', reason: t.reason, dead: next.state === 'DEAD' },
      };
    }
  }
}

/**
 * What the mirror of a DONE write did: `written`; `missing` (no service_apply row at claim:
 * nothing written, whatever was inserted since); `changed` (the row's status is no longer the
 * one read at claim); `deleted` (the row read at claim is gone).
 */
export type MirrorOutcome = 'written' | 'missing' | 'changed' | 'deleted';

/** What a write did: `stale` when the guard matched nothing (the row moved on without us). */
export type WriteOutcome =
  | { readonly kind: 'written'; readonly mirror: MirrorOutcome | null }
  | { readonly kind: 'stale' };

/** What one row came to, as reported in events; a DONE says what became of its mirror. */
export type RowReport =
  | Exclude<RowResult, { kind: 'done' }>
  | (Extract<RowResult, { kind: 'done' }> & { readonly mirror?: MirrorOutcome })
  /** the guarded write matched nothing: another worker or the service moved the row on */
  | { readonly kind: 'stale'; readonly would: RowResult['kind'] }
  /** dry run: the lookup found nothing, so a run would resend the apply */
  | { readonly kind: 'would-post' };

export interface ResolveSummary {
  claimed: number;
  lookups: number;
  posts: number;
  done: number;
  doneViaLookup: number;
  doneViaApply: number;
  failed: number;
  dead: number;
  released: number;
  stale: number;
  wouldPost: number;
  /** DONE rows whose instance is in an earlier round than the command's attempt (flagged in last_error) */
  roundBehind: number;
  /** DONE rows with no service_apply row at claim to mirror the status into (one inserted since is not written) */
  mirrorMissing: number;
  /** DONE rows whose service_apply.flow_status changed after the claim: left as the service wrote it */
  mirrorChanged: number;
  /** DONE rows whose service_apply row, there at claim, was deleted before the write */
  mirrorDeleted: number;
  /** rows resolve would take but whose apply app key is not the configured one: never touched */
  otherAppKey: number;
  branches: Record<string, number>;
  failedByReason: Record<string, number>;
  deadByReason: Record<string, number>;
  /** released rows (claim given back, state unchanged) by why: counted here, printed as no row line */
  releasedByReason: Record<string, number>;
  stoppedBy:
    | 'drained'
    | 'max-rows'
    | 'max-seconds'
    | 'signal'
    | 'paused'
    | 'flow-center-errors'
    | 'credentials-refused';
  /** the pause that stopped the run (`fcctl pause apply-command resolve-unknown`, or `--pause-file`) */
  paused?: PauseState;
  /** the last error when the run stopped for `maxConsecutiveErrors` */
  flowCenterErrors?: string;
  /** the refusal (401/403) that stopped the run */
  credentialsRefused?: string;
}

/** A summary with nothing counted yet. */
export function emptySummary(): ResolveSummary {
  return {
    claimed: 0,
    lookups: 0,
    posts: 0,
    done: 0,
    doneViaLookup: 0,
    doneViaApply: 0,
    failed: 0,
    dead: 0,
    released: 0,
    stale: 0,
    wouldPost: 0,
    roundBehind: 0,
    mirrorMissing: 0,
    mirrorChanged: 0,
    mirrorDeleted: 0,
    otherAppKey: 0,
    branches: {},
    failedByReason: {},
    deadByReason: {},
    releasedByReason: {},
    stoppedBy: 'drained',
  };
}

/**
 * `part` (one pass of a follow resolver) added into `total`: counts summed, the reasons merged, the
 * stop and its notes the last pass's.
 * @example addSummary(total, runOnce) // total.done += runOnce.done, …
 */
export function addSummary(total: ResolveSummary, part: ResolveSummary): void {
  const counts = [
    'claimed',
    'lookups',
    'posts',
    'done',
    'doneViaLookup',
    'doneViaApply',
    'failed',
    'dead',
    'released',
    'stale',
    'wouldPost',
    'roundBehind',
    'mirrorMissing',
    'mirrorChanged',
    'mirrorDeleted',
  ] as const;
  for (const k of counts) total[k] += part[k];
  total.otherAppKey = part.otherAppKey;
  for (const k of ['branches', 'failedByReason', 'deadByReason', 'releasedByReason'] as const) {
    for (const [reason, n] of Object.entries(part[k])) total[k][reason] = (total[k][reason] ?? 0) + n;
  }
  total.stoppedBy = part.stoppedBy;
}

/** Adds one to a count by key. */
export const bump = (m: Record<string, number>, k: string): void => {
  m[k] = (m[k] ?? 0) + 1;
};

/**
 * Counts one row's report into the summary.
 * @example countReport(s, { kind: 'released', reason: 'STOPPED' }) // s.released + 1
 */
export function countReport(s: ResolveSummary, r: RowReport): void {
  switch (r.kind) {
    case 'done':
      s.done += 1;
      if (r.via === 'lookup') s.doneViaLookup += 1;
      else s.doneViaApply += 1;
      if (r.roundBehind) s.roundBehind += 1;
      if (r.mirror === 'missing') s.mirrorMissing += 1;
      if (r.mirror === 'changed') s.mirrorChanged += 1;
      if (r.mirror === 'deleted') s.mirrorDeleted += 1;
      break;
    case 'failed':
      if (r.dead) s.dead += 1;
      else s.failed += 1;
      bump(r.dead ? s.deadByReason : s.failedByReason, r.reason);
      break;
    case 'dead':
      s.dead += 1;
      bump(s.deadByReason, r.reason);
      break;
    case 'released':
      s.released += 1;
      bump(s.releasedByReason, r.reason);
      break;
    case 'stale':
      s.stale += 1;
      break;
    case 'would-post':
      s.wouldPost += 1;
      break;
  }
}

/**
 * Whether a row's report is printed as a `row` line. Rows whose state did not change are only
 * counted in the summary (docs/output.md): a DONE found by the lookup with nothing to flag (not a
 * round behind, its mirror neither changed nor deleted), and a released row (its claim given back,
 * `releasedByReason`). Changes, failures, stale writes and a dry run's would-post are printed.
 * @example loggedReport({ kind: 'released', reason: 'STOPPED' }) // false
 */
export function loggedReport(r: RowReport): boolean {
  if (r.kind === 'released') return false;
  return !(
    r.kind === 'done' &&
    r.via === 'lookup' &&
    !r.roundBehind &&
    r.mirror !== 'changed' &&
    r.mirror !== 'deleted'
  );
}

/** Whether the flow center stopped the run (refused credentials, or errors in a row): exit 3. */
const trippedBy = (s: Pick<ResolveSummary, 'stoppedBy'>) =>
  s.stoppedBy === 'credentials-refused' || s.stoppedBy === 'flow-center-errors';

/**
 * The run's exit code: 3 when the flow center stopped it, 1 when a row is FAILED or DEAD or a
 * signal stopped the run, 0 otherwise (as `batchExitCode` orders them).
 * @example resolveExitCode({ ...emptySummary(), failed: 1 }) // 1
 */
export function resolveExitCode(s: Pick<ResolveSummary, 'stoppedBy' | 'failed' | 'dead'>): number {
  return batchExitCode({ environment: trippedBy(s), failed: s.failed + s.dead, interrupted: s.stoppedBy === 'signal' });
}

/**
 * The summary line of a run, field by field (`wouldPost` only in a dry run, `credentialsRefused`
 * only when set); `seconds` unrounded, the rate computed from it.
 * @example summarizeResolve('apply-command resolve-unknown', s, { exitCode: 0, dryRun: false, flowUrl, seconds: 2.04 }).seconds // 2
 */
export function summarizeResolve(
  command: string,
  s: ResolveSummary,
  run: { readonly exitCode: number; readonly dryRun: boolean; readonly flowUrl: string; readonly seconds: number },
): Summary {
  return {
    command,
    exitCode: run.exitCode,
    dryRun: run.dryRun,
    flowUrl: run.flowUrl,
    claimed: s.claimed,
    lookups: s.lookups,
    posts: s.posts,
    done: s.done,
    doneViaLookup: s.doneViaLookup,
    doneViaApply: s.doneViaApply,
    failed: s.failed,
    dead: s.dead,
    released: s.released,
    stale: s.stale,
    ...(run.dryRun ? { wouldPost: s.wouldPost } : {}),
    roundBehind: s.roundBehind,
    mirrorMissing: s.mirrorMissing,
    mirrorChanged: s.mirrorChanged,
    mirrorDeleted: s.mirrorDeleted,
    otherAppKey: s.otherAppKey,
    branches: s.branches,
    failedByReason: s.failedByReason,
    deadByReason: s.deadByReason,
    releasedByReason: s.releasedByReason,
    stoppedBy: s.stoppedBy,
    ...(s.paused ? { paused: pauseFields(s.paused) } : {}),
    ...(s.credentialsRefused ? { credentialsRefused: s.credentialsRefused } : {}),
    seconds: Math.round(run.seconds * 10) / 10,
    rowsPerSecond: run.seconds > 0 ? Math.round(s.claimed / run.seconds) : 0,
  };
}

/**
 * Why the run ends with exit 3 (the flow center stopped it), as the message says it; null when it did not.
 * @example resolveStopMessage({ ...emptySummary(), stoppedBy: 'flow-center-errors', flowCenterErrors: 'timeout: x' }, 20) // 'flow center gave 20 errors in a row …'
 */
export function resolveStopMessage(s: ResolveSummary, maxConsecutiveErrors: number): string | null {
  if (s.stoppedBy === 'credentials-refused') {
    return `flow center refused our credentials (${s.credentialsRefused}): check FCCTL_APP_KEY and FCCTL_APP_SECRET; stopped at the first refusal, no retry was charged to any row (${s.released} released)`;
  }
  if (s.stoppedBy === 'flow-center-errors') {
    return `flow center gave ${maxConsecutiveErrors} errors in a row (last: ${s.flowCenterErrors}); stopped, rows not yet tried were released with their retry budget untouched`;
  }
  return null;
}

/** The rows by result, as the run's metrics count them. */
export function resolveRowsByResult(s: ResolveSummary): Record<string, number> {
  // the one vocabulary of results (issue 36 §3: src/lib/service/decide.ts resultLabel)
  const { done, failed, dead, released, stale } = s;
  return { done, retry: failed, dead, released, stale };
}
