/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { Db } from '../db/connect.js';
import { type WorkerBeat, workerSql } from './sql.js';

/** MariaDB/MySQL: unknown column (a registry made before schema version 8 has no `detail`). */
const ER_BAD_FIELD_ERROR = 1054;

/**
 * Makes or refreshes this process's row in the fleet registry `fcctl_worker`; on a database whose
 * `db init` was not re-run since version 8, without its `detail` (the beat matters more).
 */
export async function beatWorker(db: Db, beat: WorkerBeat): Promise<void> {
  const s = workerSql.beat(beat);
  try {
    await db.execute(s.sql, s.params);
  } catch (err) {
    if ((err as { errno?: number }).errno !== ER_BAD_FIELD_ERROR) throw err;
    const old = workerSql.beat(beat, false);
    await db.execute(old.sql, old.params);
  }
}

/** Removes this process's row from `fcctl_worker` (a clean stop). */
export async function removeWorker(db: Db, workerId: string): Promise<void> {
  const s = workerSql.remove(workerId);
  await db.execute(s.sql, s.params);
}

/**
 * Deletes the registry's gone rows (issue 36 §8): a process killed, or stopped while its database
 * was down, never removes its own; the live fleet does, so `--fail-if stale-workers` does not
 * stay at exit 1 forever. How many were deleted.
 */
export async function pruneGoneWorkers(db: Db): Promise<number> {
  const ids = (await db.query<{ worker_id: string }>(workerSql.gone().sql, workerSql.gone().params)).map((r) =>
    String(r.worker_id),
  );
  if (ids.length === 0) return 0;
  const s = workerSql.pruneGone(ids);
  return (await db.execute(s.sql, s.params)).affectedRows;
}
