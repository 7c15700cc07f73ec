/**
 * SQL of `apply-command requeue`: the command read and its guarded write, the operation rows
 * (`fcctl_requeue_operation`) and the audit row. Builders only; `run.ts` executes them.
 */
import type { Statement } from '../../db/statement.js';
import { type CommandGeneration, cutText } from '../types.js';

/** The audit action of every requeue decision (`fc_reconcile_audit.action`). */
export const REQUEUE_AUDIT_ACTION = 'APPLY_REQUEUE';

/** One `fc_reconcile_audit` row of a requeue decision (no school or answer: a command has neither). */
export interface RequeueAuditRow {
  readonly outcome: string;
  /** `fc_reconcile_audit.reason` is VARCHAR(255): cut to fit */
  readonly reason: string;
  /** the operation id: what authorised the change, as a proof id does for a repair */
  readonly operationId: string;
  readonly runId: string;
  readonly host: string;
  readonly expected: unknown;
  readonly observed: unknown;
}

const REQUEUE_ROW_COLUMNS =
  'id, biz_type, biz_id, state, retry_count, attempt, request_token, last_error, last_branch, remote_status, remote_instance_id, claim_owner, ' +
  'CAST(claim_expires_at AS CHAR) AS claim_expires_at, (claim_owner IS NOT NULL AND claim_expires_at IS NOT NULL AND claim_expires_at >= NOW()) AS claim_live';

/**
 * SQL of `apply-command requeue`. The write is conditional on the generation read (state, retry
 * count, attempt, request token) and on no live claim, inside a transaction that holds the row.
 * @example const { sql, params } = requeueSql.command({ bizType: 'honor_apply', bizId: 'A-1' }, true)
 */
