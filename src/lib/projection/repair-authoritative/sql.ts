/**
 * SQL of `projection repair-authoritative`, as `{sql, params}` builders (tested as text, executed
 * on the real databases). Writes to `fc_answer_projection` touch only the snapshot columns
 * (`form_version`, `answer_revision`, `content_hash`, `is_deleted`, `snapshot_json`, and
 * `update_time`, the local row's modification time, as `retire-absent` keeps it),
 * the repair evidence (`last_repair_proof_id`, `last_repaired_at`),
 * `conflict_flag` (cleared: the authoritative snapshot settles the conflict) and
 * `projection_version` (+1, the consumer's optimistic lock) — never `biz_ext_json`, `intent_id`,
 * `apply_id`, `flow_guid`, `link_state`, `create_time` or the retirement columns of an existing row.
 */
import { ANSWER_COLUMNS, type AnswerRow } from '../../answers/sql.js';
import type { Statement } from '../../db/statement.js';
import type { AuthoritativeSnapshot, FreshGrant, RepairWrite } from './decide.js';

/** The audit action of a repair decision. */
export const AUDIT_ACTION = 'REPAIR_AUTHORITATIVE';

/** The projection columns a repair reads: no snapshot body, no business columns. */
const LOCAL_COLUMNS =
  'answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, link_state, conflict_flag, projection_version, retired_at, retire_proof_id';

/** The projection row as mysql2 returns {@link LOCAL_COLUMNS}. */
export interface LocalRowRaw {
  readonly answer_uuid: string;
  readonly sch_id: string | number;
  readonly form_uuid: string;
  readonly form_version: string | number;
  readonly answer_revision: string | number;
  readonly content_hash: string;
  readonly is_deleted: string | number;
  readonly link_state: string;
  readonly conflict_flag: string | number;
  readonly projection_version: string | number;
  readonly retired_at: string | null;
  readonly retire_proof_id: string | null;
}

/** An exact integer parameter: mysql2 writes a BigInt as its digits, never as a double. */
const big = (text: string) => BigInt(text);

/** @example const { sql, params } = projectionSql.readLocal('a1b2…', '5') */
export const projectionSql = {
  /** The local row of an answer at a school; a plain (consistent) read, no lock held. */
  readLocal: (answerUuid: string, schId: string): Statement => ({
    sql: `SELECT ${LOCAL_COLUMNS} FROM fc_answer_projection WHERE answer_uuid = ? AND sch_id = ?`,
    params: [answerUuid, big(schId)],
  }),

  /**
   * The repair of an existing row: one conditional UPDATE on the expected triple and the
   * answer/school/form, not retired, never to a lower revision. Matches 0 rows when the row moved
   * between the read and the write (the runner re-reads: LOCAL_CHANGED / LOCAL_AHEAD).
   */
  update: (
    auth: AuthoritativeSnapshot,
    expected: Extract<RepairWrite, { kind: 'update' }>['expected'],
    proofId: string,
  ): Statement => ({
    sql:
      'UPDATE fc_answer_projection SET form_version = ?, answer_revision = ?, content_hash = ?, is_deleted = ?, snapshot_json = ?, update_time = NOW(), ' +
      'conflict_flag = 0, last_repair_proof_id = ?, last_repaired_at = NOW(), projection_version = projection_version + 1 ' +
      'WHERE answer_uuid = ? AND sch_id = ? AND form_uuid = ? AND answer_revision = ? AND content_hash = ? AND is_deleted = ? ' +
      'AND retired_at IS NULL AND answer_revision <= ?',
    params: [
      big(auth.formVersion),
      big(auth.revision),
      auth.contentHash,
      auth.isDeleted ? 1 : 0,
      auth.snapshotJson,
      proofId,
      auth.answerUuid,
      big(auth.schId),
      auth.formUuid,
      big(expected.revision),
      expected.hash,
      expected.isDeleted ? 1 : 0,
      big(auth.revision),
    ],
  }),

  /**
   * The repair of a missing row: inserted `UNLINKED` (no intent, apply or flow; the consumer links
   * it), `projection_version` 1, created (and updated) now. A concurrent insert of the same answer and school
   * fails on `uk_projection_answer`; the runner rolls back and re-reads.
   */
  insert: (auth: AuthoritativeSnapshot, proofId: string): Statement => ({
    sql:
      'INSERT INTO fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, snapshot_json, ' +
      'link_state, conflict_flag, projection_version, create_time, update_time, last_repair_proof_id, last_repaired_at) ' +
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'UNLINKED', 0, 1, NOW(), NOW(), ?, NOW())",
    params: [
      auth.answerUuid,
      big(auth.schId),
      auth.formUuid,
      big(auth.formVersion),
      big(auth.revision),
      auth.contentHash,
      auth.isDeleted ? 1 : 0,
      auth.snapshotJson,
      proofId,
    ],
  }),
};

