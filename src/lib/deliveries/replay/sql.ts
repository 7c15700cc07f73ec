/**
 * SQL of `deliveries replay`, as `{sql, params}` builders (tested as text,
 * executed on the real database). The replay's writes are conditional on the generation read —
 * state, retry count and replay digest — so they can never land on a row that moved on.
 */
import type { Statement } from '../../db/statement.js';
import { NOT_TAKEN_OUTCOMES, type ReplayRequest, type ReplayWrite } from './decide.js';

const REPLAY_ROW_COLUMNS =
  'id, event_id, state, retry_count, replay_op_digest, answer_revision, grant_version, form_uuid, last_error, consumer_applied_at, consumer_outcome';

/** @example const { sql, params } = replaySql.newestRow(request, true) */
export const replaySql = {
  /**
   * The newest row (highest revision) of an answer for one consumer and school. `lock` adds
   * `FOR UPDATE`: inside the replay transaction no relay can claim or adjudicate it meanwhile.
   */
  newestRow: (
    r: Pick<ReplayRequest, 'answerUuid' | 'consumerAppKey' | 'consumerSchoolId'>,
    lock: boolean,
  ): Statement => ({
    sql:
      `SELECT ${REPLAY_ROW_COLUMNS} FROM answer_delivery WHERE answer_uuid = ? AND consumer_app_key = ? AND consumer_school_id = ? ` +
      `ORDER BY answer_revision DESC, id DESC LIMIT 1${lock ? ' FOR UPDATE' : ''}`,
    params: [r.answerUuid, r.consumerAppKey, r.consumerSchoolId],
  }),

  /** The grant of a row, read fresh (never cached). */
  grant: (formUuid: string, consumerSchoolId: string, consumerAppKey: string): Statement => ({
    sql:
      'SELECT form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked ' +
      'FROM form_consumer_grant WHERE form_uuid = ? AND consumer_school_id = ? AND consumer_app_key = ?',
    params: [formUuid, consumerSchoolId, consumerAppKey],
  }),

  /**
   * The answer recorded for an operation, with the event id, state and last error of its row as it
   * is now (a QUEUED row may have failed again since). `lock` reads the latest
   * committed version (`LOCK IN SHARE MODE`), as needed right after a duplicate-key insert.
   */
  recorded: (digest: string, lock: boolean): Statement => ({
    sql:
      'SELECT o.answer_uuid, o.consumer_app_key, o.consumer_school_id, o.expected_revision, o.code, o.reason, d.event_id, d.state AS row_state, d.last_error AS row_last_error ' +
      'FROM fcctl_replay_operation o LEFT JOIN answer_delivery d ON d.id = o.delivery_id ' +
      `WHERE o.op_digest = ?${lock ? ' LOCK IN SHARE MODE' : ''}`,
    params: [digest],
  }),

  /**
   * Claims the operation: the primary key on the digest makes a second call (or a concurrent
   * one, which waits on this row's lock) fail with a duplicate key; the answer is filled in by
   * {@link replaySql.recordAnswer} in the same transaction, so no one ever sees it empty.
   */
  claimOperation: (r: ReplayRequest): Statement => ({
    sql:
      'INSERT INTO fcctl_replay_operation (op_digest, answer_uuid, consumer_app_key, consumer_school_id, expected_revision, code, reason, delivery_id, create_time) ' +
      "VALUES (?, ?, ?, ?, ?, '', '', NULL, NOW())",
    params: [r.opDigest, r.answerUuid, r.consumerAppKey, r.consumerSchoolId, r.expectedRevision],
  }),

  recordAnswer: (digest: string, code: string, reason: string, deliveryId: string | null): Statement => ({
    sql: 'UPDATE fcctl_replay_operation SET code = ?, reason = ?, delivery_id = ? WHERE op_digest = ?',
    params: [code, reason, deliveryId, digest],
  }),

  /**
   * The row's write, conditional on the generation it was read at:
   * - `reset`: PENDING under the operation's digest, retry count 0, error, retry time, broker
   *   acceptance and claim cleared — a late confirm of the old generation then matches nothing
   *   in send's guard (claim owner, retry count, replay digest, state). Never a row the consumer
   *   reported taken in (a receipt but CONFLICT, DEFERRED, REJECTED), never a GRANT_REVOKED row.
   * - `revoke`: GRANT_REVOKED with the grant check's code; claim and retry time cleared.
   */
  write: (w: ReplayWrite): Statement => {
    const guard = 'id = ? AND state = ? AND retry_count = ? AND replay_op_digest <=> ?';
    const g = [w.from.id, w.from.state, w.from.retryCount, w.from.replayOpDigest];
    switch (w.kind) {
      case 'reset':
        return {
          sql:
            "UPDATE answer_delivery SET state = 'PENDING', retry_count = 0, replay_op_digest = ?, last_error = NULL, next_retry_at = NULL, " +
            'broker_accepted_at = NULL, claim_owner = NULL, claim_expires_at = NULL, update_time = NOW() ' +
            `WHERE ${guard} AND (consumer_applied_at IS NULL OR consumer_outcome IN (${NOT_TAKEN_OUTCOMES.map((o) => `'${o}'`).join(', ')})) AND state <> 'GRANT_REVOKED'`,
          params: [w.opDigest, ...g],
        };
      case 'revoke':
        return {
          sql:
            "UPDATE answer_delivery SET state = 'GRANT_REVOKED', last_error = ?, next_retry_at = NULL, claim_owner = NULL, claim_expires_at = NULL, update_time = NOW() " +
            `WHERE ${guard} AND state IN ('PENDING', 'FAILED', 'DEAD')`,
          params: [w.lastError, ...g],
        };
    }
  },
};
