/**
 * store.ts: the drift ledger's statements executed (./sql.ts), its rows mapped to {@link LedgerPair}
 * and {@link LedgerNight}. `reconcile run --all` writes a pair's row inside its finish transaction
 * (../all/store.ts `writeTask`); `reconcile history` and the report read it.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { Db } from '../../db/connect.js';
import { CATEGORIES, type Category } from '../diff/decide.js';
import { mayPruneNight, NIGHT_QUIET_MINUTES } from './decide.js';
import { categoryColumn, ledgerSql } from './sql.js';
import type { HistoryFilter, LedgerEntry, LedgerNight, LedgerPair, Pruned } from './types.js';

/** Rows deleted per statement when pruning: each DELETE a short transaction. */
const PRUNE_CHUNK = 5000;
/** Nights looked up per round when pruning. */
const PRUNE_NIGHTS = 100;

type Raw = Record<string, string | number | null>;

const num = (v: string | number | null | undefined): number => Number(v ?? 0);
const numOrNull = (v: string | number | null | undefined): number | null =>
  v === null || v === undefined ? null : Number(v);
const countsOf = (r: Raw): Record<Category, number> =>
  Object.fromEntries(CATEGORIES.map((c) => [c, num(r[categoryColumn(c)])])) as Record<Category, number>;

function pairOf(r: Raw): LedgerPair {
  return {
    runId: String(r['run_id']),
    runStartedAt: String(r['run_started_at']),
    schId: String(r['sch_id']),
    formUuid: String(r['form_uuid']),
    result: r['result'] === 'FAILED' ? 'FAILED' : 'DONE',
    counts: countsOf(r),
    differences: num(r['differences']),
    fcRows: numOrNull(r['fc_rows']),
    shRows: numOrNull(r['sh_rows']),
    error: r['error'] === null ? null : String(r['error']),
    seconds: num(r['seconds']),
    throttledSeconds: num(r['throttled_seconds']),
    host: r['host'] === null ? null : String(r['host']),
    finishedAt: String(r['finished_at']),
  };
}

function nightOf(r: Raw): LedgerNight {
  return {
    runId: String(r['run_id']),
    runStartedAt: String(r['run_started_at']),
    pairs: num(r['pairs']),
    pairsWithDifferences: num(r['with_differences']),
    failed: num(r['failed']),
    counts: countsOf(r),
    differences: num(r['differences']),
    seconds: num(r['seconds']),
    throttledSeconds: num(r['throttled_seconds']),
  };
}

async function one(
  conn: Pick<PoolConnection, 'query'>,
  s: { sql: string; params: unknown[] },
): Promise<Raw | undefined> {
  return ((await conn.query(s.sql, s.params))[0] as Raw[])[0];
}

/**
 * A finished pair's ledger row, on the connection of the transaction that recorded its finish (so
 * the two commit together). The night's start is the one its rows already carry, else the run's
 * first task registered: the same on every row of a run, whichever process writes it.
 */
export async function recordLedgerRow(conn: Pick<PoolConnection, 'query'>, e: LedgerEntry): Promise<void> {
  const start =
    (await one(conn, ledgerSql.nightStart(e.runId)))?.['t'] ??
    (await one(conn, ledgerSql.taskRunStart(e.runId)))?.['t'];
  if (start === null || start === undefined) throw new Error(`run ${e.runId} has no task rows: no ledger row written`);
  const s = ledgerSql.record(e, String(start));
  await conn.query(s.sql, s.params);
}

/** The newest `last` nights' run ids and starts, newest first. */
async function lastNights(
  db: Pick<Db, 'query'>,
  last: number,
  upTo: { startedAt: string; runId: string } | null = null,
): Promise<Array<{ runId: string; runStartedAt: string }>> {
  const s = ledgerSql.nights(last, upTo);
  return (await db.query<Raw>(s.sql, s.params)).map((r) => ({
    runId: String(r['run_id']),
    runStartedAt: String(r['run_started_at']),
  }));
}

/**
 * The fleet's last `last` nights, oldest first; with `upTo` (a run id), those up to and including
 * that night (its start from its ledger rows, else from its tasks: a run whose pairs are not yet
 * recorded; a run unknown to both: none).
 * @example const nights = await ledgerNights(db, { last: 30 })
 */