export const requeueSql = {
  /** The command of a business key; `lock` adds `FOR UPDATE` (no resolver can claim it meanwhile). */
  command: (key: { bizType: string; bizId: string }, lock: boolean): Statement => ({
    sql: `SELECT ${REQUEUE_ROW_COLUMNS} FROM flow_apply_command WHERE biz_type = ? AND biz_id = ?${lock ? ' FOR UPDATE' : ''}`,
    params: [key.bizType, key.bizId],
  }),

  /** One page of DEAD commands (of one reason code when given), by id. No lock: each is re-read locked. */
  deadKeys: (reason: string | null, afterId: string, limit: number): Statement => ({
    sql:
      "SELECT id, biz_type, biz_id FROM flow_apply_command WHERE state = 'DEAD'" +
      `${reason === null ? '' : " AND SUBSTRING_INDEX(last_error, ':', 1) = ?"} AND id > ? ORDER BY id LIMIT ?`,
    params: [...(reason === null ? [] : [reason]), afterId, limit],
  }),

  /**
   * Every answer recorded for an operation, by command id (as `--dead` selects them; answers of
   * concurrent transactions are recorded in the order they finished), keys without a command last.
   */
  recorded: (opDigest: string): Statement => ({
    sql: "SELECT biz_type, biz_id, selector, selector_sha256, code, reason, command_id FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type <> '' ORDER BY command_id IS NULL, command_id, id",
    params: [opDigest],
  }),

  /**
   * Binds the operation id to its selection before any command is touched: the header row (empty
   * key, which no command has) in its own autocommitted statement. A duplicate key means the id
   * is bound already; {@link requeueSql.header} says to which selection.
   */
  bindOperation: (opDigest: string, selector: { text: string; sha256: string }): Statement => ({
    sql:
      'INSERT INTO fcctl_requeue_operation (op_digest, biz_type, biz_id, selector, selector_sha256, code, reason, command_id, create_time) ' +
      "VALUES (?, '', '', ?, ?, 'OPERATION', '', NULL, NOW())",
    params: [opDigest, cutText(selector.text, 255), selector.sha256],
  }),

  /** The operation's header: its selection and whether it completed (null: not yet). */
  header: (opDigest: string): Statement => ({
    sql: "SELECT selector, selector_sha256, CAST(completed_at AS CHAR) AS completed_at FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type = '' AND biz_id = ''",
    params: [opDigest],
  }),

  /** Every command of the operation has a final answer: a re-run only repeats them. */
  completeOperation: (opDigest: string): Statement => ({
    sql: "UPDATE fcctl_requeue_operation SET completed_at = NOW() WHERE op_digest = ? AND biz_type = '' AND biz_id = '' AND completed_at IS NULL",
    params: [opDigest],
  }),

  /** A temporary answer (CLAIMED) is not kept: the same operation tries that command again. */
  forgetAnswer: (opDigest: string, key: { bizType: string; bizId: string }): Statement => ({
    sql: 'DELETE FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type = ? AND biz_id = ?',
    params: [opDigest, key.bizType, key.bizId],
  }),

  /** The answer recorded for one key, read after a duplicate key: the latest committed version. */
  recordedOne: (opDigest: string, key: { bizType: string; bizId: string }): Statement => ({
    sql: 'SELECT biz_type, biz_id, selector, selector_sha256, code, reason, command_id FROM fcctl_requeue_operation WHERE op_digest = ? AND biz_type = ? AND biz_id = ? LOCK IN SHARE MODE',
    params: [opDigest, key.bizType, key.bizId],
  }),

  /**
   * Claims the operation for one key: the unique key makes a second call (or a concurrent one,
   * which waits on this row's lock) fail with a duplicate key; the answer is filled in by
   * {@link requeueSql.recordAnswer} in the same transaction, so no one ever sees it empty.
   */
  claimOperation: (
    opDigest: string,
    key: { bizType: string; bizId: string },
    selector: { text: string; sha256: string },
  ): Statement => ({
    sql:
      'INSERT INTO fcctl_requeue_operation (op_digest, biz_type, biz_id, selector, selector_sha256, code, reason, command_id, create_time) ' +
      "VALUES (?, ?, ?, ?, ?, '', '', NULL, NOW())",
    params: [opDigest, key.bizType, key.bizId, cutText(selector.text, 255), selector.sha256],
  }),

  recordAnswer: (
    opDigest: string,
    key: { bizType: string; bizId: string },
    code: string,
    reason: string,
    commandId: string | null,
  ): Statement => ({
    sql: 'UPDATE fcctl_requeue_operation SET code = ?, reason = ?, command_id = ? WHERE op_digest = ? AND biz_type = ? AND biz_id = ?',
    params: [code, reason, commandId, opDigest, key.bizType, key.bizId],
  }),

  /**
   * Back to UNKNOWN: retry budget reset, due now, claim cleared; token and attempt untouched (the
   * lookup still comes first). A resolver still holding the old generation in flight has its
   * write turned away by its own guard (state and retry count moved on).
   */
  requeue: (w: { from: CommandGeneration; lastError: string }): Statement => ({
    sql:
      "UPDATE flow_apply_command SET state = 'UNKNOWN', retry_count = 0, next_retry_at = NULL, last_error = ?, claim_owner = NULL, claim_expires_at = NULL, update_time = NOW() " +
      'WHERE id = ? AND state = ? AND retry_count = ? AND attempt = ? AND request_token = ? AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW())',
    params: [w.lastError, w.from.id, w.from.state, w.from.retryCount, w.from.attempt, w.from.requestToken],
  }),

  /** One audit row (action `APPLY_REQUEUE`), time from the SH database's clock. */
  audit: (a: RequeueAuditRow): Statement => ({
    sql:
      'INSERT INTO fc_reconcile_audit (action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json, create_time) ' +
      'VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, NOW())',
    params: [
      REQUEUE_AUDIT_ACTION,
      a.outcome,
      cutText(a.reason, 255),
      a.operationId,
      a.runId,
      cutText(a.host, 255),
      JSON.stringify(a.expected),
      JSON.stringify(a.observed),
    ],
  }),
};
