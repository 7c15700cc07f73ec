/**
 * `fcctl explain`'s statements (issue 29 §1): each one or two indexed lookups, named beside it and
 * pinned by test/explain/plans.test.ts; none writes, none locks. docs/commands/explain.md lists them.
 */
import { selectAnswerByUuid } from '../answers/sql.js';
import type { Statement } from '../db/statement.js';
import { GONE_WORKER, STALE_NOT_GONE } from '../service/sql.js';

/** Most rows a section lists: an answer has a few outbox rows per consumer and school, not thousands. */
export const SECTION_LIMIT = 200;
/** Rows read per list: one more than is shown, so a cut list says it was cut. */
const READ_LIMIT = SECTION_LIMIT + 1;

/** The command whose claims the outbox rows carry (`fcctl_worker.command`). */
const SEND_COMMAND = 'deliveries send';

const OUTBOX_COLUMNS =
  'event_id, event_type, consumer_app_key, CAST(consumer_school_id AS CHAR) AS consumer_school_id, ' +
  'CAST(grant_version AS CHAR) AS grant_version, form_uuid, CAST(answer_revision AS CHAR) AS answer_revision, is_deleted, ' +
  'content_hash, replay_op_digest, state, retry_count, last_error, next_retry_at, ' +
  'TIMESTAMPDIFF(SECOND, NOW(), next_retry_at) AS next_retry_in, broker_accepted_at, ' +
  'TIMESTAMPDIFF(SECOND, broker_accepted_at, NOW()) AS accepted_ago, consumer_applied_at, consumer_outcome, ' +
  'claim_owner, claim_expires_at, (claim_expires_at IS NOT NULL AND claim_expires_at >= NOW()) AS claim_live, create_time';

const PROJECTION_COLUMNS =
  'CAST(sch_id AS CHAR) AS sch_id, form_uuid, CAST(answer_revision AS CHAR) AS answer_revision, content_hash, is_deleted, ' +
  'link_state, CAST(apply_id AS CHAR) AS apply_id, flow_guid, conflict_flag, CAST(projection_version AS CHAR) AS projection_version, ' +
  'create_time, update_time, retired_at, retire_proof_id, last_repair_proof_id, last_repaired_at';

