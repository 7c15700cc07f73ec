/** Delivery states (SPEC §5, seed 000 §7.1). */
export const DELIVERY_STATES = ['PENDING', 'BROKER_ACCEPTED', 'FAILED', 'DEAD', 'GRANT_REVOKED'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Failure reasons fcctl writes to `last_error` (stable codes; the text after ':' is detail). */
export type FailReason =
  | 'NO_ROUTE'
  | 'NACK'
  | 'CONFIRM_TIMEOUT'
  | 'CHANNEL_CLOSED'
  | 'PUBLISH_ERROR'
  /** the broker closed the channel over this message alone (a channel exception), by reply code */
  | 'ACCESS_REFUSED'
  | 'MESSAGE_TOO_LARGE'
  | 'PRECONDITION_FAILED'
  | 'NOT_FOUND'
  | 'RESOURCE_LOCKED'
  | 'BROKER_REFUSED'
  /** a FAILED row already at or over the retry budget (the budget was lowered): DEAD, not sent */
  | 'RETRY_BUDGET_SPENT'
  | 'SOURCE_MISMATCH'
  | 'REGISTRY_MISMATCH'
  | 'REGISTRY_UNREACHABLE'
  | 'INVALID_ROUTING_KEY'
  | 'INVALID_EVENT'
  | 'SNAPSHOT_INVALID'
  | 'SNAPSHOT_HASH_MISMATCH';

/** An `answer_delivery` row as fcctl reads it: BIGINTs as decimal strings, times as strings. */
export interface DeliveryRow {
  readonly id: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly source_app_key: string;
  readonly consumer_app_key: string;
  readonly consumer_school_id: string;
  readonly grant_version: string;
  readonly form_uuid: string;
  readonly form_version: number | string;
  readonly answer_uuid: string;
  readonly answer_revision: string;
  readonly is_deleted: number;
  readonly content_hash: string;
  readonly occurred_at: string;
  /** the stored bytes as read by `send` (a Buffer: never decoded), or text */
  readonly snapshot_json: Buffer | string;
  readonly state: DeliveryState;
  readonly retry_count: number;
  readonly replay_op_digest: string | null;
  /** milliseconds since `create_time` when the row was read (`send`'s claim; absent elsewhere) */
  readonly age_ms?: number | string | null;
}

/** What identifies one attempt: a write for another generation must change nothing (SPEC §2). */
export interface Generation {
  readonly id: string;
  readonly retryCount: number;
  readonly replayOpDigest: string | null;
}

export function generationOf(row: DeliveryRow): Generation {
  return { id: String(row.id), retryCount: Number(row.retry_count), replayOpDigest: row.replay_op_digest };
}

/** The registry row found by the configured app code (seed 004 `getAppByCode`). */
export interface RegistryRow {
  readonly id: string;
  readonly app_code: string;
  readonly app_key: string;
}

/** A `form_consumer_grant` row, read fresh for each batch. */
export interface GrantRow {
  readonly form_uuid: string;
  readonly consumer_school_id: string;
  readonly consumer_app_key: string;
  readonly grant_version: string;
  readonly read_allowed: number;
  readonly subscribe_allowed: number;
  readonly push_allowed: number;
  readonly revoked: number;
}

export function grantKey(formUuid: string, schoolId: string | number, appKey: string): string {
  return `${formUuid}\u0000${schoolId}\u0000${appKey}`;
}

/** A FAILED or DEAD row as `deliveries failed` and `deliveries scan` list it. */
export type FailedRow = {
  readonly eventId: string;
  readonly state: string;
  readonly answerUuid: string;
  readonly answerRevision: string;
  readonly retryCount: number;
  readonly nextRetryAt: string | null;
  readonly lastError: string | null;
  readonly updateTime: string | null;
};

/** The columns a {@link FailedRow} is read from, untouched. */
export interface FailedRowRaw {
  readonly event_id: string;
  readonly state: string;
  readonly answer_uuid: string;
  readonly answer_revision: string | number;
  readonly retry_count: number;
  readonly next_retry_at: string | null;
  readonly last_error: string | null;
  readonly update_time: string | null;
}

/** @example failedRowOf(raw).answerRevision // '2' */
export function failedRowOf(r: FailedRowRaw): FailedRow {
  return {
    eventId: r.event_id,
    state: r.state,
    answerUuid: r.answer_uuid,
    answerRevision: String(r.answer_revision),
    retryCount: Number(r.retry_count),
    nextRetryAt: r.next_retry_at,
    lastError: r.last_error,
    updateTime: r.update_time,
  };
}
