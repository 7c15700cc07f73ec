/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import { setTimeout as delay } from 'node:timers/promises';
import { EnvironmentError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import { isOutage } from '../../db/outage.js';
import { defaultRunIdCandidates, mergePairs, newDefaultRunId, summarizeRun } from './decide.js';
import { allSql } from './sql.js';
import { recordLedgerRow } from '../ledger/store.js';
import type { LedgerEntry } from '../ledger/types.js';
import type { Pair, PairFilter, PairFound, RunAllOptions, RunAllSummary, TaskRow } from './types.js';

/** Pairs registered per INSERT. */
const REGISTER_CHUNK = 500;
/** Task-table writes are tried this many times through a lock conflict or a dropped connection. */
const TASK_TRIES = 5;

/**
 * A process without --run-id joins the newest default-named run whose last activity (a pair
 * registered or finished, a lease running) is within this many minutes; otherwise it begins a new
 * run. Processes of one night start minutes apart; a night is hours after the day's manual runs.
 */
const JOIN_MINUTES = 30;
/** Only runs begun within this many hours are joined (an index range, not the whole table). */
const JOIN_MAX_HOURS = 48;
/** How long a process waits for another to finish choosing the default run. */
const DEFAULT_RUN_LOCK_SECONDS = 30;

/** The run a process without --run-id joins, if any (see {@link JOIN_MINUTES}). */
export async function joinableRun(db: Pick<Db, 'query'>): Promise<string | null> {
  const s = allSql.joinableRun(JOIN_MINUTES, JOIN_MAX_HOURS);
  return (await db.query<{ run_id: string }>(s.sql, s.params))[0]?.run_id ?? null;
}

/**
 * Without --run-id: the run to join, or a new one named after the SH clock, chosen and this
 * process's pairs registered under a named lock on one connection, so processes started in the same
 * second agree on one run (the second sees the first's rows).
 */
export async function joinOrBeginDefaultRun(shDb: Db, pairs: readonly Pair[], startedUtc: string): Promise<string> {
  const conn = await shDb.pool.getConnection();
  try {
    const lock = allSql.lockDefaultRun(DEFAULT_RUN_LOCK_SECONDS);
    const [got] = await conn.query(lock.sql, lock.params);
    if (Number((got as Array<{ got: unknown }>)[0]?.got) !== 1)
      throw new EnvironmentError(
        `the SH database's lock ${lock.params[0]} was not free within ${DEFAULT_RUN_LOCK_SECONDS} s (another process choosing the run): try again, or give --run-id`,
      );
    try {
      const db = {
        query: async <T>(sql: string, params?: readonly unknown[]) =>
          (await conn.query(sql, params as unknown[]))[0] as T[],
      };
      const runId = (await joinableRun(db)) ?? (await newRunId(db, startedUtc));
      const joined = allSql.joined(runId);
      await conn.query(joined.sql, joined.params);
      for (let i = 0; i < pairs.length; i += REGISTER_CHUNK) {
        const r = allSql.register(runId, pairs.slice(i, i + REGISTER_CHUNK));
        await conn.query(r.sql, r.params);
      }
      return runId;
    } finally {
      const unlock = allSql.unlockDefaultRun();
      await conn.query(unlock.sql, unlock.params);
    }
  } finally {
    conn.release();
  }
}

/** A new default run id no run has yet. */
async function newRunId(db: Pick<Db, 'query'>, startedUtc: string): Promise<string> {
  const candidates = defaultRunIdCandidates(startedUtc);
  const s = allSql.runIdsTaken(candidates);
  return newDefaultRunId(
    candidates,
    (await db.query<{ run_id: string }>(s.sql, s.params)).map((r) => r.run_id),
  );
}

/** Every pair on either side, within the filters. */
export async function findPairs(fcDb: Db, shDb: Db, o: RunAllOptions): Promise<PairFound[]> {
  const fcStatement = allSql.fcPairs(o.consumerAppKey, o.filter);
  const shStatement = allSql.shPairs(o.filter);
  const [fc, sh] = await Promise.all([
    fcDb.query<{ sch_id: string; form_uuid: string }>(fcStatement.sql, fcStatement.params),
    shDb.query<{ sch_id: string; form_uuid: string }>(shStatement.sql, shStatement.params),
  ]);
  const pair = (r: { sch_id: string; form_uuid: string }): Pair => ({ schId: String(r.sch_id), formUuid: r.form_uuid });
  return mergePairs(fc.map(pair), sh.map(pair));
}

export async function registerPairs(shDb: Db, runId: string, pairs: readonly Pair[]): Promise<void> {
  for (let i = 0; i < pairs.length; i += REGISTER_CHUNK)
    await execute(shDb, allSql.register(runId, pairs.slice(i, i + REGISTER_CHUNK)));
}

/** A task-table statement, tried again through a lock conflict or a dropped connection (every write is guarded). */
export async function execute(shDb: Db, s: Statement): Promise<{ affectedRows: number }> {
  return retrying(() => shDb.execute(s.sql, s.params));
}

/** The SH database's UTC clock, as text (a default run id and the run's start are of it). */
export async function shUtcNow(shDb: Db): Promise<string> {
  return String((await shDb.query<{ u: string }>(allSql.utcNow().sql))[0]?.u ?? '');
}

/** A claimed pair's lease renewed under its token and generation; 0 rows: the claim was lost. */
export async function renewLease(
  shDb: Db,
  task: { id: string | number; token: string; generation: string },
  leaseSeconds: number,
): Promise<{ affectedRows: number }> {
  const renew = allSql.renew(String(task.id), task.token, task.generation, leaseSeconds);
  return shDb.execute(renew.sql, renew.params);
}

/**
 * A pair's end (`finish`) or its release, written under its claim; 0 rows: no longer this claim's.
 * A finish writes the pair's ledger row (`ledger`) in the same transaction, only when the guarded
 * UPDATE matched its row: a lost claim writes neither, and a crash leaves both or neither.
 */
export async function writeTask(
  shDb: Db,
  task: { id: string | number; token: string; generation: string },
  w: { kind: 'finish'; state: 'DONE' | 'FAILED'; resultJson: string } | { kind: 'release' },
  ledger: LedgerEntry | null = null,
): Promise<{ affectedRows: number }> {
  const id = String(task.id);
  if (w.kind === 'release') return execute(shDb, allSql.release(id, task.token, task.generation));
  const finish = allSql.finish(id, task.token, task.generation, w.state, w.resultJson);
  return retrying(() =>
    shDb.transaction(async (conn) => {
      const [r] = await conn.query(finish.sql, finish.params);
      const affectedRows = (r as { affectedRows: number }).affectedRows;
      if (affectedRows === 1 && ledger !== null) await recordLedgerRow(conn, ledger);
      return { affectedRows };
    }),
  );
}

/** A task row's state and claim, read again (through an outage) to tell a write whose reply was lost. */
export async function readTaskClaim(
  shDb: Db,
  id: string | number,
): Promise<{ state: string; claim_owner: string | null; claim_generation: string | number } | undefined> {
  const q = allSql.taskClaim(String(id));
  const [row] = await retrying(() =>
    shDb.query<{ state: string; claim_owner: string | null; claim_generation: string | number }>(q.sql, q.params),
  );
  return row;
}

/** `fn` until it succeeds, through an outage, at most {@link TASK_TRIES} times; `attempt` counts from 1. */
export async function retrying<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= TASK_TRIES || !isOutage(err)) throw err;
      await delay(100 * attempt + Math.random() * 100);
    }
  }
}