/** @example const { sql, params } = explainSql.outbox('a1…', { consumer: 'k', schId: '5' }) */
export const explainSql = {
  /** FC `answer` by uuid: uk_answer_uuid (const). */
  answer: (answerUuid: string): Statement => selectAnswerByUuid(answerUuid),

  /**
   * Every outbox row of the answer, newest revision first: uk_delivery_revision's prefix
   * `answer_uuid` (ref), narrowed by consumer and school when given. No snapshot read. The order
   * names the table's column: the bare name would be the CHAR alias, and "9" sorts above "10".
   */
  outbox: (answerUuid: string, only: { consumer?: string; schId?: string }): Statement => {
    const where = ['answer_uuid = ?'];
    const params: unknown[] = [answerUuid];
    if (only.consumer !== undefined) {
      where.push('consumer_app_key = ?');
      params.push(only.consumer);
    }
    if (only.schId !== undefined) {
      where.push('consumer_school_id = ?');
      params.push(BigInt(only.schId));
    }
    return {
      sql: `SELECT ${OUTBOX_COLUMNS} FROM answer_delivery WHERE ${where.join(' AND ')} ORDER BY answer_delivery.answer_revision DESC, consumer_app_key, consumer_school_id LIMIT ?`,
      params: [...params, READ_LIMIT],
    };
  },

  /** The row a DLQ message names: uk_delivery_event (const). */
  event: (eventId: string): Statement => ({
    sql: 'SELECT answer_uuid, consumer_app_key, CAST(consumer_school_id AS CHAR) AS consumer_school_id FROM answer_delivery WHERE event_id = ?',
    params: [eventId],
  }),

  /** The grants of the form for these schools: uk_grant's prefix (form_uuid, consumer_school_id), a range. */
  grants: (formUuid: string, schIds: readonly string[], consumer?: string): Statement => ({
    sql:
      'SELECT consumer_app_key, CAST(consumer_school_id AS CHAR) AS consumer_school_id, CAST(grant_version AS CHAR) AS grant_version, ' +
      'read_allowed, subscribe_allowed, push_allowed, revoked FROM form_consumer_grant WHERE form_uuid = ? AND consumer_school_id IN (?)' +
      (consumer === undefined ? '' : ' AND consumer_app_key = ?') +
      ' ORDER BY consumer_app_key, consumer_school_id LIMIT ?',
    params: [formUuid, schIds.map((s) => BigInt(s)), ...(consumer === undefined ? [] : [consumer]), READ_LIMIT],
  }),

  /** Is this a registered app key: uk_app_key (const). */
  appKey: (appKey: string): Statement => ({
    sql: 'SELECT app_key FROM application_info WHERE app_key = ?',
    params: [appKey],
  }),

  /**
   * The registry rows of the relay process that owns a claim, stale (missed three beats) or gone
   * (silent 20 intervals and an hour) (owner `host:pid:random`,
   * lib/db/claim-owner.ts): idx_worker_command's prefix `command` (ref), host and pid filtered.
   */
  claimHolders: (host: string, pid: number): Statement => ({
    sql:
      'SELECT worker_id, host, pid, state, CAST(last_beat_at AS CHAR) AS last_beat_at, ' +
      // stale and gone in `fcctl status`'s words (service/sql.ts): a gone row is not stale
      `${STALE_NOT_GONE} AS stale, ${GONE_WORKER} AS gone ` +
      'FROM fcctl_worker WHERE command = ? AND host = ? AND pid = ? ORDER BY last_beat_at DESC LIMIT 1',
    params: [SEND_COMMAND, host, pid],
  }),

  /** SH projections of the answer (one per school): uk_projection_answer's prefix `answer_uuid` (ref). */
  projections: (answerUuid: string, schId?: string): Statement => ({
    sql:
      `SELECT ${PROJECTION_COLUMNS} FROM fc_answer_projection WHERE answer_uuid = ?` +
      (schId === undefined ? '' : ' AND sch_id = ?') +
      ' ORDER BY sch_id LIMIT ?',
    params: [answerUuid, ...(schId === undefined ? [] : [BigInt(schId)]), SECTION_LIMIT],
  }),

  /** The audit rows of the answer, newest first: idx_audit_answer's prefix `answer_uuid` (ref). */
  audit: (answerUuid: string): Statement => ({
    sql:
      'SELECT action, outcome, reason, proof_id, run_id, host, CAST(sch_id AS CHAR) AS sch_id, create_time ' +
      'FROM fc_reconcile_audit WHERE answer_uuid = ? ORDER BY id DESC LIMIT ?',
    params: [answerUuid, READ_LIMIT],
  }),

  /**
   * The newest default-named `reconcile run --all` run that registered the pair: the runs from
   * `fcctl_reconcile_join` (one row per night, PRIMARY), each pair by uk_reconcile_task_pair (eq_ref).
   */
  lastReconcile: (schId: string, formUuid: string): Statement => ({
    sql:
      'SELECT t.run_id, CAST(t.sch_id AS CHAR) AS sch_id, t.form_uuid, t.state, CAST(t.finished_at AS CHAR) AS finished_at, t.result_json ' +
      'FROM fcctl_reconcile_join j JOIN fcctl_reconcile_task t ON t.run_id = j.run_id AND t.sch_id = ? AND t.form_uuid = ? ' +
      'ORDER BY j.joined_at DESC, j.run_id DESC LIMIT 1',
    params: [BigInt(schId), formUuid],
  }),

  /** One pair of a named run: uk_reconcile_task_pair (const). */
  reconcileTask: (runId: string, schId: string, formUuid: string): Statement => ({
    sql:
      'SELECT run_id, CAST(sch_id AS CHAR) AS sch_id, form_uuid, state, CAST(finished_at AS CHAR) AS finished_at, result_json ' +
      'FROM fcctl_reconcile_task WHERE run_id = ? AND sch_id = ? AND form_uuid = ?',
    params: [runId, BigInt(schId), formUuid],
  }),

  /** The business key of a projection's apply: service_apply PRIMARY (const). */
  serviceApplyById: (applyId: string): Statement => ({
    sql: 'SELECT biz_type, biz_id, flow_status FROM service_apply WHERE id = ?',
    params: [BigInt(applyId)],
  }),

  /** service_apply by business key: uk_service_apply_biz (const). */
  serviceApplyByKey: (bizType: string, bizId: string): Statement => ({
    sql: 'SELECT biz_type, biz_id, flow_status FROM service_apply WHERE biz_type = ? AND biz_id = ?',
    params: [bizType, bizId],
  }),

  /** The apply command of a business key: uk_apply_command_biz (const). */
  applyCommand: (bizType: string, bizId: string): Statement => ({
    sql:
      'SELECT CAST(id AS CHAR) AS id, biz_type, biz_id, state, last_branch, remote_status, remote_instance_id, retry_count, next_retry_at, ' +
      'TIMESTAMPDIFF(SECOND, NOW(), next_retry_at) AS next_retry_in, last_error, CAST(update_time AS CHAR) AS update_time ' +
      'FROM flow_apply_command WHERE biz_type = ? AND biz_id = ?',
    params: [bizType, bizId],
  }),
};
