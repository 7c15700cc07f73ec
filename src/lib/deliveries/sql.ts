import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../db/connect.js';
import type { Statement } from '../db/statement.js';
import type { DeliveryRow, Generation, GrantRow, RegistryRow } from './types.js';
import { grantKey } from './types.js';

/** Columns the relay needs; never `SELECT *` (consumer receipt columns are not ours). */
const ROW_COLUMNS =
  'id, event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
  'answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, replay_op_digest';

/**
 * Due: PENDING or FAILED whose time has come, and not under someone else's live lease. An owner
 * without an expiry (written by hand or by another tool) counts as expired, so no row is stuck
 * forever (seed 003 §10.6; `deliveries scan` counts such rows as stuck claims). One rule for the
 * claim and for `deliveries scan`'s due count: `t` is a table alias prefix (`d.`), `now` the SQL
 * of the current time (`NOW()`, or `?` for a report's one `now`).
 */
export function dueRule(t = '', now = 'NOW()'): string {
  return (
    `${t}state IN ('PENDING', 'FAILED') AND (${t}next_retry_at IS NULL OR ${t}next_retry_at <= ${now}) ` +
    `AND (${t}claim_owner IS NULL OR ${t}claim_expires_at IS NULL OR ${t}claim_expires_at < ${now})`
  );
}
const DUE = dueRule();

/**
 * Claims up to `limit` due rows for `owner` with a lease, in one short transaction:
 * `SELECT … FOR UPDATE SKIP LOCKED` so concurrent relays never wait on or share a row.
 */
export async function claimDue(db: Db, owner: string, limit: number, leaseSeconds: number): Promise<DeliveryRow[]> {
  return db.transaction(async (conn: PoolConnection) => {
    const [rows] = await conn.query(`SELECT ${ROW_COLUMNS} FROM answer_delivery WHERE ${DUE} LIMIT ? FOR UPDATE SKIP LOCKED`, [limit]);
    const claimed = rows as DeliveryRow[];
    if (claimed.length > 0) {
      await conn.query('UPDATE answer_delivery SET claim_owner = ?, claim_expires_at = NOW() + INTERVAL ? SECOND WHERE id IN (?)', [
        owner,
        leaseSeconds,
        claimed.map((r) => r.id),
      ]);
    }
    return claimed;
  });
}

/**
 * How many rows are due now, counting no further than `cap` (for a progress total; a later claim
 * may find fewer or more). Capped, so a backlog of millions is not read whole to draw a bar.
 */
