/**
 * Statements on FC `answer` rows: builders return `{sql, params}` (tested as text); runners
 * execute them. BIGINT keys are bound as BigInt, so they reach the server as exact integer literals.
 */
import type { Statement } from '../db/statement.js';
import type { AnswerSnapshotSource } from './snapshot.js';

/** An `answer` row as mysql2 returns it: BIGINTs as decimal strings, DATETIMEs as strings. */
export interface AnswerRow extends AnswerSnapshotSource {
  readonly answer_uuid: string;
  readonly form_uuid: string;
  readonly form_version: number;
  readonly sch_id: string;
  readonly submitter_id: string;
  readonly subject_id: string | null;
  readonly is_deleted: number;
  readonly answer_revision: string;
}

/** Position in the manifest order `(sch_id, form_uuid, answer_uuid)` (index idx_answer_manifest). */
export interface AnswerKey {
  readonly schId: string;
  readonly formUuid: string;
  readonly answerUuid: string;
}

/** Never `SELECT *`, never the database id (SPEC §7: no database ids leave fcctl). */
export const ANSWER_COLUMNS =
  'answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, subject_id, status, ' +
  'values_json, answer_no, create_time, update_time, is_deleted, answer_revision';

/** An exact integer parameter: mysql2 writes a BigInt as its digits, never as a double. */
function bigint(text: string): bigint {
  if (!/^-?\d+$/.test(text)) throw new TypeError(`not an integer: ${JSON.stringify(text)}`);
  return BigInt(text);
}

/**
 * One answer by its uuid.
 * @example const { sql, params } = selectAnswerByUuid('a1b2…')
 */
export function selectAnswerByUuid(answerUuid: string): Statement {
  return { sql: `SELECT ${ANSWER_COLUMNS} FROM answer WHERE answer_uuid = ?`, params: [answerUuid] };
}

export interface AnswerPageOptions {
  /** only this school (and, with `formUuid`, only this form of it) */
  readonly schId?: string;
  readonly formUuid?: string;
  /** the last key of the previous page; absent for the first page */
  readonly after?: AnswerKey;
  readonly limit: number;
}

/**
 * A keyset page in `(sch_id, form_uuid, answer_uuid)` order. The comparison is spelled out
 * instead of a row constructor `(a,b,c) > (?,?,?)`, which MariaDB does not turn into a range scan.
 * @example selectAnswerPage({ schId: '5', formUuid: 'f…', after, limit: 201 })
 */
export function selectAnswerPage(options: AnswerPageOptions): Statement {
  if (!Number.isSafeInteger(options.limit) || options.limit < 1)
    throw new TypeError(`limit must be a positive integer, got ${options.limit}`);
  if (options.formUuid !== undefined && options.schId === undefined) throw new TypeError('formUuid needs schId');
  const where: string[] = [];
  const params: unknown[] = [];
  if (options.schId !== undefined) {
    where.push('sch_id = ?');
    params.push(bigint(options.schId));
  }
  if (options.formUuid !== undefined) {
    where.push('form_uuid = ?');
    params.push(options.formUuid);
  }
  const a = options.after;
  if (a) {
    if (options.formUuid !== undefined) {
      where.push('answer_uuid > ?');
      params.push(a.answerUuid);
    } else if (options.schId !== undefined) {
      where.push('(form_uuid > ? OR (form_uuid = ? AND answer_uuid > ?))');
      params.push(a.formUuid, a.formUuid, a.answerUuid);
    } else {
      where.push('(sch_id > ? OR (sch_id = ? AND (form_uuid > ? OR (form_uuid = ? AND answer_uuid > ?))))');
      params.push(bigint(a.schId), bigint(a.schId), a.formUuid, a.formUuid, a.answerUuid);
    }
  }
  return {
    sql:
      `SELECT ${ANSWER_COLUMNS} FROM answer` +
      (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
      ' ORDER BY sch_id, form_uuid, answer_uuid LIMIT ?',
    params: [...params, options.limit],
  };
}

/** The key of a row, to continue after it. */
export function answerKeyOf(row: Pick<AnswerRow, 'sch_id' | 'form_uuid' | 'answer_uuid'>): AnswerKey {
  return { schId: String(row.sch_id), formUuid: row.form_uuid, answerUuid: row.answer_uuid };
}
