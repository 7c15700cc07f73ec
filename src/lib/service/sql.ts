/**
 * SQL of the fleet registry `fcctl_worker` (sql/fc.sql, sql/sh.sql; schema version 6): each
 * `--follow` process beats its own row; `fcctl status` reads them. Times are the database's UTC clock.
 */
import { printable } from '../cli/printable.js';
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
  /** why the state is outage or misconfigured (see {@link workerDetail}), else null */
  readonly detail: string | null;
  /**
   * Whole seconds since the process began beating (its monotonic clock): a row made again (pruned
   * while the process was frozen, then thawed) keeps the process's start, not the thaw's.
   */
  readonly uptimeSeconds: number;
}

/** The states whose reason the registry keeps: what `fcctl status` shows beside `state outage`. */
const STATES_WITH_DETAIL = new Set(['outage', 'misconfigured']);

/**
 * The registry's `detail` of a state: the service's own reason (its target and error, as it logs
 * it) for an outage or a misconfiguration, control characters escaped (a `last_error` or a server's
 * message never drives a terminal that shows it), cut to the column's 255; null in any other state.
 * @example workerDetail('outage', 'flow center lookup: status 503') // 'flow center lookup: status 503'
 */
export function workerDetail(state: string, detail: string | null): string | null {
  if (!STATES_WITH_DETAIL.has(state) || detail === null) return null;
  return printable(detail).slice(0, 255);
}

/**
 * The registry's `command` of a service that takes only part of the queue: the command then its
 * scope (the resolver's app key: it settles only that key's apply commands), so `fcctl status` can
 * tell whether each app key with commands due has a resolver. The column is 64 characters: a
 * scope cut there is matched as a prefix ({@link registeredScope}).
 * @example registryCommand('apply-command resolve-unknown', '100021') // 'apply-command resolve-unknown 100021'
 */
export function registryCommand(command: string, scope: string | null): string {
  return (scope === null ? command : `${command} ${scope}`).slice(0, REGISTRY_COMMAND_LENGTH);
}
const REGISTRY_COMMAND_LENGTH = 64;

/**
 * Whether a registry row's `command` is `command`'s, serving `scope`: the same command without a
 * scope (an fcctl before the scope was named serves every one, as it was judged), or with that scope
 * (or, cut at the column's length, its beginning).
 * @example servesScope('apply-command resolve-unknown 100021', 'apply-command resolve-unknown', '100021') // true
 */
export function servesScope(registered: string, command: string, scope: string): boolean {
  if (registered === command) return true;
  if (!registered.startsWith(`${command} `)) return false;
  const named = registered.slice(command.length + 1);
  return named === scope || (registered.length === REGISTRY_COMMAND_LENGTH && scope.startsWith(named));
}

/** A rate as DECIMAL(12,2) holds it. */
const rate = (n: number) => Math.min(Math.max(Math.round(n * 100) / 100, 0), 9_999_999_999);

/** A registry row is stale when its last beat is older than three of its own intervals (killed, or cut off from the database). */
export const STALE_WORKER = '(last_beat_at < UTC_TIMESTAMP() - INTERVAL 3 * heartbeat_seconds SECOND)';

/**
 * Beats a row may miss before it is gone rather than stale, with a floor of {@link GONE_FLOOR_SECONDS}:
 * a process silent that long was killed (kill -9, a stop during a database outage), not cut off for a
 * while. A gone row no longer counts as stale (`fcctl status`), and a live service deletes it.
 */
export const GONE_BEATS = 20;
/** A row is never gone sooner than this after its last beat: an hour of stale alarm first, whatever the interval. */
export const GONE_FLOOR_SECONDS = 3600;

/** A registry row is gone when its last beat is older than 20 of its intervals and an hour (issue 36 §8). */
export const GONE_WORKER = `(last_beat_at < UTC_TIMESTAMP() - INTERVAL GREATEST(${GONE_FLOOR_SECONDS}, ${GONE_BEATS} * heartbeat_seconds) SECOND)`;

/** Stale and not yet gone: what `--fail-if stale-workers` counts. */
export const STALE_NOT_GONE = `(${STALE_WORKER} AND NOT ${GONE_WORKER})`;

/** Most gone rows one beat deletes (the registry is small; a backlog of them goes over a few beats). */
const PRUNE_LIMIT = 100;

/** @example const { sql, params } = workerSql.beat(beat) */
export const workerSql = {
  /**
   * The process's row, made on its first beat and refreshed on every later one. `withDetail` false:
   * without the `detail` column, for a database whose `db init` was not re-run since version 8.
   */
  beat: (b: WorkerBeat, withDetail = true): Statement => ({
    sql:
      `INSERT INTO fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state, rows_per_second${withDetail ? ', detail' : ''}) ` +
      `VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP() - INTERVAL ? SECOND, UTC_TIMESTAMP(), ?, ?, ?${withDetail ? ', ?' : ''}) ` +
      // the new values as parameters again: VALUES() in this clause is deprecated on MySQL 8
      `ON DUPLICATE KEY UPDATE last_beat_at = UTC_TIMESTAMP(), state = ?, rows_per_second = ?${withDetail ? ', detail = ?' : ''}`,
    params: [
      b.workerId,
      b.command.slice(0, 64),
      b.host.slice(0, 255),
      b.pid,
      b.version.slice(0, 32),
      Math.max(Math.round(b.uptimeSeconds), 0),
      b.heartbeatSeconds,
      b.state,
      rate(b.rowsPerSecond),
      ...(withDetail ? [b.detail] : []),
      b.state,
      rate(b.rowsPerSecond),
      ...(withDetail ? [b.detail] : []),
    ],
  }),
  /** A clean stop takes the row away. */
  remove: (workerId: string): Statement => ({
    sql: 'DELETE FROM fcctl_worker WHERE worker_id = ?',
    params: [workerId],
  }),
  /** The gone rows (a plain read: the common case, none, takes no lock). */
  gone: (): Statement => ({
    sql: `SELECT worker_id FROM fcctl_worker WHERE ${GONE_WORKER} LIMIT ?`,
    params: [PRUNE_LIMIT],
  }),
  /**
   * Deletes the rows read as gone, guarded: each still gone when deleted (a process that beat
   * meanwhile keeps its row; one that beats later makes it again, its upsert an insert).
   */
  pruneGone: (workerIds: readonly string[]): Statement => ({
    sql: `DELETE FROM fcctl_worker WHERE worker_id IN (${workerIds.map(() => '?').join(', ')}) AND ${GONE_WORKER}`,
    params: [...workerIds],
  }),
  /**
   * Every registered process, with whether it is stale: its last beat older than three of its own
   * intervals (it was killed, or is cut off from the database), or gone (see {@link GONE_WORKER}).
   * At most `limit` (`fcctl status` shows a bounded list). `withDetail` false: a registry made
   * before schema version 8 (no `detail`), read with a null one.
   */
  list: (limit: number, withDetail = true): Statement => ({
    sql:
      'SELECT worker_id, command, host, pid, version, CAST(started_at AS CHAR) AS started_at, CAST(last_beat_at AS CHAR) AS last_beat_at, heartbeat_seconds, state, ' +
      `CAST(rows_per_second AS CHAR) AS rows_per_second, ${withDetail ? 'detail' : 'NULL AS detail'}, ${STALE_NOT_GONE} AS stale, ${GONE_WORKER} AS gone ` +
      'FROM fcctl_worker ORDER BY command, host, pid LIMIT ?',
    params: [limit],
  }),
};
