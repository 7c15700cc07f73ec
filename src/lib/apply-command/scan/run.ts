/**
 * `apply-command scan`: a read-only report on `flow_apply_command`. `readApplyScan` (`store.ts`) runs
 * the SQL (`sql.ts`) in one read transaction; `decide.ts` shapes it. "Now" is the database's NOW(), read
 * once.
 */
import type { Db } from '../../db/connect.js';
import { type ApplyScanReport, shapeApplyScan } from './decide.js';
import { readApplyScan } from './store.js';

export async function scanApplyCommands(db: Db, limit: number, graceSeconds: number): Promise<ApplyScanReport> {
  return shapeApplyScan(await readApplyScan(db, limit, graceSeconds));
}
