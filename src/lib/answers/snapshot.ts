/**
 * The fc.canon.v1 snapshot of an FC `answer` row (SPEC §3–§4, seed 000 §3): exactly the ten
 * members `schId, appCode, code, submitterId, subjectId, status, values, answerNo, createTime,
 * updateTime`, canonicalized and hashed. No `intent` (that is per consumer, added by the sender).
 */
import { canonicalize } from '../canon/index.js';

/** The columns of an `answer` row the snapshot is built from, as mysql2 returns them. */
export interface AnswerSnapshotSource {
  /** BIGINT: a decimal string (`bigNumberStrings`); a safe JS integer is accepted too */
  readonly sch_id: string | number;
  readonly app_code: string;
  readonly code: string;
  readonly submitter_id: string | number;
  readonly subject_id: string | number | null;
  readonly status: string;
  /** the stored JSON text, embedded as it is: its numbers never pass through a JS number */
  readonly values_json: string;
  readonly answer_no: string | null;
  /** DATETIME string `yyyy-MM-dd HH:mm:ss` (`dateStrings`) */
  readonly create_time: string;
  readonly update_time: string | null;
}

/** The canonical snapshot text and its content hash (lowercase hex SHA-256). */
export interface AnswerSnapshot {
  readonly snapshotJson: string;
  readonly contentHash: string;
}

/** A row whose columns cannot form a snapshot; `column` names the culprit. */
export class AnswerSnapshotError extends Error {
  constructor(
    readonly column: string,
    message: string,
  ) {
    super(`answer.${column}: ${message}`);
    this.name = 'AnswerSnapshotError';
  }
}

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
// DATETIME text; a fraction (DATETIME(n) columns) is dropped, as Java's `HH:mm:ss` pattern does.
const DATETIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.\d+)?$/;

/** A BIGINT column as a JSON number literal, digits kept exactly. */
function integerLiteral(column: string, value: string | number): string {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new AnswerSnapshotError(column, `not an exact integer: ${value}`);
    return String(value);
  }
  if (!INTEGER.test(value)) throw new AnswerSnapshotError(column, `not an integer: ${JSON.stringify(value)}`);
  return value;
}

/**
 * Snapshot time format (seed 000 §3 rule 7): `2026-10-21 10:00:00` → `2026-10-21T10:00:00`.
 * Text in, text out: a DATETIME never goes through a JS Date (SPEC §1).
 */
export function snapshotTime(column: string, value: string): string {
  const m = DATETIME.exec(value);
  if (!m) throw new AnswerSnapshotError(column, `not a DATETIME: ${JSON.stringify(value)}`);
  return `${m[1]}T${m[2]}`;
}

const str = (value: string) => JSON.stringify(value);
const orNull = <T>(value: T | null, f: (v: T) => string) => (value === null ? 'null' : f(value));

/**
 * The snapshot document as JSON text, members in seed order, before canonicalization.
 * @example snapshotText(row).startsWith('{"schId":5,')
 */
export function snapshotText(row: AnswerSnapshotSource): string {
  // `values` must be exactly one JSON value, or its text could smuggle extra members into the
  // snapshot (`{}, "x": 1`). Checked on its own first; its text is then embedded unchanged — not
  // its canonical form, which would drop a `values.intent` member (only the root's is dropped).
  const values = canonicalize(row.values_json);
  if (!values.ok) {
    const e = values.error;
    throw new AnswerSnapshotError('values_json', `${e.code} at ${e.line}:${e.column}: ${e.message}`);
  }
  return (
    `{"schId":${integerLiteral('sch_id', row.sch_id)},` +
    `"appCode":${str(row.app_code)},` +
    `"code":${str(row.code)},` +
    `"submitterId":${integerLiteral('submitter_id', row.submitter_id)},` +
    `"subjectId":${orNull(row.subject_id, (v) => integerLiteral('subject_id', v))},` +
    `"status":${str(row.status)},` +
    `"values":${row.values_json.replace(/^\uFEFF/, '')},` +
    `"answerNo":${orNull(row.answer_no, str)},` +
    `"createTime":${str(snapshotTime('create_time', row.create_time))},` +
    `"updateTime":${orNull(row.update_time, (v) => str(snapshotTime('update_time', v)))}}`
  );
}

/**
 * Builds the fc.canon.v1 snapshot of an answer row: the canonical text (what `snapshot_json`
 * stores and the envelope carries) and its content hash.
 * @throws {AnswerSnapshotError} when a column cannot be represented (bad JSON, bad time, bad integer)
 * @example
 * const { snapshotJson, contentHash } = buildAnswerSnapshot(row);
 */
export function buildAnswerSnapshot(row: AnswerSnapshotSource): AnswerSnapshot {
  const result = canonicalize(snapshotText(row));
  if (!result.ok) {
    // Only `values` can still fail here: one level deeper than on its own (TOO_DEEP).
    throw new AnswerSnapshotError('values_json', `${result.error.code}: ${result.error.message}`);
  }
  return { snapshotJson: result.canonical.toString('utf8'), contentHash: result.hash };
}
