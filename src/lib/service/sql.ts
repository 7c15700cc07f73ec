/**
 * SQL of the fleet registry `fcctl_worker` (sql/fc.sql, sql/sh.sql; schema version 6): each
 * `--follow` process beats its own row; `fcctl status` reads them. Times are the database's UTC clock.
 */
import type { Statement } from '../db/statement.js';

/** What a process says of itself at each beat. */
export interface WorkerBeat {
  readonly workerId: string;
  readonly command: string;
  readonly host: string;
  readonly pid: number;
  readonly version: string;
  readonly heartbeatSeconds: number;
  readonly state: string;
  readonly rowsPerSecond: number;
}

/** A rate as DECIMAL(12,2) holds it. */
const rate = (n: number) => Math.min(Math.max(Math.round(n * 100) / 100, 0), 9_999_999_999);

/** A registry row is stale when its last beat is older than three of its own intervals (killed, or cut off from the database). */
export const STALE_WORKER = '(last_beat_at < UTC_TIMESTAMP() - INTERVAL 3 * heartbeat_seconds SECOND)';

/** @example const { sql, params } = workerSql.beat(beat) */
export const workerSql = {
  /** The process's row, made on its first beat and refreshed on every later one. */
  beat: (b: WorkerBeat): Statement => ({
    sql:
      'INSERT INTO fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state, rows_per_second) ' +
      'VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(), UTC_TIMESTAMP(), ?, ?, ?) ' +
      // the new values as parameters again: VALUES() in this clause is deprecated on MySQL 8
      'ON DUPLICATE KEY UPDATE last_beat_at = UTC_TIMESTAMP(), state = ?, rows_per_second = ?',
    params: [
      b.workerId,
      b.command.slice(0, 64),
      b.host.slice(0, 255),
      b.pid,
      b.version.slice(0, 32),
      b.heartbeatSeconds,
      b.state,
      rate(b.rowsPerSecond),
      b.state,
      rate(b.rowsPerSecond),
    ],
  }),
  /** A clean stop takes the row away. */
  remove: (workerId: string): Statement => ({
    sql: 'DELETE FROM fcctl_worker WHERE worker_id = ?',
    params: [workerId],
  }),
  /**
   * Every registered process, with whether it is stale: its last beat older than three of its own
   * intervals (it was killed, or is cut off from the database). At most `limit` (`fcctl status`
   * shows a bounded list).
   */
  list: (limit: number): Statement => ({
    sql:
      'SELECT worker_id, command, host, pid, version, CAST(started_at AS CHAR) AS started_at, CAST(last_beat_at AS CHAR) AS last_beat_at, heartbeat_seconds, state, ' +
      `CAST(rows_per_second AS CHAR) AS rows_per_second, ${STALE_WORKER} AS stale ` +
      'FROM fcctl_worker ORDER BY command, host, pid LIMIT ?',
    params: [limit],
  }),
};
