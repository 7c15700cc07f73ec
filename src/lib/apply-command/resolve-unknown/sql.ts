/**
 * SQL of `apply-command resolve-unknown` on `flow_apply_command` (SH side): the claim, the peek and
 * the guarded writes. Builders only: each returns a `{sql, params}` (tested as text); the runner
 * (`run.ts`) executes them on the real database.
 */
import type { Statement } from '../../db/statement.js';
import type { CommandWrite } from './decide.js';
import type { CommandGeneration } from '../types.js';

/** Columns resolve needs; never `SELECT *`. */
export const ROW_COLUMNS =
  'id, biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, retry_count, create_time';

/**
 * What resolve takes, against the database's NOW(): UNKNOWN and FAILED rows whose retry time has
 * come (or is unset), PENDING rows created more than `grace` seconds ago (their own sender had its
 * chance); only rows of the configured app key (fcctl never signs for another app); not under a
 * live lease of someone else — an owner without an expiry counts as expired, so no row can be
 * stuck forever (seed 003 §10.6).
 */
export function claimableWhere(appKey: string, graceSeconds: number): Statement {
  return {
    sql:
      "((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= NOW())) " +
      "OR (state = 'PENDING' AND create_time <= NOW() - INTERVAL ? SECOND)) " +
      'AND apply_app_key = ? AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW())',
    params: [graceSeconds, appKey],
  };
}

/**
 * The claim's SELECT: oldest id first (no class of rows starves another), locked rows skipped,
 * after `afterId` — the run's cursor, so a claim walks the primary key from where the last one
 * stopped instead of from the table's start through every DONE row (seed 003: claims must not
 * grow with history).
 */
