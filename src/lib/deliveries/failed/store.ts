/** store.ts: this verb's executed statements (from sql.ts), rows mapped; read-only, so no run.ts. */
/**
 * `deliveries failed` (seed 000 §8 `failedPage`): one page of the FAILED and DEAD rows of one
 * consumer and school, newest first, for a responder deciding what to replay; and the whole
 * selection `deliveries replay --failed` replays. Read-only.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import { failedRowOf, type FailedRowRaw } from '../types.js';
import type { ListedRow } from './decide.js';
import { ALL_FAILED, type FailedFilter, type FailedRows, failedSql, type PageStart } from './sql.js';

/** Largest page `deliveries failed` serves. */
export const MAX_FAILED_PAGE_SIZE = 200;

export interface FailedPage {
  /** the page number (offset paging), or null when the page started after a cursor */
  readonly page: number | null;
  /** the cursor the page started after, or null */
  readonly after: string | null;
  readonly size: number;
  readonly rows: readonly ListedRow[];
  /** a later page holds more rows */
  readonly hasMore: boolean;
  /** `--after` of the next page (the last row's id), null when none follows */
  readonly nextCursor: string | null;
  /** FAILED and DEAD rows of this consumer and school (and filter), all pages */
  readonly total: number;
  readonly byState: Readonly<{ FAILED: number; DEAD: number }>;
  /** of {@link total}, the rows a newer revision of the same answer superseded (listed, never replayable) */
  readonly superseded: number;
}

type Raw = FailedRowRaw & { readonly id: string | number; readonly superseded: number | string };
const listedOf = (r: Raw): ListedRow => ({
  ...failedRowOf(r),
  id: String(r.id),
  superseded: Number(r.superseded) === 1,
});

/**
 * Reads one page of `size` rows — page `start.page` (1-based) or the rows below the row id
 * `start.after` — and the totals, in one read transaction. `rows: 'current'` leaves superseded
 * rows out of the page (a replay input file); the totals count every row.
 * @example const p = await failedPage(db, '100100', '5', { page: 1 }, 50); p.nextCursor
 */
export async function failedPage(
  db: Db,
  consumerAppKey: string,
  consumerSchoolId: string,
  start: PageStart,
  size: number,
  filter: FailedFilter = ALL_FAILED,
  which: FailedRows = 'all',
): Promise<FailedPage> {
  if (!Number.isInteger(size) || size < 1 || size > MAX_FAILED_PAGE_SIZE)
    throw new RangeError(`size must be 1–${MAX_FAILED_PAGE_SIZE}`);
  if ('page' in start && (!Number.isInteger(start.page) || start.page < 1)) throw new RangeError('page must be ≥ 1');
  return db.transaction(async (conn: PoolConnection) => {
    const p = failedSql.page(consumerAppKey, consumerSchoolId, filter, start, size, which);
    const t = failedSql.total(consumerAppKey, consumerSchoolId, filter);
    const raw = (await conn.query(p.sql, p.params))[0] as Raw[];
    const totals = (await conn.query(t.sql, t.params))[0] as Array<{
      state: string;
      n: string | number;
      superseded: string | number | null;
    }>;
    const byState = { FAILED: 0, DEAD: 0 };
    let superseded = 0;
    for (const { state, n, superseded: s } of totals) {
      if (state === 'FAILED' || state === 'DEAD') byState[state] = Number(n);
      superseded += Number(s ?? 0);
    }
    const rows = raw.slice(0, size).map(listedOf);
    const hasMore = raw.length > size;
    return {
      page: 'page' in start ? start.page : null,
      after: 'after' in start ? start.after : null,
      size,
      rows,
      hasMore,
      nextCursor: hasMore ? rows.at(-1)!.id : null,
      total: byState.FAILED + byState.DEAD,
      byState,
      superseded,
    };
  });
}

/**
 * Every matching row not superseded, newest first, in keyset pages, at most `max` (`more` when
 * others match): what `deliveries replay --failed` replays; and how many superseded rows it left out.
 * @example const { rows } = await selectFailed(db, '100100', '5', { state: 'DEAD', reason: null }, 100_000)
 */
export async function selectFailed(
  db: Db,
  consumerAppKey: string,
  consumerSchoolId: string,
  filter: FailedFilter,
  max: number,
): Promise<{ rows: ListedRow[]; more: boolean; superseded: number }> {
  const rows: ListedRow[] = [];
  let start: PageStart = { page: 1 };
  for (;;) {
    const size = Math.min(1000, max + 1 - rows.length);
    const p = failedSql.page(consumerAppKey, consumerSchoolId, filter, start, size, 'current');
    const raw = await db.query<Raw>(p.sql, p.params);
    rows.push(...raw.slice(0, size).map(listedOf));
    if (raw.length <= size || rows.length > max) break;
    start = { after: rows.at(-1)!.id };
  }
  const s = failedSql.superseded(consumerAppKey, consumerSchoolId, filter);
  const superseded = Number((await db.query<{ n: string | number }>(s.sql, s.params))[0]?.n ?? 0);
  return { rows: rows.slice(0, max), more: rows.length > max, superseded };
}
