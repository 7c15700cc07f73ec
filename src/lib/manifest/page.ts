/**
 * One manifest page (SPEC §7, seed 000 §8.1): `{rows, nextCursor, completed}`. Row shaping is
 * pure (database row in, manifest row out); `readManifestPage` runs the side's page query.
 */
import { normalizeDateTime } from '../time/datetime.js';
import { AnswerSnapshotError, buildAnswerSnapshot } from '../answers/snapshot.js';
import type { AnswerRow } from '../answers/sql.js';
import { EnvironmentError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { formatManifestLine, type ManifestRow, type ManifestSide } from './row.js';
import type { ShardRange } from './shard.js';
import { selectManifestBoundary, selectManifestPage } from './sql.js';

/** Default and largest page size (seed 000 §8.1). */
export const DEFAULT_PAGE_SIZE = 200;
export const MAX_PAGE_SIZE = 500;

/** A page: the rows, the cursor to continue with (null when completed), and whether it was the last. */
export interface ManifestPage {
  readonly rows: readonly ManifestRow[];
  readonly nextCursor: string | null;
  readonly completed: boolean;
}

/** A `fc_answer_projection` row as the SH page query returns it (mysql2, `dateStrings`, big numbers as strings). */
export interface ShManifestDbRow {
  readonly answer_uuid: string;
  readonly answer_revision: string | number;
  readonly content_hash: string;
  readonly is_deleted: number | string;
  readonly sch_id: string | number;
  readonly create_time: string | null;
  readonly retired_at: string | null;
}

function time(column: string, value: string | null): string | null {
  if (value === null) return null;
  const t = normalizeDateTime(value);
  if (t === null) throw new EnvironmentError(`${column} is not a DATETIME: ${JSON.stringify(value)}`);
  return t;
}

/**
 * A projection row as a manifest row (SH side).
 * @example shManifestRow({ answer_uuid: 'a…', answer_revision: '2', content_hash: 'f…', is_deleted: 0, sch_id: '5', create_time: '2026-10-21 08:00:00', retired_at: null })
 */
export function shManifestRow(r: ShManifestDbRow): ManifestRow {
  return {
    answerUuid: r.answer_uuid,
    revision: String(r.answer_revision),
    contentHash: r.content_hash,
    isDeleted: Number(r.is_deleted) !== 0,
    schId: String(r.sch_id),
    createTime: time('fc_answer_projection.create_time', r.create_time),
    retiredAt: time('fc_answer_projection.retired_at', r.retired_at),
  };
}

/**
 * An FC answer row as a manifest row: its fc.canon.v1 snapshot is built and hashed (the ten
 * members, times as `yyyy-MM-dd'T'HH:mm:ss`), exactly as the outbox and `repair-authoritative` do.
 * A row whose snapshot cannot be built stops the scan (exit 3, naming the answer): leaving it out
 * would make it look absent at FC, and absent rows are retire candidates.
 * @example fcManifestRow(answerRow).contentHash
 */
export function fcManifestRow(r: AnswerRow): ManifestRow {
  let contentHash: string;
  try {
    contentHash = buildAnswerSnapshot(r).contentHash;
  } catch (err) {
    if (err instanceof AnswerSnapshotError)
      throw new EnvironmentError(
        `FC answer ${r.answer_uuid} has no valid snapshot (${err.message}); fix the row and run again`,
        { cause: err },
      );
    throw err;
  }
  return {
    answerUuid: r.answer_uuid,
    revision: String(r.answer_revision),
    contentHash,
    isDeleted: Number(r.is_deleted) !== 0,
    schId: String(r.sch_id),
    createTime: time('answer.create_time', r.create_time),
  };
}

/** What a page read needs. */
export interface ReadPageOptions {
  readonly schId: string;
  readonly formUuid: string;
  readonly cursor: string | null;
  readonly size: number;
  readonly range?: ShardRange;
}

/**
 * Reads one page of a side: `size + 1` rows, so the extra row tells whether more follow; only
 * `size` rows are shaped (on FC, hashed). `nextCursor` is the last returned row's answer uuid.
 * @example const page = await readManifestPage(db, 'sh', { schId: '5', formUuid: 'f…', cursor: null, size: 200 })
 */
export async function readManifestPage(db: Db, side: ManifestSide, o: ReadPageOptions): Promise<ManifestPage> {
  const { rows, more } = await readManifestRange(db, side, { ...o, upTo: null });
  return { rows, nextCursor: more ? rows[rows.length - 1]!.answerUuid : null, completed: !more };
}

/**
 * A page within a key range `(cursor, upTo]` (`upTo` null: to the end): at most `size` rows, and
 * whether the range holds more after them (the `size + 1`-th row, read and not shaped).
 * @example const { rows, more } = await readManifestRange(db, 'fc', { schId: '5', formUuid, cursor, size: 500, upTo })
 */
export async function readManifestRange(
  db: Db,
  side: ManifestSide,
  o: ReadPageOptions & { readonly upTo: string | null },
): Promise<{ rows: ManifestRow[]; more: boolean }> {
  const { sql, params } = pageStatement(side, o);
  const raw = await db.query<ShManifestDbRow & AnswerRow>(sql, params);
  const more = raw.length > o.size;
  const kept = more ? raw.slice(0, o.size) : raw;
  return { rows: side === 'sh' ? kept.map(shManifestRow) : kept.map(fcManifestRow), more };
}

/** A page as manifest lines, ready to append: what `manifest scan` keeps of a page. */
export interface ManifestLines {
  /** the lines, each with its LF */
  readonly text: string;
  readonly rows: number;
  /** the answer uuid of the last row; null for no rows */
  readonly last: string | null;
  /** the range holds more rows after these */
  readonly more: boolean;
}

const PLAIN_DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const lineTime = (column: string, v: string | null) =>
  v === null ? 'null' : `"${PLAIN_DATETIME.test(v) ? v : time(column, v)}"`;

/**
 * A projection row straight to its manifest line — the bytes of
 * `formatManifestLine(shManifestRow(r))` without the intermediate object (a scan formats
 * millions of them).
 * @example shManifestLine(dbRow) === formatManifestLine(shManifestRow(dbRow)) // true
 */
export function shManifestLine(r: ShManifestDbRow): string {
  return (
    `{"answerUuid":${JSON.stringify(r.answer_uuid)},"revision":"${r.answer_revision}","contentHash":"${r.content_hash}",` +
    `"isDeleted":${Number(r.is_deleted) !== 0},"schId":"${r.sch_id}","createTime":${lineTime('fc_answer_projection.create_time', r.create_time)},` +
    `"retiredAt":${lineTime('fc_answer_projection.retired_at', r.retired_at)}}\n`
  );
}

/**
 * {@link readManifestRange} as lines: at most `size` rows of `(cursor, upTo]`, formatted.
 * @example const { text, rows, last, more } = await readManifestLines(db, 'sh', { schId: '5', formUuid, cursor, size: 500, upTo: null })
 */
export async function readManifestLines(
  db: Db,
  side: ManifestSide,
  o: ReadPageOptions & { readonly upTo: string | null },
): Promise<ManifestLines> {
  const { sql, params } = pageStatement(side, o);
  let text = '';
  let rows = 0;
  let last: string | null = null;
  let more = false;
  // Each row is formatted as it arrives and dropped: a page never exists as row objects, so a
  // long scan keeps little alive between collections.
  await eachRow<ShManifestDbRow & AnswerRow>(db, sql, params, (r) => {
    if (rows === o.size) {
      more = true;
      return;
    }
    text += side === 'sh' ? shManifestLine(r) : formatManifestLine(fcManifestRow(r));
    rows++;
    last = r.answer_uuid;
  });
  return { text, rows, last, more };
}

/**
 * Runs a SELECT and hands each row to `onRow` as the driver parses it (mysql2's row events on
 * a pooled connection), instead of collecting the result set. An exception from `onRow` is raised
 * once the statement has ended (the connection goes back to the pool clean); later rows are skipped.
 * A lost connection rejects (the connection is destroyed, not returned).
 */
function eachRow<T>(db: Db, sql: string, params: readonly unknown[], onRow: (row: T) => void): Promise<void> {
  // A lost or refused connection is the environment's (exit 3), and names the database.
  const mapped = (error: unknown) => {
    const e = error as { fatal?: boolean; code?: string; message?: string };
    return e.fatal
      ? new EnvironmentError(`lost the connection to the ${db.label}: ${e.code ?? e.message}`, { cause: error })
      : error;
  };
  return new Promise((resolve, reject) => {
    db.pool.pool.getConnection((connectError, conn) => {
      if (connectError) return reject(mapped(connectError));
      let failed: { error: unknown } | null = null;
      let settled = false;
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        conn.removeListener('error', settle);
        if (error !== undefined) {
          conn.destroy();
          reject(mapped(error));
          return;
        }
        conn.release();
        if (failed) reject(failed.error);
        else resolve();
      };
      // mysql2 tells a query without a callback nothing when its connection dies (or was already
      // dead when taken from the pool): only the connection hears it, so listen there too.
      conn.on('error', settle);
      const q = conn.query(sql, params as unknown[]);
      q.on('result', (row) => {
        if (failed) return;
        try {
          onRow(row as T);
        } catch (err) {
          failed = { error: err };
        }
      });
      q.on('error', (err: Error) => settle(err));
      q.on('end', () => settle());
    });
  });
}

