/**
 * `deliveries failed` (seed 000 §8 `failedPage`): one page of the FAILED and DEAD rows of one
 * consumer and school, newest first, for a responder deciding what to replay. Read-only.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import { type FailedRow, failedRowOf, type FailedRowRaw } from '../types.js';
import { failedSql } from './sql.js';

/** Largest page `deliveries failed` serves. */
export const MAX_FAILED_PAGE_SIZE = 200;

export interface FailedPage {
  readonly page: number;
  readonly size: number;
  readonly rows: readonly FailedRow[];
  /** a later page holds more rows */
  readonly hasMore: boolean;
  /** FAILED and DEAD rows of this consumer and school, all pages */
  readonly total: number;
  readonly byState: Readonly<{ FAILED: number; DEAD: number }>;
}

/**
 * Reads page `page` (1-based) of `size` rows, and the totals, in one read transaction.
 * @example const p = await failedPage(db, '100100', '5', 1, 50); p.rows[0]?.lastError
 */
export async function failedPage(db: Db, consumerAppKey: string, consumerSchoolId: string, page: number, size: number): Promise<FailedPage> {
  if (!Number.isInteger(size) || size < 1 || size > MAX_FAILED_PAGE_SIZE) throw new RangeError(`size must be 1–${MAX_FAILED_PAGE_SIZE}`);
  if (!Number.isInteger(page) || page < 1) throw new RangeError('page must be ≥ 1');
  return db.transaction(async (conn: PoolConnection) => {
    const p = failedSql.page(consumerAppKey, consumerSchoolId, page, size);
    const t = failedSql.total(consumerAppKey, consumerSchoolId);
    const raw = (await conn.query(p.sql, p.params))[0] as FailedRowRaw[];
    const totals = (await conn.query(t.sql, t.params))[0] as Array<{ state: string; n: string | number }>;
    const byState = { FAILED: 0, DEAD: 0 };
    for (const { state, n } of totals) if (state === 'FAILED' || state === 'DEAD') byState[state] = Number(n);
    return {
      page,
      size,
      rows: raw.slice(0, size).map(failedRowOf),
      hasMore: raw.length > size,
      total: byState.FAILED + byState.DEAD,
      byState,
    };
  });
}
