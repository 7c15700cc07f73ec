/**
 * `deliveries failed` and `deliveries replay --failed`, the pure parts: how a listed row becomes a
 * replay request (the columns `deliveries replay --from` reads), the operation id an incident
 * prefix gives each row, and the checks of `--after`, `--operation-prefix`, `--state`, `--reason`.
 */
import { LineError } from '../../files/record-file.js';
import { idProblem, MAX_ID_LENGTH } from '../../ids.js';
import type { FailReason, FailedRow } from '../types.js';
import type { FailedFilter } from './sql.js';

/**
 * A listed row with its row id (the keyset cursor of the next page is the last row's id) and
 * whether a newer revision of the same answer superseded it (then replay answers REVISION_MISMATCH).
 */
export type ListedRow = FailedRow & { readonly id: string; readonly superseded: boolean };

/** `answer_delivery.event_id` is VARCHAR(36). */
const EVENT_ID_WIDTH = 36;
/** Longest `--operation-prefix`: `P:<eventId>` must stay an operation id (≤ 128 characters). */
export const MAX_OPERATION_PREFIX_LENGTH = MAX_ID_LENGTH - 1 - EVENT_ID_WIDTH;

/**
 * The operation id of a row replayed under an incident prefix: `P:<eventId>`, the same in
 * `deliveries failed --operation-prefix P` and `deliveries replay --failed --operation-prefix P`.
 * @example failedOperationId('INC-42', '0b1c…') // 'INC-42:0b1c…'
 */
export function failedOperationId(prefix: string, eventId: string): string {
  return `${prefix}:${eventId}`;
}

/**
 * A listed row as a line of a replay input file (`deliveries replay --from`): the members replay
 * reads first (`answerUuid`, `expectedRevision` = the row's revision, `operationId` when a prefix is
 * given), then what a responder reads and replay ignores.
 * @example replayInputRow(row, 'INC-42').operationId // 'INC-42:<eventId>'
 */
export function replayInputRow(row: ListedRow, prefix: string | null): Record<string, unknown> {
  return {
    answerUuid: row.answerUuid,
    expectedRevision: row.answerRevision,
    ...(prefix === null ? {} : { operationId: failedOperationId(prefix, row.eventId) }),
    eventId: row.eventId,
    state: row.state,
    retryCount: row.retryCount,
    nextRetryAt: row.nextRetryAt,
    lastError: row.lastError,
    updateTime: row.updateTime,
    id: row.id,
  };
}

/** The member names of {@link replayInputRow}, in order (the CSV header). */
export function replayInputColumns(prefix: string | null): string[] {
  return [
    'answerUuid',
    'expectedRevision',
    ...(prefix === null ? [] : ['operationId']),
    'eventId',
    'state',
    'retryCount',
    'nextRetryAt',
    'lastError',
    'updateTime',
    'id',
  ];
}

/**
 * Checks `--after`: a row id, a whole number ≥ 1 without leading zeros (kept as text: a BIGINT).
 * @example checkAfter('812') // '812'
 */
export function checkAfter(value: string): string {
  if (!/^[1-9]\d{0,18}$/.test(value))
    throw new LineError(
      0,
      `--after ${JSON.stringify(value.slice(0, 40))} is not a row id (a whole number ≥ 1, the nextCursor of the previous page)`,
    );
  return value;
}

/**
 * Checks `--operation-prefix`: tidy text of 1–{@link MAX_OPERATION_PREFIX_LENGTH} characters, so
 * that `P:<eventId>` is a valid operation id.
 * @example checkOperationPrefix('INC-42') // 'INC-42'
 */
export function checkOperationPrefix(value: unknown): string {
  const problem = idProblem(value, MAX_OPERATION_PREFIX_LENGTH);
  if (problem !== null) throw new LineError(0, `--operation-prefix ${problem}`);
  return value as string;
}

/** Every code fcctl writes before the ':' of a delivery's `last_error` (types.ts `FailReason`). */
const FAIL_REASONS: Readonly<Record<FailReason, true>> = {
  NO_ROUTE: true,
  NACK: true,
  CONFIRM_TIMEOUT: true,
  CHANNEL_CLOSED: true,
  PUBLISH_ERROR: true,
  ACCESS_REFUSED: true,
  MESSAGE_TOO_LARGE: true,
  PRECONDITION_FAILED: true,
  NOT_FOUND: true,
  RESOURCE_LOCKED: true,
  BROKER_REFUSED: true,
  RETRY_BUDGET_SPENT: true,
  SOURCE_MISMATCH: true,
  REGISTRY_MISMATCH: true,
  REGISTRY_UNREACHABLE: true,
  INVALID_ROUTING_KEY: true,
  INVALID_EVENT: true,
  SNAPSHOT_INVALID: true,
  SNAPSHOT_HASH_MISMATCH: true,
};

/**
 * The `--state`/`--reason` filter: a state FAILED or DEAD, a reason one of the codes `send` writes.
 * @example failedFilterOf({ state: 'DEAD', reason: 'NO_ROUTE' }) // { state: 'DEAD', reason: 'NO_ROUTE' }
 */
export function failedFilterOf(f: {
  readonly state?: string | undefined;
  readonly reason?: string | undefined;
}): FailedFilter {
  if (f.state !== undefined && f.state !== 'FAILED' && f.state !== 'DEAD')
    throw new LineError(0, `--state ${JSON.stringify(f.state.slice(0, 40))} is not FAILED or DEAD`);
  if (f.reason !== undefined && !Object.hasOwn(FAIL_REASONS, f.reason)) {
    throw new LineError(
      0,
      `--reason ${JSON.stringify(f.reason.slice(0, 80))} is not a reason code send writes (${Object.keys(FAIL_REASONS).join(', ')})`,
    );
  }
  return { state: (f.state as FailedFilter['state'] | undefined) ?? null, reason: f.reason ?? null };
}