/**
 * The last key of the next full page after `cursor` when more rows follow it, else null (the rest
 * fits one page); see {@link selectManifestBoundary}.
 * @example const upTo = await readPageBoundary(db, 'sh', { schId: '5', formUuid, cursor: null, size: 500 })
 */
export async function readPageBoundary(db: Db, side: ManifestSide, o: ReadPageOptions): Promise<string | null> {
  const { sql, params } = selectManifestBoundary(side, {
    schId: o.schId,
    formUuid: o.formUuid,
    after: o.cursor,
    limit: o.size,
    ...(o.range ? { range: o.range } : {}),
  });
  const keys = await db.query<{ answer_uuid: string }>(sql, params);
  return keys.length === 2 ? keys[0]!.answer_uuid : null;
}

/** One page's statement: `size + 1` rows after the cursor, so the reader knows whether more follow. */
function pageStatement(side: ManifestSide, o: ReadPageOptions & { readonly upTo: string | null }) {
  if (!Number.isSafeInteger(o.size) || o.size < 1 || o.size > MAX_PAGE_SIZE)
    throw new TypeError(`size must be 1 to ${MAX_PAGE_SIZE}, got ${o.size}`);
  return selectManifestPage(side, {
    schId: o.schId,
    formUuid: o.formUuid,
    after: o.cursor,
    limit: o.size + 1,
    upTo: o.upTo,
    ...(o.range ? { range: o.range } : {}),
  });
}
