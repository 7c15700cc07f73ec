/**
 * `deliveries replay`: the decision, pure (seed 000 §8 `replayAuthorized`, SPEC §5). The runner
 * (`run.ts`) reads the facts — the operation's recorded answer, the newest outbox row of
 * the answer/consumer/school, the grant read fresh — and applies the write this returns.
 */
import { createHash } from 'node:crypto';
import { EnvironmentError, ExitCode } from '../../cli/exit.js';
import { canonicalRevision } from '../../ids.js';
import type { DeliveryState, GrantRow } from '../types.js';

/** The five stable codes of seed 000 §8, in the order they are documented. */
export const REPLAY_CODES = [
  'QUEUED',
  'ALREADY_DELIVERED',
  'GRANT_REVOKED',
  'REVISION_MISMATCH',
  'NO_DELIVERY_ROW',
] as const;
export type ReplayCode = (typeof REPLAY_CODES)[number];

/**
 * fcctl's own refusal, outside the protocol's five: the operation id was already used for another
 * answer, revision, consumer or school. Nothing is written or recorded.
 */
export const OPERATION_CONFLICT = 'OPERATION_CONFLICT' as const;
export type ReplayOutcomeCode = ReplayCode | typeof OPERATION_CONFLICT;

/** Codes that leave the consumer without this delivery and count as refused (exit 1, SPEC §2). */
export const REFUSED_CODES: ReadonlySet<ReplayOutcomeCode> = new Set([
  'GRANT_REVOKED',
  'REVISION_MISMATCH',
  'NO_DELIVERY_ROW',
  OPERATION_CONFLICT,
]);

/** Longest reason recorded (`fcctl_replay_operation.reason` is VARCHAR(512)). */
export const MAX_REASON_LENGTH = 512;

/** What the responder asked for; `expectedRevision` is a canonical decimal string. */
export interface ReplayRequest {
  readonly answerUuid: string;
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly expectedRevision: string;
  /** SHA-256 hex of the operation id ({@link opDigest}) */
  readonly opDigest: string;
}

/** The newest `answer_delivery` row of an answer/consumer/school, as the replay reads it. */
export interface ReplayRow {
  readonly id: string;
  readonly event_id: string;
  readonly state: DeliveryState;
  readonly retry_count: number;
  readonly replay_op_digest: string | null;
  readonly answer_revision: string;
  readonly grant_version: string;
  readonly form_uuid: string;
  readonly last_error: string | null;
  readonly consumer_applied_at: string | null;
  readonly consumer_outcome: string | null;
}

/** An answer recorded in `fcctl_replay_operation` for an operation digest. */
export interface RecordedAnswer {
  readonly answerUuid: string;
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly expectedRevision: string;
  readonly code: ReplayCode;
  readonly reason: string;
  readonly eventId: string | null;
  /** the state and last error of the row the answer is about, as it is now (null: no such row) */
  readonly rowState?: DeliveryState | null;
  readonly rowLastError?: string | null;
}

/** The generation a replay write is conditional on: the row as it was read. */
export interface RowGeneration {
  readonly id: string;
  readonly state: DeliveryState;
  readonly retryCount: number;
  readonly replayOpDigest: string | null;
}

/** What a replay writes to `answer_delivery` (always together with recording the answer). */
export type ReplayWrite =
  | { readonly kind: 'reset'; readonly from: RowGeneration; readonly opDigest: string }
  | { readonly kind: 'revoke'; readonly from: RowGeneration; readonly lastError: string };

export type ReplayDecision =
  | {
      readonly code: ReplayCode;
      readonly reason: string;
      /** the answer was recorded by an earlier call with this operation id: write nothing */
      readonly repeated: boolean;
      /** a repeated QUEUED answer whose row is FAILED or DEAD again since: what to do ({@link failedAgainNote}) */
      readonly stillFailed?: string;
      readonly eventId: string | null;
      /** the delivery row the answer is about (recorded with the answer) */
      readonly deliveryId: string | null;
      readonly write?: ReplayWrite;
    }
  | {
      readonly code: typeof OPERATION_CONFLICT;
      readonly reason: string;
      readonly repeated: false;
      readonly eventId: null;
      readonly deliveryId: null;
    };

export interface ReplayFacts {
  readonly request: ReplayRequest;
  /** the newest row for the request's answer/consumer/school, or null */
  readonly newest: ReplayRow | null;
  /** the grant of the newest row's form/school/consumer, read fresh; null when there is none */
  readonly grant: GrantRow | null;
  /** the answer recorded for this operation digest, or null on the first call */
  readonly prior: RecordedAnswer | null;
}