export function claimSelect(appKey: string, graceSeconds: number, afterId: string, limit: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  return {
    sql: `SELECT ${ROW_COLUMNS} FROM flow_apply_command WHERE ${w.sql} AND id > ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
    params: [...w.params, afterId, limit],
  };
}

/**
 * Where a run's claims start: the smallest id resolve can take now ({@link claimableWhere}: this
 * app key, due, no live lease), read along `idx_apply_command_due` (the backlog's entries, never the
 * DONE rows; no lock). Only claimable rows count: an old open row of another app key, or a FAILED
 * row whose retry is hours away, would otherwise start every run's claim at the table's beginning
 * and make it walk the whole history (issue 20, `test/db/explain.test.ts`). `'0'` when there is none.
 */
export function claimStartSelect(appKey: string, graceSeconds: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  return {
    sql: `SELECT MIN(id) AS id FROM flow_apply_command FORCE INDEX (idx_apply_command_due) WHERE ${w.sql}`,
    params: w.params,
  };
}

/**
 * When a claimable command became due (issue 36 §2), not when it was made: a PENDING one when its
 * grace ran out; another its retry time, or without one its last write (it went UNKNOWN, was
 * replayed) or else its creation; and a lease that ran out after that, the lease's end. The
 * resolver's `/metrics` and `fcctl status` both count from it. Its one parameter is the grace.
 */
export const APPLY_DUE_SINCE =
  "GREATEST(CASE WHEN state = 'PENDING' THEN create_time + INTERVAL ? SECOND ELSE COALESCE(next_retry_at, update_time, create_time) END, " +
  'COALESCE(claim_expires_at, create_time))';

/**
 * The due backlog for a follow resolver's gauges (read with each heartbeat at most): how many
 * commands are claimable (counted no further than `cap`, along `idx_apply_command_due`) and how
 * long the one due longest among them has been due ({@link APPLY_DUE_SINCE}).
 */
export function backlogSelect(appKey: string, graceSeconds: number, cap: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  return {
    sql: `SELECT COUNT(*) AS n, COALESCE(TIMESTAMPDIFF(SECOND, MIN(since), NOW()), 0) AS age FROM (SELECT ${APPLY_DUE_SINCE} AS since FROM flow_apply_command FORCE INDEX (idx_apply_command_due) WHERE ${w.sql} LIMIT ?) due`,
    params: [graceSeconds, ...w.params, cap],
  };
}

/**
 * A write that changes nothing (an impossible WHERE: no row read or locked), refused by a
 * read-only server (1290, a failover's demoted writer): the resolver says `running` only once this
 * succeeds after a failure, not when its reads do (issue 35 §5).
 */
export function writable(): Statement {
  return { sql: 'UPDATE flow_apply_command SET claim_owner = claim_owner WHERE 1 = 0', params: [] };
}

export function claimUpdate(owner: string, leaseSeconds: number, ids: readonly string[]): Statement {
  return {
    sql: 'UPDATE flow_apply_command SET claim_owner = ?, claim_expires_at = NOW() + INTERVAL ? SECOND WHERE id IN (?)',
    params: [owner, leaseSeconds, ids],
  };
}

/**
 * The mirrored status of claimed rows, as the DONE write will compare it. A plain read, apart from
 * the locking claim SELECT: locking service_apply too would make the service's callbacks wait on
 * fcctl, and SKIP LOCKED would then skip commands for a lock on their mirror row.
 */
export function mirrorSelect(ids: readonly string[]): Statement {
  return {
    sql: 'SELECT c.id, s.id AS s_id, s.flow_status FROM flow_apply_command c LEFT JOIN service_apply s ON s.biz_type = c.biz_type AND s.biz_id = c.biz_id WHERE c.id IN (?)',
    params: [ids],
  };
}

/** Claimable rows without claiming them, for `--dry-run` (keyset on id so it pages forward). */
export function peekSelect(appKey: string, graceSeconds: number, afterId: string, limit: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  return {
    sql: `SELECT ${ROW_COLUMNS} FROM flow_apply_command WHERE ${w.sql} AND id > ? ORDER BY id LIMIT ?`,
    params: [...w.params, afterId, limit],
  };
}

/** Rows that would be claimable but belong to another apply app key: reported, never touched. */
export function otherAppKeySelect(appKey: string, graceSeconds: number): Statement {
  const w = claimableWhere(appKey, graceSeconds);
  // Same rule with the app key condition turned round.
  return {
    sql: `SELECT COUNT(*) AS n FROM flow_apply_command WHERE ${w.sql.replace('apply_app_key = ?', 'apply_app_key <> ?')}`,
    params: w.params,
  };
}

/**
 * The guard of every write after the claim (SPEC §2): still ours, and the same version of the
 * row (state and retry count) as claimed. A stale worker's write matches nothing.
 */
function guard(owner: string, gen: CommandGeneration, alias = ''): Statement {
  const a = alias ? `${alias}.` : '';
  return {
    sql: `${a}id = ? AND ${a}claim_owner = ? AND ${a}state = ? AND ${a}retry_count = ? AND ${a}attempt = ? AND ${a}request_token = ?`,
    params: [gen.id, owner, gen.state, gen.retryCount, gen.attempt, gen.requestToken],
  };
}

const CLEAR_CLAIM = 'claim_owner = NULL, claim_expires_at = NULL';

/**
 * One write as one statement. A `done` updates the command and mirrors the status into
 * `service_apply.flow_status` in a single multi-table UPDATE: atomic (one implicit transaction),
 * and the mirror happens only when the command row passes the guard. The mirror is written only
 * into the service_apply row that existed at claim (by its id when read) and only while its
 * status is still the one read then (`<=>`: NULL too): a status the service's flow callbacks
 * wrote meanwhile is newer than our lookup, and a row the service inserted since is its own. No
 * row at claim: the command alone. A second, read-only join (`s2`) tells a changed row from a
 * deleted one, so last_error says which.
 */
export function compileWrite(owner: string, w: CommandWrite): Statement {
  const g = guard(owner, w.gen);
  switch (w.kind) {
    case 'done': {
      const c = guard(owner, w.gen, 'c');
      const { claimed } = w.mirror;
      // last_branch is the branch that settled it; a DONE by lookup clears one left from before
      // (a requeued row's old answer would otherwise read as the reason it is DONE).
      const settle = "c.state = 'DONE', c.remote_status = ?, c.remote_instance_id = ?, c.last_branch = ?, ";
      const settleParams = [w.status, w.instanceId, w.branch];
      const rest = 'c.next_retry_at = NULL, c.claim_owner = NULL, c.claim_expires_at = NULL, c.update_time = NOW()';
      if (!claimed.exists) {
        return {
          sql: `UPDATE flow_apply_command c SET ${settle}c.last_error = ?, ${rest} WHERE ${c.sql}`,
          params: [...settleParams, w.note, ...c.params],
        };
      }
      const byId = claimed.id === undefined || claimed.id === null ? '' : 's.id = ? AND ';
      const byId2 =
        claimed.id === undefined || claimed.id === null
          ? 's2.biz_type = c.biz_type AND s2.biz_id = c.biz_id'
          : 's2.id = ?';
      const idParams = claimed.id === undefined || claimed.id === null ? [] : [claimed.id];
      return {
        sql:
          `UPDATE flow_apply_command c LEFT JOIN service_apply s ON ${byId}s.biz_type = c.biz_type AND s.biz_id = c.biz_id AND s.flow_status <=> ? ` +
          `LEFT JOIN service_apply s2 ON ${byId2} ` +
          `SET ${settle}c.last_error = CASE WHEN s.id IS NOT NULL THEN ? WHEN s2.id IS NULL THEN ? ELSE ? END, ${rest}, s.flow_status = ?, s.update_time = NOW() ` +
          `WHERE ${c.sql}`,
        params: [
          ...idParams,
          claimed.status,
          ...idParams,
          ...settleParams,
          w.note,
          w.mirror.deletedNote,
          w.mirror.changedNote,
          w.mirror.status,
          ...c.params,
        ],
      };
    }
    case 'fail':
      return {
        sql:
          `UPDATE flow_apply_command SET state = ?, retry_count = ?, next_retry_at = ${w.backoffSeconds === null ? 'NULL' : 'NOW() + INTERVAL ? SECOND'}, ` +
          `last_error = ?, ${CLEAR_CLAIM}, update_time = NOW() WHERE ${g.sql}`,
        params: [
          w.state,
          w.retryCount,
          ...(w.backoffSeconds === null ? [] : [w.backoffSeconds]),
          w.lastError,
          ...g.params,
        ],
      };
    case 'dead':
      return {
        sql: `UPDATE flow_apply_command SET state = 'DEAD', last_branch = ?, last_error = ?, next_retry_at = NULL, ${CLEAR_CLAIM}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.branch, w.lastError, ...g.params],
      };
    case 'release':
      return { sql: `UPDATE flow_apply_command SET ${CLEAR_CLAIM} WHERE ${g.sql}`, params: g.params };
  }
}

/** The note a DONE write left, read back to tell a changed mirror row from a deleted one. */
export function lastErrorSelect(id: string): Statement {
  return { sql: 'SELECT last_error FROM flow_apply_command WHERE id = ?', params: [id] };
}