/** Claims the next pair of the run within the filters (one short transaction), or null when none is left to claim. */
export async function claimPair(
  shDb: Db,
  runId: string,
  f: PairFilter,
  token: string,
  host: string,
  leaseSeconds: number,
  startedUtc: string,
): Promise<(TaskRow & { token: string; generation: string }) | null> {
  return retrying((attempt) =>
    shDb.transaction(async (conn) => {
      if (attempt > 1) {
        // the claim may have committed with its reply lost: the token's task is this claim's
        const own = allSql.claimedBy(runId, token);
        const [held] = await conn.query(own.sql, own.params);
        const row = (held as TaskRow[])[0];
        if (row !== undefined)
          return { ...row, attempts: Number(row.attempts), token, generation: String(row.claim_generation) };
      }
      const next = allSql.nextClaimable(runId, f, startedUtc);
      const [rows] = await conn.query(next.sql, next.params);
      const row = (rows as TaskRow[])[0];
      if (row === undefined) return null;
      const c = allSql.claim(String(row.id), token, host, leaseSeconds);
      await conn.query(c.sql, c.params);
      return {
        ...row,
        attempts: Number(row.attempts) + 1,
        token,
        generation: String(BigInt(row.claim_generation) + 1n),
      };
    }),
  );
}

/** The run's pairs within the filters a claim may take, and those other processes hold, as committed (see {@link allSql.openPairs}). */
export async function openPairs(
  shDb: Db,
  runId: string,
  owner: string,
  f: PairFilter,
  startedUtc: string,
): Promise<{ claimable: number; heldByOthers: number }> {
  const s = allSql.openPairs(runId, owner, f, startedUtc);
  const [row] = await retrying(() =>
    shDb.query<{ claimable: number | string; held: number | string }>(s.sql, s.params),
  );
  return { claimable: Number(row?.claimable ?? 0), heldByOthers: Number(row?.held ?? 0) };
}

/** The run's pairs finished (DONE or FAILED) by processes on `host`. */
export async function hostFinishedTasks(shDb: Db, runId: string, host: string): Promise<TaskRow[]> {
  const s = allSql.runTasks(runId);
  const rows = await retrying(() => shDb.query<TaskRow>(s.sql, s.params));
  return rows.filter((t) => t.host === host && (t.state === 'DONE' || t.state === 'FAILED'));
}

export async function runSummary(shDb: Db, runId: string, now: () => Date): Promise<RunAllSummary> {
  const s = allSql.runTasks(runId);
  return summarizeRun(runId, await retrying(() => shDb.query<TaskRow>(s.sql, s.params)), now().toISOString());
}