/**
 * The operation digest stored in `replay_op_digest` and as the key of `fcctl_replay_operation`:
 * lowercase hex SHA-256 of the operation id's UTF-8 bytes.
 * @example opDigest('op-1') // '1d6ab4…' (64 hex characters)
 */
export function opDigest(operationId: string): string {
  return createHash('sha256').update(operationId, 'utf8').digest('hex');
}

/**
 * Why a fresh grant no longer authorizes a row — the same checks, codes and order as `send`'s
 * pre-publish step 2 (`prePublish` in send/decide.ts) — or null when it does. `push_allowed` is not
 * checked: a replayed row of a push-disabled grant is queued and held by `send`.
 * @example grantRefusal(null, '3') // { code: 'GRANT_MISSING', … }
 */
export function grantRefusal(
  grant: GrantRow | null,
  rowGrantVersion: string,
): { code: 'GRANT_MISSING' | 'GRANT_REVOKED' | 'GRANT_NOT_READABLE' | 'GRANT_VERSION_CHANGED'; detail: string } | null {
  if (!grant) return { code: 'GRANT_MISSING', detail: 'no grant for this form, consumer and school' };
  if (Number(grant.revoked) !== 0) return { code: 'GRANT_REVOKED', detail: 'the grant is revoked' };
  if (Number(grant.read_allowed) !== 1 || Number(grant.subscribe_allowed) !== 1)
    return { code: 'GRANT_NOT_READABLE', detail: 'the grant no longer allows read and subscribe' };
  if (String(grant.grant_version) !== String(rowGrantVersion)) {
    return {
      code: 'GRANT_VERSION_CHANGED',
      detail: `grant version is ${grant.grant_version}, the row was made under ${rowGrantVersion}; an old grant is never replayed`,
    };
  }
  return null;
}

function sameParameters(prior: RecordedAnswer, request: ReplayRequest): boolean {
  return (
    prior.answerUuid === request.answerUuid &&
    prior.consumerAppKey === request.consumerAppKey &&
    String(prior.consumerSchoolId) === String(request.consumerSchoolId) &&
    canonicalRevision(prior.expectedRevision) === canonicalRevision(request.expectedRevision)
  );
}

/**
 * Receipt outcomes by which the consumer did not take the snapshot in (seed 000 §7.2: a hash that
 * disagrees with the envelope, authorization not confirmed, a refused payload): such a row may
 * still be replayed. APPLIED, IGNORED (it already had this or newer) and an outcome not given
 * count as delivered.
 */
export const NOT_TAKEN_OUTCOMES = ['CONFLICT', 'DEFERRED', 'REJECTED'] as const;

/**
 * Whether the consumer reported the row taken in (SPEC §5 ALREADY_DELIVERED).
 * @example consumerHasIt({ consumer_applied_at: '2026-10-21 10:06:00', consumer_outcome: 'DEFERRED' }) // false
 */
export function consumerHasIt(row: Pick<ReplayRow, 'consumer_applied_at' | 'consumer_outcome'>): boolean {
  return (
    row.consumer_applied_at !== null && !(NOT_TAKEN_OUTCOMES as readonly string[]).includes(row.consumer_outcome ?? '')
  );
}

const generationOf = (row: ReplayRow): RowGeneration => ({
  id: String(row.id),
  state: row.state,
  retryCount: Number(row.retry_count),
  replayOpDigest: row.replay_op_digest,
});

/**
 * The answer to one replay request, in this order:
 * 1. an answer recorded for the operation → that answer again, nothing written (or
 *    `OPERATION_CONFLICT` when it was recorded for other parameters);
 * 2. no row → `NO_DELIVERY_ROW`; newest row of another revision → `REVISION_MISMATCH`;
 * 3. the consumer reported it taken in (a receipt other than CONFLICT, DEFERRED or REJECTED) →
 *    `ALREADY_DELIVERED`;
 * 4. the row is `GRANT_REVOKED` (terminal, never revived), or the fresh grant is missing, revoked,
 *    unreadable or of another version → `GRANT_REVOKED`; an open or DEAD row is marked
 *    GRANT_REVOKED (a BROKER_ACCEPTED row keeps its state: the broker did accept it);
 * 5. otherwise (PENDING, FAILED, DEAD, BROKER_ACCEPTED without such a receipt) → `QUEUED`: reset to
 *    PENDING under the operation's generation, conditional on the generation read.
 * @example decideReplay({ request, newest: null, grant: null, prior: null }).code // 'NO_DELIVERY_ROW'
 */
