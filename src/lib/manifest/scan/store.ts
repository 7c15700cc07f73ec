/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { Db } from '../../db/connect.js';
import { shardRange } from '../shard.js';
import { countManifestRows } from '../sql.js';
import type { ScanOptions } from './types.js';

/** How many rows a scan will read: the progress view's total (an index-only count). */
export async function countScanRows(
  db: Db,
  o: Pick<ScanOptions, 'side' | 'schId' | 'formUuid' | 'shard'>,
): Promise<number> {
  const { sql, params } = countManifestRows(o.side, {
    schId: o.schId,
    formUuid: o.formUuid,
    after: null,
    range: shardRange(o.shard),
    limit: 1,
  });
  return Number((await db.query<{ n: string }>(sql, params))[0]?.n ?? 0);
}