/** One `fc_reconcile_audit` row of a repair decision. */
export interface AuditRecord {
  readonly outcome: string;
  readonly reason: string;
  readonly proofId: string;
  readonly runId: string;
  readonly host: string;
  readonly schId: string;
  readonly answerUuid: string;
  readonly expectedJson: string;
  readonly observedJson: string;
}

/** Longest reason the audit table holds (`reason VARCHAR(255)`). */
export const MAX_AUDIT_REASON = 255;

/** @example const { sql, params } = auditSql.insert(record) */
export const auditSql = {
  insert: (r: AuditRecord): Statement => ({
    sql:
      'INSERT INTO fc_reconcile_audit (action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json, create_time) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NOW())',
    params: [
      AUDIT_ACTION,
      r.outcome,
      [...r.reason].slice(0, MAX_AUDIT_REASON).join(''),
      r.proofId,
      r.runId,
      r.host.slice(0, 255),
      big(r.schId),
      r.answerUuid,
      r.expectedJson,
      r.observedJson,
    ],
  }),
};

/** An FC answer row with the grant of its form to one consumer at one school (`g_*`, all null when there is none). */
export interface AnswerWithGrantRaw extends AnswerRow {
  readonly g_form_uuid: string | null;
  readonly g_consumer_school_id: string | null;
  readonly g_consumer_app_key: string | null;
  readonly g_grant_version: string | null;
  readonly g_read_allowed: number | null;
  readonly g_subscribe_allowed: number | null;
  readonly g_push_allowed: number | null;
  readonly g_revoked: number | null;
}

/**
 * The grant part of {@link AnswerWithGrantRaw}, or null when the join found none.
 * @example grantOf(row)?.grant_version
 */
export function grantOf(r: AnswerWithGrantRaw): FreshGrant | null {
  if (r.g_form_uuid === null) return null;
  return {
    form_uuid: r.g_form_uuid,
    consumer_school_id: String(r.g_consumer_school_id),
    consumer_app_key: r.g_consumer_app_key!,
    grant_version: String(r.g_grant_version),
    read_allowed: Number(r.g_read_allowed),
    subscribe_allowed: Number(r.g_subscribe_allowed),
    push_allowed: Number(r.g_push_allowed),
    revoked: Number(r.g_revoked),
  };
}

const GRANT_COLUMNS =
  'form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked';

/** @example const { sql, params } = fcSql.answerWithGrant(answerUuid, '5', '100100') */
export const fcSql = {
  /**
   * The answer and, in the same statement, the grant of its form to the consumer at the school:
   * both read fresh for every attempt (never cached), one round trip.
   */
  answerWithGrant: (answerUuid: string, consumerSchoolId: string, consumerAppKey: string): Statement => ({
    sql:
      `SELECT ${ANSWER_COLUMNS.split(', ')
        .map((c) => `a.${c}`)
        .join(', ')}, ${GRANT_COLUMNS.split(', ')
        .map((c) => `g.${c} AS g_${c}`)
        .join(', ')} ` +
      'FROM answer a LEFT JOIN form_consumer_grant g ON g.form_uuid = a.form_uuid AND g.consumer_school_id = ? AND g.consumer_app_key = ? ' +
      'WHERE a.answer_uuid = ?',
    params: [big(consumerSchoolId), consumerAppKey, answerUuid],
  }),
};
