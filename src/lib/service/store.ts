/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { Db } from '../db/connect.js';
import { type WorkerBeat, workerSql } from './sql.js';

/** Makes or refreshes this process's row in the fleet registry `fcctl_worker`. */
export async function beatWorker(db: Db, beat: WorkerBeat): Promise<void> {
  const s = workerSql.beat(beat);
  await db.execute(s.sql, s.params);
}

/** Removes this process's row from `fcctl_worker` (a clean stop). */
export async function removeWorker(db: Db, workerId: string): Promise<void> {
  const s = workerSql.remove(workerId);
  await db.execute(s.sql, s.params);
}
