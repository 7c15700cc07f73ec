import type { Db } from './connect.js';
import { normalizeDateTime } from '../time/datetime.js';
import { selectDatabaseNow } from './sql.js';

/**
 * The database's NOW() and UTC_TIMESTAMP() as `yyyy-MM-dd HH:mm:ss` (its own clock, whole seconds,
 * as DATETIMEs are), read in one statement so both name the same instant: the local one compares
 * with the side's DATETIMEs, the UTC one with another database's clock in another zone.
 * @example await databaseNow(db) // { local: '2026-11-30 09:00:01', utc: '2026-11-30 01:00:01' }
 */
export async function databaseNow(db: Db): Promise<{ local: string; utc: string }> {
  const { sql, params } = selectDatabaseNow();
  const rows = await db.query<{ t: string; u: string }>(sql, params);
  const local = normalizeDateTime(String(rows[0]?.t ?? ''));
  const utc = normalizeDateTime(String(rows[0]?.u ?? ''));
  if (local === null || utc === null)
    throw new Error(`the database's NOW() is not a DATETIME: ${JSON.stringify(rows[0])}`);
  return { local, utc };
}
