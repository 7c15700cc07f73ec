/**
 * SQL of `retire-absent`, as `{sql, params}` builders (tested as text, executed on the real
 * databases). BIGINTs are bound as BigInt (exact). The one write to `fc_answer_projection` is a
 * conditional UPDATE of the retirement columns — never a DELETE, never `answer_revision`.
 */
import type { Statement } from '../db/statement.js';
import type { FcAnswerSeen, LocalNow, RetireEntry } from './decide.js';

/** The audit action of every retire decision. */
export const AUDIT_ACTION = 'RETIRE_ABSENT';

/** An `answer` row as the FC lookup reads it (mysql2: BIGINTs as strings). */
export interface FcLookupRow {
  readonly answer_uuid: string;
  readonly sch_id: string | number;
  readonly form_uuid: string;
  readonly answer_revision: string | number;
  readonly is_deleted: number | string;
}

/** A projection row as the local read returns it, with the SH database's clock. */
export interface LocalDbRow {
  readonly sch_id: string | number;
  readonly form_uuid: string;
  readonly answer_revision: string | number;
  readonly content_hash: string;
  readonly is_deleted: number | string;
  readonly create_time: string | null;
  readonly retired_at: string | null;
  readonly retire_proof_id: string | null;
  /** `CAST(NOW() AS CHAR)` of the SH database, when the row was read */
  readonly sh_now: string;
}

/** What the retirement UPDATE is conditional on: the entry's expected values and the task start. */
export interface RetireGuard {
  readonly entry: RetireEntry;
  readonly taskStart: string;
  readonly proofId: string;
  /** the SH database's time to record as `retired_at` (`yyyy-MM-dd HH:mm:ss`) */
  readonly retiredAt: string;
}

/**
 * One `fc_reconcile_audit` row: an entry's decision, or (answer null) a proof refused as a whole,
 * whose id and school are null when they cannot be read from it.
 */
export interface AuditRow {
  readonly outcome: 'RETIRED' | 'ALREADY_RETIRED' | 'REFUSED';
  /** `CODE: detail` for a refusal, the detail otherwise (VARCHAR(255): cut to fit) */
  readonly reason: string;
  readonly proofId: string | null;
  readonly runId: string;
  readonly host: string;
  readonly schId: string | null;
  readonly answerUuid: string | null;
  readonly expected: unknown;
  readonly observed: unknown;
}

const LOCAL_COLUMNS = 'sch_id, form_uuid, answer_revision, content_hash, is_deleted, create_time, retired_at, retire_proof_id, CAST(NOW() AS CHAR) AS sh_now';

/**
 * Cuts text to at most `n` characters (code points), marking a cut with `…`.
 * @example cut('abcdef', 4) // 'abc…'
 */
export function cut(text: string, n: number): string {
  const chars = [...text];
  return chars.length <= n ? text : `${chars.slice(0, n - 1).join('')}…`;
}

/** @example const { sql, params } = retireSql.fcAnswer('a1b2…') */
export const retireSql = {
  /**
   * The fresh FC lookup: the answer by its uuid (unique at FC), whatever its school or form, so an
   * answer that came back anywhere counts as present. Light columns only, no values document.
   */
  fcAnswer: (answerUuid: string): Statement => ({
    sql: 'SELECT answer_uuid, sch_id, form_uuid, answer_revision, is_deleted FROM answer WHERE answer_uuid = ?',
    params: [answerUuid],
  }),

  /** The same lookup for many answers at once (`retire-absent prove`). */
  fcAnswers: (answerUuids: readonly string[]): Statement => {
    if (answerUuids.length === 0) throw new TypeError('fcAnswers needs at least one answer uuid');
    return {
      sql: `SELECT answer_uuid, sch_id, form_uuid, answer_revision, is_deleted FROM answer WHERE answer_uuid IN (${answerUuids.map(() => '?').join(', ')})`,
      params: [...answerUuids],
    };
  },

  /** The local row of `(answer_uuid, sch_id)`; `lock` adds `FOR UPDATE` (inside the retire transaction). */
  localRow: (answerUuid: string, schId: string, lock: boolean): Statement => ({
    sql: `SELECT ${LOCAL_COLUMNS} FROM fc_answer_projection WHERE answer_uuid = ? AND sch_id = ?${lock ? ' FOR UPDATE' : ''}`,
    params: [answerUuid, BigInt(schId)],
  }),

  /**
   * Marks a row retired: `retired_at`, `retire_proof_id`, and `projection_version + 1` (seed 000
   * §8.1's optimistic lock: a writer that read the row before the retirement then fails its own
   * conditional write instead of overwriting it), `update_time`. Conditional on the school, form,
   * revision, hash, isDeleted and createTime the proof expects, createTime not after the task
   * start, and not retired — so it can only land on the row the decision was made about.
   */
  markRetired: (g: RetireGuard): Statement => ({
    sql:
      'UPDATE fc_answer_projection SET retired_at = ?, retire_proof_id = ?, projection_version = projection_version + 1, update_time = ? ' +
      'WHERE answer_uuid = ? AND sch_id = ? AND form_uuid = ? AND answer_revision = ? AND content_hash = ? AND is_deleted = ? ' +
      'AND create_time = ? AND create_time <= ? AND retired_at IS NULL',
    params: [
      g.retiredAt,
      g.proofId,
      g.retiredAt,
      g.entry.answerUuid,
      BigInt(g.entry.schId),
      g.entry.formUuid,
      BigInt(g.entry.expectedRevision),
      g.entry.expectedHash,
      g.entry.expectedIsDeleted ? 1 : 0,
      g.entry.localCreateTime,
      g.taskStart,
    ],
  }),

  /** One audit row (action `RETIRE_ABSENT`), time from the SH database's clock (never written by a dry run). */
  insertAudit: (a: AuditRow): Statement => ({
    sql:
      'INSERT INTO fc_reconcile_audit (action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json, create_time) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NOW())',
    params: [AUDIT_ACTION, a.outcome, cut(a.reason, 255), a.proofId, a.runId, cut(a.host, 255), a.schId === null ? null : BigInt(a.schId), a.answerUuid, JSON.stringify(a.expected), JSON.stringify(a.observed)],
  }),
};

/**
 * An FC lookup row as the decision reads it.
 * @example fcSeen({ answer_uuid: 'a…', sch_id: '5', form_uuid: 'f…', answer_revision: '3', is_deleted: 0 }).revision // '3'
 */
export function fcSeen(r: FcLookupRow): FcAnswerSeen {
  return { answerUuid: r.answer_uuid, schId: String(r.sch_id), formUuid: r.form_uuid, revision: String(r.answer_revision), isDeleted: Number(r.is_deleted) !== 0 };
}

/**
 * A local row as the decision reads it (times cut to whole seconds, as the manifest writes them).
 * @example localNowOf(row).createTime // '2026-10-01 08:00:00'
 */
export function localNowOf(r: LocalDbRow): LocalNow {
  const t = (v: string | null) => (v === null ? null : v.replace('T', ' ').replace(/\.\d+$/, ''));
  return {
    schId: String(r.sch_id),
    formUuid: r.form_uuid,
    revision: String(r.answer_revision),
    contentHash: r.content_hash,
    isDeleted: Number(r.is_deleted) !== 0,
    createTime: t(r.create_time),
    retiredAt: t(r.retired_at),
    retireProofId: r.retire_proof_id,
  };
}
