/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import type { ScanRaw } from './decide.js';
import { scanSql } from './sql.js';

/** Runs the scan's statements in one read transaction: one consistent view of the outbox. */
export async function readScan(db: Db, limit: number): Promise<ScanRaw> {
  return db.transaction(async (conn: PoolConnection) => {
    const run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
    const now = (await run<{ now: string }>(scanSql.now()))[0]!.now;
    return {
      now,
      states: await run<ScanRaw['states'][number]>(scanSql.states()),
      open: (await run<ScanRaw['open']>(scanSql.open(now)))[0]!,
      reasons: await run<ScanRaw['reasons'][number]>(scanSql.reasons()),
      rows: await run<ScanRaw['rows'][number]>(scanSql.newestFailed(limit)),
    };
  });
}
