/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { Db } from '../../db/connect.js';
import { reportSql } from './sql.js';
import type { ReportTask } from './decide.js';

/** The run's task rows (none: no such run). */
export async function reportTasks(shDb: Pick<Db, 'query'>, runId: string): Promise<ReportTask[]> {
  const s = reportSql.runTasks(runId);
  const rows = await shDb.query<Omit<ReportTask, 'held'> & { held: number | string }>(s.sql, s.params);
  return rows.map((r) => ({ ...r, sch_id: String(r.sch_id), held: Number(r.held) === 1 }));
}