export function decideReplay(facts: ReplayFacts): ReplayDecision {
  const { request, newest: row, grant, prior } = facts;
  if (prior) {
    if (!sameParameters(prior, request)) {
      return {
        code: OPERATION_CONFLICT,
        reason:
          `operation id already used for answer ${prior.answerUuid} revision ${prior.expectedRevision}, consumer ${prior.consumerAppKey}, ` +
          `school ${prior.consumerSchoolId} (answered ${prior.code}); use a new operation id`,
        repeated: false,
        eventId: null,
        deliveryId: null,
      };
    }
    // the first answer again (idempotency), but not as if it had worked: the row failed again since
    const note = failedAgainNote(prior);
    return {
      code: prior.code,
      reason: prior.reason,
      repeated: true,
      ...(note ? { stillFailed: note } : {}),
      eventId: prior.eventId,
      deliveryId: null,
    };
  }
  const answer = (code: ReplayCode, reason: string, write?: ReplayWrite): ReplayDecision => ({
    code,
    // recorded in a VARCHAR(512): the first answer and its repeats must be the same text
    reason: [...reason].slice(0, MAX_REASON_LENGTH).join(''),
    repeated: false,
    eventId: row ? row.event_id : null,
    deliveryId: row ? String(row.id) : null,
    ...(write ? { write } : {}),
  });
  if (!row)
    return answer(
      'NO_DELIVERY_ROW',
      `no outbox row for answer ${request.answerUuid}, consumer ${request.consumerAppKey}, school ${request.consumerSchoolId}`,
    );
  const expected = canonicalRevision(request.expectedRevision);
  const actual = canonicalRevision(row.answer_revision);
  if (expected === null || actual !== expected) {
    return answer(
      'REVISION_MISMATCH',
      `the newest row has revision ${row.answer_revision}, expected ${request.expectedRevision}`,
    );
  }
  if (consumerHasIt(row)) {
    return answer(
      'ALREADY_DELIVERED',
      `the consumer reported ${row.consumer_outcome ?? 'a receipt'} at ${row.consumer_applied_at}`,
    );
  }
  if (row.state === 'GRANT_REVOKED') {
    return answer(
      'GRANT_REVOKED',
      `the row is GRANT_REVOKED (${row.last_error ?? 'no reason kept'}); a revoked row is never replayed`,
    );
  }
  const refusal = grantRefusal(grant, row.grant_version);
  if (refusal) {
    const reason = `${refusal.code}: ${refusal.detail}`;
    if (row.state === 'BROKER_ACCEPTED') return answer('GRANT_REVOKED', `${reason} (the row stays BROKER_ACCEPTED)`);
    return answer('GRANT_REVOKED', `${reason} (row marked GRANT_REVOKED)`, {
      kind: 'revoke',
      from: generationOf(row),
      lastError: refusal.code,
    });
  }
  const held =
    Number(grant?.push_allowed) !== 1
      ? '; push is disabled for this grant, so send holds it until push is allowed'
      : '';
  const was = `${row.state}${Number(row.retry_count) > 0 ? `, ${row.retry_count} retries` : ''}${row.last_error ? `, ${row.last_error}` : ''}`;
  return answer('QUEUED', `reset to PENDING from ${was}; the next send publishes event ${row.event_id}${held}`, {
    kind: 'reset',
    from: generationOf(row),
    opDigest: request.opDigest,
  });
}

/**
 * What to do about a repeated QUEUED answer whose row is FAILED or DEAD again since that replay, or
 * null for any other answer. The same operation id changes nothing (the idempotency rule), so the
 * row stays failed until it is replayed under a new id; such an item fails the run (exit 1).
 * @example failedAgainNote({ ...recorded, code: 'QUEUED', rowState: 'DEAD', rowLastError: 'NO_ROUTE' }) // 'event … is DEAD again (NO_ROUTE) …'
 */
export function failedAgainNote(prior: RecordedAnswer): string | null {
  if (prior.code !== 'QUEUED' || (prior.rowState !== 'FAILED' && prior.rowState !== 'DEAD')) return null;
  const error = prior.rowLastError ? ` (${prior.rowLastError})` : '';
  return `event ${prior.eventId} is ${prior.rowState} again${error} since this operation id queued it; the same id changes nothing: replay it under a new operation id (with --failed, a new --operation-prefix)`;
}

/**
 * The closing line of a run with repeated answers whose rows failed again, or null when none did:
 * what to do, with a new `--operation-prefix` for `--failed` (its `prefix`), new ids otherwise.
 * @example stillFailedNote(2, 'INC-9') // '2 rows replayed earlier … with a new --operation-prefix than INC-9'
 */
