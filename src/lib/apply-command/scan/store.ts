/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import type { ApplyScanRaw } from './decide.js';
import { applyScanSql } from './sql.js';

type Row = Omit<ApplyScanRaw['reasons'][number], 'reason'> & { fcctl_reason: string | null };

/** The scan's statements in one read transaction: one consistent view. */
export async function readApplyScan(db: Db, limit: number, graceSeconds: number): Promise<ApplyScanRaw> {
  return db.transaction(async (conn: PoolConnection) => {
    const run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
    const now = (await run<{ now: string }>(applyScanSql.now()))[0]!.now;
    return {
      now,
      states: await run<ApplyScanRaw['states'][number]>(applyScanSql.states()),
      open: (await run<ApplyScanRaw['open']>(applyScanSql.open(now, graceSeconds)))[0]!,
      reasons: (await run<Row>(applyScanSql.reasons())).map(({ fcctl_reason, ...r }) => ({
        ...r,
        reason: fcctl_reason,
      })),
      rows: await run<ApplyScanRaw['rows'][number]>(applyScanSql.newestDead(limit)),
    };
  });
}
