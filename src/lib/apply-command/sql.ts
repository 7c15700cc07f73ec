/**
 * SQL of `flow_apply_command` (SH side): the claim, the guarded writes and the scan. Builders
 * return `{sql, params}` (tested as text); the executors run them on the real database.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../db/connect.js';
import type { CommandWrite } from './decide.js';
import type { CommandGeneration, ApplyCommandRow } from './types.js';

export interface Sql {
  readonly sql: string;
  readonly params: unknown[];
}

/** Columns resolve needs; never `SELECT *`. */
export const ROW_COLUMNS = 'id, biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, retry_count, create_time';

/**
 * What resolve takes, against the database's NOW(): UNKNOWN and FAILED rows whose retry time has
 * come (or is unset), PENDING rows created more than `grace` seconds ago (their own sender had its
 * chance); only rows of the configured app key (fcctl never signs for another app); not under a
 * live lease of someone else — an owner without an expiry counts as expired, so no row can be
 * stuck forever (seed 003 §10.6).
 */
export function claimableWhere(appKey: string, graceSeconds: number): Sql {
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
export function claimSelect(appKey: string, graceSeconds: number, afterId: string, limit: number): Sql {
  const w = claimableWhere(appKey, graceSeconds);
  return { sql: `SELECT ${ROW_COLUMNS} FROM flow_apply_command WHERE ${w.sql} AND id > ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`, params: [...w.params, afterId, limit] };
}

/**
 * Where a run's claims start: just before the smallest id in a state resolve can take, read
 * from `idx_apply_command_due` alone (the backlog's entries, never the DONE rows; no lock).
 * `'0'` when there is none.
 */
export function claimStartSelect(): Sql {
  return {
    sql: "SELECT MIN(id) AS id FROM flow_apply_command FORCE INDEX (idx_apply_command_due) WHERE state IN ('UNKNOWN', 'FAILED', 'PENDING')",
    params: [],
  };
}

export async function claimStart(db: Db): Promise<string> {
  const q = claimStartSelect();
  const min = (await db.query<{ id: string | number | null }>(q.sql, q.params))[0]?.id;
  return min === null || min === undefined ? '0' : String(BigInt(min) - 1n);
}

export function claimUpdate(owner: string, leaseSeconds: number, ids: readonly string[]): Sql {
  return { sql: 'UPDATE flow_apply_command SET claim_owner = ?, claim_expires_at = NOW() + INTERVAL ? SECOND WHERE id IN (?)', params: [owner, leaseSeconds, ids] };
}

/**
 * Claims up to `limit` rows for `owner` with a lease in one short transaction (`FOR UPDATE SKIP
 * LOCKED`: concurrent resolvers never wait on or share a row). No HTTP happens inside it.
 */
export async function claimRows(db: Db, owner: string, appKey: string, graceSeconds: number, afterId: string, limit: number, leaseSeconds: number): Promise<ApplyCommandRow[]> {
  return db.transaction(async (conn: PoolConnection) => {
    const sel = claimSelect(appKey, graceSeconds, afterId, limit);
    const [rows] = await conn.query(sel.sql, sel.params);
    const claimed = rows as ApplyCommandRow[];
    if (claimed.length > 0) {
      const up = claimUpdate(owner, leaseSeconds, claimed.map((r) => String(r.id)));
      await conn.query(up.sql, up.params);
    }
    return claimed;
  });
}

/** Claimable rows without claiming them, for `--dry-run` (keyset on id so it pages forward). */
export function peekSelect(appKey: string, graceSeconds: number, afterId: string, limit: number): Sql {
  const w = claimableWhere(appKey, graceSeconds);
  return { sql: `SELECT ${ROW_COLUMNS} FROM flow_apply_command WHERE ${w.sql} AND id > ? ORDER BY id LIMIT ?`, params: [...w.params, afterId, limit] };
}

/** Rows that would be claimable but belong to another apply app key: reported, never touched. */
export function otherAppKeySelect(appKey: string, graceSeconds: number): Sql {
  const w = claimableWhere(appKey, graceSeconds);
  // Same rule with the app key condition turned round.
  return { sql: `SELECT COUNT(*) AS n FROM flow_apply_command WHERE ${w.sql.replace('apply_app_key = ?', 'apply_app_key <> ?')}`, params: w.params };
}

/**
 * The guard of every write after the claim (SPEC §2): still ours, and the same version of the
 * row (state and retry count) as claimed. A stale worker's write matches nothing.
 */
function guard(owner: string, gen: CommandGeneration, alias = ''): Sql {
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
 * and the mirror happens only when the command row passes the guard.
 */
export function compileWrite(owner: string, w: CommandWrite): Sql {
  const g = guard(owner, w.gen);
  switch (w.kind) {
    case 'done': {
      const c = guard(owner, w.gen, 'c');
      return {
        sql:
          'UPDATE flow_apply_command c LEFT JOIN service_apply s ON s.biz_type = c.biz_type AND s.biz_id = c.biz_id ' +
          `SET c.state = 'DONE', c.remote_status = ?, c.remote_instance_id = ?, c.last_branch = ${w.branch === null ? 'c.last_branch' : '?'}, c.last_error = ?, ` +
          'c.next_retry_at = NULL, c.claim_owner = NULL, c.claim_expires_at = NULL, c.update_time = NOW(), s.flow_status = ?, s.update_time = NOW() ' +
          `WHERE ${c.sql}`,
        params: [w.status, w.instanceId, ...(w.branch === null ? [] : [w.branch]), w.note, w.mirror.status, ...c.params],
      };
    }
    case 'fail':
      return {
        sql:
          `UPDATE flow_apply_command SET state = ?, retry_count = ?, next_retry_at = ${w.backoffSeconds === null ? 'NULL' : 'NOW() + INTERVAL ? SECOND'}, ` +
          `last_error = ?, ${CLEAR_CLAIM}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.state, w.retryCount, ...(w.backoffSeconds === null ? [] : [w.backoffSeconds]), w.lastError, ...g.params],
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

/** What a write did: `stale` when the guard matched nothing (the row moved on without us). */
export type WriteOutcome = { readonly kind: 'written'; readonly mirrored: boolean | null } | { readonly kind: 'stale' };

/**
 * Executes one write (one statement). A `done` matches the command row and, when there is one,
 * the service_apply row (the connection counts matched rows, FOUND_ROWS): 0 stale, 1 no mirror
 * row, 2 mirrored.
 */
export async function applyWrite(db: { execute(sql: string, params: unknown[]): Promise<{ affectedRows: number }> }, owner: string, w: CommandWrite): Promise<WriteOutcome> {
  const { sql, params } = compileWrite(owner, w);
  const { affectedRows } = await db.execute(sql, params);
  if (affectedRows === 0) return { kind: 'stale' };
  return { kind: 'written', mirrored: w.kind === 'done' ? affectedRows >= 2 : null };
}