export async function countDue(db: Db, cap: number): Promise<number> {
  const rows = await db.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM answer_delivery WHERE ${DUE} LIMIT ?) due`, [cap]);
  return Number(rows[0]?.n ?? 0);
}

/** Due rows without claiming them, for `--dry-run` (keyset on id so a dry run pages forward). */
export async function peekDue(db: Db, afterId: string, limit: number): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(`SELECT ${ROW_COLUMNS} FROM answer_delivery WHERE ${DUE} AND id > ? ORDER BY id LIMIT ?`, [afterId, limit]);
}

/** The registry row of the configured app code (seed 004 `getAppByCode`). */
export async function registryByCode(db: Db, appCode: string): Promise<RegistryRow | null> {
  const rows = await db.query<RegistryRow>('SELECT id, app_code, app_key FROM application_info WHERE app_code = ?', [appCode]);
  return rows[0] ?? null;
}

/** The grants of a batch's rows, read fresh (no cache across batches), keyed by `grantKey`. */
export async function grantsFor(db: Db, rows: readonly DeliveryRow[]): Promise<Map<string, GrantRow>> {
  const triples = new Map<string, [string, string, string]>();
  for (const r of rows) triples.set(grantKey(r.form_uuid, r.consumer_school_id, r.consumer_app_key), [r.form_uuid, String(r.consumer_school_id), r.consumer_app_key]);
  const out = new Map<string, GrantRow>();
  if (triples.size === 0) return out;
  const list = [...triples.values()];
  const found = await db.query<GrantRow>(
    'SELECT form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked ' +
      `FROM form_consumer_grant WHERE (form_uuid, consumer_school_id, consumer_app_key) IN (${list.map(() => '(?, ?, ?)').join(', ')})`,
    list.flat(),
  );
  for (const g of found) out.set(grantKey(g.form_uuid, g.consumer_school_id, g.consumer_app_key), g);
  return out;
}

/**
 * The guard every write after the claim carries (SPEC §2): still ours, still open, and the same
 * generation (retry count and replay operation) as when it was claimed.
 */
function guard(owner: string, gens: readonly Generation[]): Statement {
  // Rows of one batch nearly all share a generation: one `id IN (…)` per generation keeps the
  // statement a primary-key lookup instead of hundreds of OR-ed conditions.
  const byGeneration = new Map<string, { retryCount: number; replayOpDigest: string | null; ids: string[] }>();
  for (const g of gens) {
    const key = `${g.retryCount}|${g.replayOpDigest ?? ''}`;
    const group = byGeneration.get(key) ?? { retryCount: g.retryCount, replayOpDigest: g.replayOpDigest, ids: [] };
    group.ids.push(g.id);
    byGeneration.set(key, group);
  }
  // The top-level `id IN` makes the primary key drive the statement (and its locks), whatever
  // the generation groups look like.
  const params: unknown[] = [gens.map((g) => g.id), owner];
  const parts = [...byGeneration.values()].map((group) => {
    params.push(group.retryCount, group.replayOpDigest, group.ids);
    return '(retry_count = ? AND replay_op_digest <=> ? AND id IN (?))';
  });
  return { sql: `id IN (?) AND claim_owner = ? AND state IN ('PENDING', 'FAILED') AND (${parts.join(' OR ')})`, params };
}

/** The write of one group of rows that get the same transition. Returns rows matched. */
export type Write =
  | { readonly kind: 'accept'; readonly gens: readonly Generation[] }
  | { readonly kind: 'fail'; readonly gens: readonly Generation[]; readonly state: 'FAILED' | 'DEAD'; readonly retryCount: number; readonly backoffSeconds: number | null; readonly lastError: string }
  | { readonly kind: 'revoke'; readonly gens: readonly Generation[]; readonly lastError: string }
  | { readonly kind: 'hold'; readonly gens: readonly Generation[]; readonly recheckSeconds: number }
  | { readonly kind: 'release'; readonly gens: readonly Generation[] }
  /** budget already spent: DEAD as it stands, its retry count and last error kept */
  | { readonly kind: 'bury'; readonly gens: readonly Generation[] };

/** Compiles a write to `{sql, params}`; tested as text, executed on the real database. */
export function compileWrite(owner: string, w: Write): Statement {
  const g = guard(owner, w.gens);
  const clearClaim = 'claim_owner = NULL, claim_expires_at = NULL';
  switch (w.kind) {
    case 'accept':
      // Only a confirm writes broker_accepted_at, and only once.
      return {
        sql: `UPDATE answer_delivery SET state = 'BROKER_ACCEPTED', broker_accepted_at = COALESCE(broker_accepted_at, NOW()), next_retry_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: g.params,
      };
    case 'fail':
      return {
        sql:
          `UPDATE answer_delivery SET state = ?, retry_count = ?, next_retry_at = ${w.backoffSeconds === null ? 'NULL' : 'NOW() + INTERVAL ? SECOND'}, ` +
          `last_error = ?, broker_accepted_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.state, w.retryCount, ...(w.backoffSeconds === null ? [] : [w.backoffSeconds]), w.lastError.slice(0, 512), ...g.params],
      };
    case 'revoke':
      return {
        sql: `UPDATE answer_delivery SET state = 'GRANT_REVOKED', last_error = ?, next_retry_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`,
        params: [w.lastError, ...g.params],
      };
    case 'hold':
      // Held is neither sent nor failed: the retry budget stays; look again after a while.
      return {
        sql: `UPDATE answer_delivery SET next_retry_at = NOW() + INTERVAL ? SECOND, ${clearClaim} WHERE ${g.sql}`,
        params: [w.recheckSeconds, ...g.params],
      };
    case 'release':
      return { sql: `UPDATE answer_delivery SET ${clearClaim} WHERE ${g.sql}`, params: g.params };
    case 'bury':
      return { sql: `UPDATE answer_delivery SET state = 'DEAD', next_retry_at = NULL, ${clearClaim}, update_time = NOW() WHERE ${g.sql}`, params: g.params };
  }
}

/** Executes writes; each is one statement (one autocommit), not one per row. */
export async function applyWrites(db: Db, owner: string, writes: readonly Write[]): Promise<number> {
  let matched = 0;
  for (const w of writes) {
    if (w.gens.length === 0) continue;
    const { sql, params } = compileWrite(owner, w);
    matched += (await db.execute(sql, params)).affectedRows;
  }
  return matched;
}

/** Whether a re-read row shows the transition `w` (used only when a guarded write matched fewer rows). */
function reached(w: Write, row: { state: string; retry_count: number | string }): boolean {
  switch (w.kind) {
    case 'accept':
      return row.state === 'BROKER_ACCEPTED';
    case 'fail':
      return row.state === w.state && Number(row.retry_count) === w.retryCount;
    case 'revoke':
      return row.state === 'GRANT_REVOKED';
    case 'bury':
      return row.state === 'DEAD';
    case 'hold':
    case 'release':
      return true;
  }
}

/**
 * Executes the writes and names the rows the generation guard turned away (a replay or another
 * relay got there first), so they are reported as stale, not as accepted or failed. The re-read
 * happens only for a write that matched fewer rows than it named.
 */
export async function applyWritesReportingStale(db: Db, owner: string, writes: readonly Write[]): Promise<Set<string>> {
  const stale = new Set<string>();
  for (const w of writes) {
    if (w.gens.length === 0) continue;
    const { sql, params } = compileWrite(owner, w);
    const matched = (await db.execute(sql, params)).affectedRows;
    if (matched >= w.gens.length) continue;
    const rows = await db.query<{ id: string; state: string; retry_count: number }>('SELECT id, state, retry_count FROM answer_delivery WHERE id IN (?)', [w.gens.map((g) => g.id)]);
    const byId = new Map(rows.map((r) => [String(r.id), r]));
    for (const g of w.gens) {
      const row = byId.get(g.id);
      if (!row || !reached(w, row)) stale.add(g.id);
    }
  }
  return stale;
}