export async function ledgerNights(db: Db, o: { last: number; upTo?: string }): Promise<LedgerNight[]> {
  let upTo: { startedAt: string; runId: string } | null = null;
  if (o.upTo !== undefined) {
    const start =
      (await db.query<Raw>(ledgerSql.nightStart(o.upTo).sql, ledgerSql.nightStart(o.upTo).params))[0]?.['t'] ??
      (await db.query<Raw>(ledgerSql.taskRunStart(o.upTo).sql, ledgerSql.taskRunStart(o.upTo).params))[0]?.['t'];
    if (start === null || start === undefined) return [];
    upTo = { startedAt: String(start), runId: o.upTo };
  }
  const nights = await lastNights(db, o.last, upTo);
  if (nights.length === 0) return [];
  const s = ledgerSql.nightTotals(nights.map((n) => n.runId));
  const totals = new Map((await db.query<Raw>(s.sql, s.params)).map((r) => [String(r['run_id']), nightOf(r)]));
  return nights
    .map((n) => totals.get(n.runId))
    .filter((n): n is LedgerNight => n !== undefined)
    .reverse();
}

/**
 * Every pair of these nights (the report's per-pair trend), newest night first, then by school and form.
 * @example const pairs = await ledgerPairs(db, { runIds: nights.map((n) => n.runId) })
 */
export async function ledgerPairs(db: Db, o: { runIds: readonly string[] }): Promise<LedgerPair[]> {
  if (o.runIds.length === 0) return [];
  const s = ledgerSql.pairs(o.runIds);
  return (await db.query<Raw>(s.sql, s.params)).map(pairOf);
}

/**
 * `reconcile history`: the pairs of the fleet's last `last` nights within the school and form
 * filters, newest night first, then by school and form.
 * @example const rows = await ledgerHistory(db, { schools: ['5'], forms: [], last: 7 })
 */
export async function ledgerHistory(db: Db, f: HistoryFilter): Promise<LedgerPair[]> {
  const nights = await lastNights(db, f.last);
  if (nights.length === 0) return [];
  const s = ledgerSql.pairs(
    nights.map((n) => n.runId),
    f.schools,
    f.forms,
  );
  return (await db.query<Raw>(s.sql, s.params)).map(pairOf);
}

/** Runs `s` (a DELETE … LIMIT) until it deletes fewer than the limit; the rows deleted. */
async function deleteAll(db: Db, s: () => { sql: string; params: unknown[] }): Promise<number> {
  let total = 0;
  for (;;) {
    const q = s();
    const n = (await db.execute(q.sql, q.params)).affectedRows;
    total += n;
    if (n < PRUNE_CHUNK) return total;
  }
}

/** A night's work queue as {@link mayPruneNight} weighs it. */
async function nightActivity(db: Db, runId: string): Promise<{ liveLeases: number; pending: number; recent: boolean }> {
  const s = ledgerSql.nightActivity(runId, NIGHT_QUIET_MINUTES);
  const r = (await db.query<Raw>(s.sql, s.params))[0];
  return { liveLeases: num(r?.['live_leases']), pending: num(r?.['pending']), recent: num(r?.['recent']) === 1 };
}

/**
 * `--keep-nights`: every night older than the newest `keep` removed — its ledger rows, its task
 * rows and its join row — in short DELETEs of at most {@link PRUNE_CHUNK} rows. A run with no
 * ledger row (none of its pairs finished, or run before schema version 7) is not a night: left as it is.
 * `spare`: a run never pruned, whatever its start (the pruning process's own: an old run retried by
 * `--run-id` keeps the rows its other processes still write); nor is a night another process is
 * still writing (./decide.ts `mayPruneNight`): it is counted again by the next pruner.
 * @example await pruneNights(shDb, 90) // { nights: 1, ledgerRows: 10000, taskRows: 10000 }
 */
export async function pruneNights(db: Db, keep: number, spare: string | null = null): Promise<Pruned> {
  if (!Number.isInteger(keep) || keep < 1) throw new RangeError('keep must be a whole number ≥ 1');
  let nights = 0;
  let ledgerRows = 0;
  let taskRows = 0;
  for (;;) {
    const q = ledgerSql.nightsBeyond(keep, PRUNE_NIGHTS);
    const runIds = (await db.query<Raw>(q.sql, q.params)).map((r) => String(r['run_id']));
    let pruned = 0;
    for (const runId of runIds) {
      if (!mayPruneNight(runId, spare, await nightActivity(db, runId))) continue;
      // the tasks first: a night whose ledger rows are gone is no longer found to prune again
      taskRows += await deleteAll(db, () => ledgerSql.deleteNightTasks(runId, PRUNE_CHUNK));
      const join = ledgerSql.deleteNightJoin(runId);
      await db.execute(join.sql, join.params);
      ledgerRows += await deleteAll(db, () => ledgerSql.deleteNight(runId, PRUNE_CHUNK));
      nights++;
      pruned++;
    }
    // a full round of nights all spared would be found again: done
    if (runIds.length < PRUNE_NIGHTS || pruned === 0) return { nights, ledgerRows, taskRows };
  }
}
