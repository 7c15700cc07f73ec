/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import type { ApplyCommandRow, MirrorAtClaim } from '../types.js';
import type { CommandWrite, WriteOutcome } from './decide.js';
import {
  backlogSelect,
  claimSelect,
  claimStartSelect,
  claimUpdate,
  compileWrite,
  lastErrorSelect,
  mirrorSelect,
  otherAppKeySelect,
  peekSelect,
  writable,
} from './sql.js';

/** Throws what the server says when it cannot write now (read-only: a failover); {@link writable}. */
export async function checkWritable(db: Db): Promise<void> {
  const q = writable();
  await db.execute(q.sql, q.params);
}

/**
 * Where a run's claims start (from {@link claimStartSelect}): `'0'` when nothing is in a state
 * resolve can take.
 */
export async function claimStart(db: Db, appKey: string, graceSeconds: number): Promise<string> {
  const q = claimStartSelect(appKey, graceSeconds);
  const min = (await db.query<{ id: string | number | null }>(q.sql, q.params))[0]?.id;
  return min === null || min === undefined ? '0' : String(BigInt(min) - 1n);
}

/** How many rows resolve would take but that belong to another app key ({@link otherAppKeySelect}). */
export async function countOtherAppKey(db: Db, appKey: string, graceSeconds: number): Promise<number> {
  const q = otherAppKeySelect(appKey, graceSeconds);
  return Number((await db.query<{ n: string | number }>(q.sql, q.params))[0]?.n ?? 0);
}

/** One page of a dry run's rows after `afterId`, read without a claim ({@link peekSelect}). */
export async function peekRows(
  db: Db,
  appKey: string,
  graceSeconds: number,
  afterId: string,
  limit: number,
): Promise<ApplyCommandRow[]> {
  const q = peekSelect(appKey, graceSeconds, afterId, limit);
  return db.query<ApplyCommandRow>(q.sql, q.params);
}

/** The claimable backlog's size (up to `cap`) and its oldest command's age in seconds ({@link backlogSelect}). */
export async function backlog(
  db: Db,
  appKey: string,
  graceSeconds: number,
  cap = 10_000,
): Promise<{ due: number; oldestAgeSeconds: number }> {
  const q = backlogSelect(appKey, graceSeconds, cap);
  const r = (await db.query<{ n: number | string; age: number | string }>(q.sql, q.params))[0];
  return { due: Number(r?.n ?? 0), oldestAgeSeconds: Math.max(Number(r?.age ?? 0), 0) };
}

/**
 * Claims up to `limit` rows for `owner` with a lease in one short transaction (`FOR UPDATE SKIP
 * LOCKED`: concurrent resolvers never wait on or share a row), with the mirrored status each row
 * is settled against. No HTTP happens inside it.
 */
export async function claimRows(
  db: Db,
  owner: string,
  appKey: string,
  graceSeconds: number,
  afterId: string,
  limit: number,
  leaseSeconds: number,
): Promise<ApplyCommandRow[]> {
  return db.transaction(async (conn: PoolConnection) => {
    const sel = claimSelect(appKey, graceSeconds, afterId, limit);
    const [rows] = await conn.query(sel.sql, sel.params);
    const claimed = rows as ApplyCommandRow[];
    if (claimed.length === 0) return claimed;
    const ids = claimed.map((r) => String(r.id));
    const up = claimUpdate(owner, leaseSeconds, ids);
    await conn.query(up.sql, up.params);
    const m = mirrorSelect(ids);
    const [mirrors] = await conn.query(m.sql, m.params);
    const byId = new Map<string, MirrorAtClaim>();
    for (const r of mirrors as Array<{
      id: string | number;
      s_id: string | number | null;
      flow_status: number | null;
    }>) {
      byId.set(String(r.id), {
        exists: r.s_id !== null,
        status: r.flow_status === null ? null : Number(r.flow_status),
        id: r.s_id === null ? null : String(r.s_id),
      });
    }
    return claimed.map((r) => ({ ...r, mirror: byId.get(String(r.id)) ?? { exists: false, status: null, id: null } }));
  });
}

/**
 * Executes one write (one statement). A `done` matches the command row and, when it still holds
 * the status read at claim, the service_apply row (the connection counts matched rows,
 * FOUND_ROWS): 0 stale, 1 not mirrored, 2 mirrored. Not mirrored over a row that existed at
 * claim: the statement chose the changed or the deleted note; `reader` reads which back (rare:
 * only then), without one it is reported as changed.
 */
export async function applyWrite(
  db: { execute(sql: string, params: unknown[]): Promise<{ affectedRows: number }> },
  owner: string,
  w: CommandWrite,
  reader?: { query<T>(sql: string, params?: readonly unknown[]): Promise<T[]> },
): Promise<WriteOutcome> {
  const { sql, params } = compileWrite(owner, w);
  const { affectedRows } = await db.execute(sql, params);
  if (affectedRows === 0) return { kind: 'stale' };
  if (w.kind !== 'done') return { kind: 'written', mirror: null };
  if (!w.mirror.claimed.exists) return { kind: 'written', mirror: 'missing' };
  if (affectedRows >= 2) return { kind: 'written', mirror: 'written' };
  if (reader === undefined) return { kind: 'written', mirror: 'changed' };
  const q = lastErrorSelect(w.gen.id);
  const note = (await reader.query<{ last_error: string | null }>(q.sql, q.params))[0]?.last_error;
  return { kind: 'written', mirror: note === w.mirror.deletedNote ? 'deleted' : 'changed' };
}
