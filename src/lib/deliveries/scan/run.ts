/**
 * `deliveries scan`: a read-only report on the `answer_delivery` outbox. `readScan` (`store.ts`) runs
 * the SQL (one read transaction, so the numbers agree with each other); the shaping is in `decide.ts`.
 */
import type { Db } from '../../db/connect.js';
import { type ScanReport, shapeScan } from './decide.js';
import { readScan } from './store.js';

/** Reads and shapes a scan. */
export async function scanDeliveries(db: Db, limit: number): Promise<ScanReport> {
  return shapeScan(await readScan(db, limit));
}
