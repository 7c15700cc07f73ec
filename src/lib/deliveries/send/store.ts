/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import { type DeliveryRow, grantKey, type GrantRow, type RegistryRow } from '../types.js';
import { type PublisherFacts, writeReached } from './decide.js';
import { compileWrite, sendSql } from './sql.js';
import type { SendDeps, Write } from './types.js';

/** Claims up to `limit` due rows for `owner` with a lease, in one short transaction. */
export async function claimDue(db: Db, owner: string, limit: number, leaseSeconds: number): Promise<DeliveryRow[]> {
  return db.transaction(async (conn: PoolConnection) => {
    const claim = sendSql.claim(limit);
    const claimed = (await conn.query(claim.sql, claim.params))[0] as DeliveryRow[];
    if (claimed.length > 0) {
      const lease = sendSql.lease(
        owner,
        claimed.map((r) => r.id),
        leaseSeconds,
      );
      await conn.query(lease.sql, lease.params);
    }
    return claimed;
  });
}

/** Throws what the server says when it cannot write now (read-only: a failover); {@link sendSql.writable}. */
export async function checkWritable(db: Db): Promise<void> {
  const q = sendSql.writable();
  await db.execute(q.sql, q.params);
}

/** How many rows are due now, counting no further than `cap` ({@link sendSql.countDue}). */
export async function countDue(db: Db, cap: number): Promise<number> {
  const q = sendSql.countDue(cap);
  const rows = await db.query<{ n: number | string }>(q.sql, q.params);
  return Number(rows[0]?.n ?? 0);
}

/**
 * The due backlog's size (up to 10,000: {@link sendSql.backlog}) and its oldest row's age in seconds,
 * over every due row ({@link sendSql.oldestDue}, as `fcctl status` reads it; 0 when none is due).
 */
export async function backlog(db: Db): Promise<{ due: number; oldestAgeSeconds: number }> {
  const count = sendSql.backlog(10_000);
  const oldest = sendSql.oldestDue(null);
  const [n, age] = await Promise.all([
    db.query<{ n: number | string }>(count.sql, count.params),
    db.query<{ age: number | string | null }>(oldest.sql, oldest.params),
  ]);
  return { due: Number(n[0]?.n ?? 0), oldestAgeSeconds: Math.max(Number(age[0]?.age ?? 0), 0) };
}

export async function peekDue(db: Db, afterId: string, limit: number): Promise<DeliveryRow[]> {
  const q = sendSql.peekDue(afterId, limit);
  return db.query<DeliveryRow>(q.sql, q.params);
}

/** The grants of a batch's rows, read fresh, keyed by `grantKey`. */
export async function grantsFor(db: Db, rows: readonly DeliveryRow[]): Promise<Map<string, GrantRow>> {
  const out = new Map<string, GrantRow>();
  const q = sendSql.grants(rows);
  if (!q) return out;
  for (const g of await db.query<GrantRow>(q.sql, q.params))
    out.set(grantKey(g.form_uuid, g.consumer_school_id, g.consumer_app_key), g);
  return out;
}

/** Executes writes; each is one statement (one autocommit), not one per row. Returns rows matched. */
export async function applyWrites(db: Db, owner: string, writes: readonly Write[]): Promise<number> {
  let matched = 0;
  for (const w of writes) {
    if (w.gens.length === 0) continue;
    const { sql, params } = compileWrite(owner, w);
    matched += (await db.execute(sql, params)).affectedRows;
  }
  return matched;
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
    const q = sendSql.states(w.gens.map((g) => g.id));
    const rows = await db.query<{ id: string; state: string; retry_count: number }>(q.sql, q.params);
    const byId = new Map(rows.map((r) => [String(r.id), r]));
    for (const g of w.gens) {
      const row = byId.get(g.id);
      if (!row || !writeReached(w, row)) stale.add(g.id);
    }
  }
  return stale;
}

/** The registry row of the publisher's app code; `'unreachable'` (with the error) when it cannot be read. */
export async function publisherFacts(
  db: Db,
  publisher: SendDeps['publisher'],
): Promise<{ facts: PublisherFacts; error?: unknown }> {
  try {
    const q = sendSql.registryByCode(publisher.appCode);
    const registry = (await db.query<RegistryRow>(q.sql, q.params))[0] ?? null;
    return { facts: { appKey: publisher.appKey, appCode: publisher.appCode, registry } };
  } catch (error) {
    return { facts: { appKey: publisher.appKey, appCode: publisher.appCode, registry: 'unreachable' }, error };
  }
}