export function stillFailedNote(count: number, prefix?: string): string | null {
  if (count === 0) return null;
  const fresh = prefix === undefined ? 'new operation ids' : `a new --operation-prefix than ${prefix}`;
  return `${count} rows replayed earlier under these operation ids are FAILED or DEAD again; the same ids change nothing: replay them with ${fresh}`;
}

/**
 * True when the code leaves the item refused: the run exits 1 (SPEC §2).
 * @example isRefused('ALREADY_DELIVERED') // false
 */
export function isRefused(code: ReplayOutcomeCode): boolean {
  return REFUSED_CODES.has(code);
}

// ── the run's outcome: exit code, summary, error ──

/** One item's result as printed: the request, the code and its reason. */
export type ReplayResult = {
  readonly line: number;
  readonly answerUuid: string;
  readonly expectedRevision: string;
  readonly operationId: string;
  readonly code: ReplayDecision['code'];
  readonly reason: string;
  readonly eventId: string | null;
  /** answered from the record of an earlier call with this operation id */
  readonly repeated: boolean;
  /** repeated, QUEUED, and the row is FAILED or DEAD again since: nothing done, the run exits 1 */
  readonly stillFailed: boolean;
  /** with `stillFailed`: what to do ({@link failedAgainNote}) */
  readonly note?: string;
};

/** How a replay run ended, as its exit code and summary care. */
export interface ReplayEnd {
  readonly results: readonly ReplayResult[];
  readonly notRun: number;
  readonly stoppedBy: string;
  readonly error: unknown;
}

/**
 * The exit code of a replay run: 3 when a database error stopped it, 1 when any item was refused,
 * not run, or repeated while its row is FAILED or DEAD again, 0 when every item is QUEUED or
 * ALREADY_DELIVERED.
 * @example replayExitCode({ results: [], notRun: 1, stoppedBy: 'signal', error: null }) // 1
 */
export function replayExitCode(end: ReplayEnd): ExitCode {
  const failed = end.results.filter((r) => isRefused(r.code) || r.stillFailed).length;
  return end.error ? ExitCode.ENVIRONMENT : failed + end.notRun > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * The summary `deliveries replay` prints and its counts: JSON (`json`) gets every code with its
 * count inside the summary; a terminal the codes that occurred, one row each, beside it.
 * @example summarizeReplay(end, { items: 2, dryRun: true, elapsedMs: 40, json: true }).summary.byCode.QUEUED
 */
export function summarizeReplay(
  end: ReplayEnd,
  run: {
    readonly items: number;
    readonly dryRun: boolean;
    readonly elapsedMs: number;
    readonly json: boolean;
    readonly more?: boolean;
  },
) {
  const byCode: Record<string, number> = Object.fromEntries([...REPLAY_CODES, OPERATION_CONFLICT].map((c) => [c, 0]));
  for (const r of end.results) byCode[r.code] = (byCode[r.code] ?? 0) + 1;
  const counts = run.json ? undefined : Object.fromEntries(Object.entries(byCode).filter(([, n]) => n > 0));
  const summary = {
    command: 'deliveries replay',
    // `replay --failed` that left matching rows unselected is not all done: exit 1 until a run gets them all
    exitCode: run.more && replayExitCode(end) === ExitCode.OK ? ExitCode.ITEMS_FAILED : replayExitCode(end),
    dryRun: run.dryRun,
    items: run.items,
    answered: end.results.length,
    ...(counts ? {} : { byCode }),
    repeated: end.results.filter((r) => r.repeated).length,
    repeatedStillFailed: end.results.filter((r) => r.stillFailed).length,
    refused: end.results.filter((r) => isRefused(r.code)).length,
    notRun: end.notRun,
    stoppedBy: end.stoppedBy,
    seconds: Math.round(run.elapsedMs / 100) / 10,
  };
  return { summary, counts };
}

/**
 * The error a database error that stopped the run ends with (exit 3, after the summary), one
 * line, with a hint when the schema is missing; null when none stopped it.
 * @example replayStopError(Object.assign(new Error('x'), { code: 'ER_NO_SUCH_TABLE' }))?.message // 'replay stopped by a database error: x (schema missing: …)'
 */
export function replayStopError(error: unknown): EnvironmentError | null {
  if (!error) return null;
  if (error instanceof EnvironmentError) return error;
  const hint =
    (error as { code?: string }).code === 'ER_NO_SUCH_TABLE' ? ' (schema missing: run `fcctl db init --side fc`)' : '';
  return new EnvironmentError(
    `replay stopped by a database error: ${String((error as Error)?.message ?? error).split('\n')[0]}${hint}`,
    { cause: error },
  );
}
