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

/** A digest recorded with a proof id ({@link retireSql.proofIdDigests}); null when the row names none. */
export interface ProofIdDigestDbRow {
  readonly proof_digest: string | null;
}

/** The newest RETIRED audit row of an answer, as {@link retireSql.retiredAudit} reads it. */
export interface RetiredAuditDbRow {
  readonly proof_id: string | null;
  readonly expected_json: string | null;
  readonly observed_json: string | null;
}

const LOCAL_COLUMNS =
  'sch_id, form_uuid, answer_revision, content_hash, is_deleted, create_time, retired_at, retire_proof_id, CAST(NOW() AS CHAR) AS sh_now';

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

  /**
   * The newest RETIRED audit row of `(answer_uuid, sch_id)` — the one the current retirement wrote
   * (its `expected_json.proofDigest` names the proof that retired, see {@link retirementDigest}).
   * A plain read (index `idx_audit_answer`), also in a dry run.
   */
  retiredAudit: (answerUuid: string, schId: string): Statement => ({
    sql: "SELECT proof_id, expected_json, observed_json FROM fc_reconcile_audit WHERE action = ? AND outcome = 'RETIRED' AND answer_uuid = ? AND sch_id = ? ORDER BY id DESC LIMIT 1",
    params: [AUDIT_ACTION, answerUuid, BigInt(schId)],
  }),

  /**
   * The proof digests recorded with a proof id by per-entry audit rows (answer not null), for
   * `proofIdRefusal` (decide.ts): at most a few distinct ones are needed to tell "used by another proof".
   * A plain read, also in a dry run (`proof_id` has no index: one scan per run).
   */
  proofIdDigests: (proofId: string): Statement => ({
    sql: "SELECT DISTINCT JSON_UNQUOTE(JSON_EXTRACT(expected_json, '$.proofDigest')) AS proof_digest FROM fc_reconcile_audit WHERE action = ? AND proof_id = ? AND answer_uuid IS NOT NULL LIMIT 3",
    params: [AUDIT_ACTION, proofId],
  }),

  /** One audit row (action `RETIRE_ABSENT`), time from the SH database's clock (never written by a dry run). */
  insertAudit: (a: AuditRow): Statement => ({
    sql:
      'INSERT INTO fc_reconcile_audit (action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json, create_time) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NOW())',
    params: [
      AUDIT_ACTION,
      a.outcome,
      cut(a.reason, 255),
      a.proofId,
      a.runId,
      cut(a.host, 255),
      a.schId === null ? null : BigInt(a.schId),
      a.answerUuid,
      JSON.stringify(a.expected),
      JSON.stringify(a.observed),
    ],
  }),
};

/**
 * An FC lookup row as the decision reads it.
 * @example fcSeen({ answer_uuid: 'a…', sch_id: '5', form_uuid: 'f…', answer_revision: '3', is_deleted: 0 }).revision // '3'
 */
export function fcSeen(r: FcLookupRow): FcAnswerSeen {
  return {
    answerUuid: r.answer_uuid,
    schId: String(r.sch_id),
    formUuid: r.form_uuid,
    revision: String(r.answer_revision),
    isDeleted: Number(r.is_deleted) !== 0,
  };
}

const HEX64 = /^[0-9a-f]{64}$/;

function jsonObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The digest of the proof that made a row's current retirement: `expected_json.proofDigest` of the
 * newest RETIRED audit row of the answer, when that row is of the row's `retire_proof_id` and its
 * `observed_json.retiredAt` is the row's `retired_at` (else that audit row is of an earlier
 * retirement, and this one was made or changed otherwise). Null when the row is not retired, there
 * is no such audit row, or it does not name a digest.
 * @example retirementDigest({ proof_id: 'rp-1', expected_json: '{"proofDigest":"ab…"}', observed_json: '{"retiredAt":"2026-11-30 02:00:00"}' }, '2026-11-30 02:00:00', 'rp-1') // 'ab…'
 */
export function retirementDigest(
  audit: RetiredAuditDbRow | undefined,
  retiredAt: string | null,
  retireProofId: string | null,
): string | null {
  if (audit === undefined || retiredAt === null || retireProofId === null || audit.proof_id !== retireProofId)
    return null;
  const observed = jsonObject(audit.observed_json);
  const at = observed?.['retiredAt'];
  if (typeof at !== 'string' || at.replace('T', ' ').replace(/\.\d+$/, '') !== retiredAt) return null;
  const digest = jsonObject(audit.expected_json)?.['proofDigest'];
  return typeof digest === 'string' && HEX64.test(digest) ? digest : null;
}

/**
 * A local row as the decision reads it (times cut to whole seconds, as the manifest writes them),
 * with the digest of the proof that retired it ({@link retirementDigest}; null when not retired).
 * @example localNowOf(row, null).createTime // '2026-10-01 08:00:00'
 */
export function localNowOf(r: LocalDbRow, retireProofDigest: string | null): LocalNow {
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
    retireProofDigest: r.retired_at === null ? null : retireProofDigest,
  };
}
