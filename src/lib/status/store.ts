/**
 * Executes `fcctl status`'s statements — its own (sql.ts) and those it reuses from `deliveries
 * scan`, `apply-command scan`, the fleet registry and the pause switch — and maps their rows to
 * the facts of types.ts. Reads only, each its own short statement; no transaction, no lock.
 */
import { applyScanSql } from '../apply-command/scan/sql.js';
import { APPLY_COMMAND_STATES } from '../apply-command/types.js';
import type { Db } from '../db/connect.js';
import type { Statement } from '../db/statement.js';
import { scanSql } from '../deliveries/scan/sql.js';
import { DELIVERY_STATES } from '../deliveries/types.js';
import { pauseOfRow } from '../pause/decide.js';
import { listPauses } from '../pause/store.js';
import { workerSql } from '../service/sql.js';
import { claimOwnerOf, countMode, queueOf, reconcileRunOf } from './decide.js';
import { LIST_LIMIT, RECENT_INDEX, statusSql } from './sql.js';
import type { ClaimOwner, Fleet, PauseInForce, QueueFacts, ReasonCount, ReconcileRunFacts, Worker } from './types.js';

type Row = Record<string, unknown>;
const num = (v: unknown): number => Number(v ?? 0);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const one = async (db: Db, s: { sql: string; params: unknown[] }) => (await db.query<Row>(s.sql, s.params))[0] ?? {};
const rows = (db: Db, s: { sql: string; params: unknown[] }) => db.query<Row>(s.sql, s.params);

const countsOf = (rs: Row[]) => rs.map((r) => ({ state: String(r['state']), n: num(r['n']) }));
const reasonsOf = (rs: Row[]): ReasonCount[] =>
  rs.map((r) => ({ reason: r['fcctl_reason'] === null ? null : String(r['fcctl_reason']), n: num(r['n']) }));

/** The database's NOW(), read once: every count of a section is of that instant. */
async function nowOf(db: Db): Promise<string> {
  return String((await one(db, scanSql.now()))['now']);
}

/** One queue's statements: the outbox's or the apply commands'. */
interface QueueSql {
  readonly states: readonly string[];
  readonly historyState: string;
  readonly tableRows: () => Statement;
  /** the estimate when the plan has no `rows` column (see sql.ts) */
  readonly cachedTableRows: () => Statement;
  readonly openStates: (states: readonly string[]) => Statement;
  readonly allStates: () => Statement;
  /** the last hour's counts, on `index` (null: none named) */
  readonly recent: (now: string, index: string | null) => Statement;
  readonly recentIndex: string;
}

/** MariaDB/MySQL: an index named in FORCE INDEX does not exist. */
const ER_KEY_DOES_NOT_EXITS = 1176;

/**
 * The last hour's counts on their index; on a database whose `db init` was not re-run since that
 * index came (schema version 7), the same count without it, and the warning that says so: one
 * missing index must not hide the section's DEAD rows.
 */
async function readRecent(db: Db, q: QueueSql, now: string): Promise<{ row: Row; warnings: string[] }> {
  try {
    return { row: await one(db, q.recent(now, q.recentIndex)), warnings: [] };
  } catch (err) {
    if ((err as { errno?: number }).errno !== ER_KEY_DOES_NOT_EXITS) throw err;
    return {
      row: await one(db, q.recent(now, null)),
      warnings: [`${q.recentIndex} is missing: the last hour counted without it; run fcctl db init`],
    };
  }
}

/**
 * Rows by state (see ./decide.ts `countMode`) and the history state's last 5 minutes and hour.
 * The statements are independent reads of one instant's `now`: sent at once, on the pool.
 */
async function readCounts(db: Db, q: QueueSql, now: string, exactCounts: boolean) {
  const open = q.states.filter((s) => s !== q.historyState);
  const [planned, recent] = await Promise.all([one(db, q.tableRows()), readRecent(db, q, now)]);
  const estimate = 'rows' in planned ? planned : await one(db, q.cachedTableRows());
  const mode = countMode(num(estimate['rows']), exactCounts);
  const counts = countsOf(await rows(db, mode === 'exact' ? q.allStates() : q.openStates(open)));
  return {
    counts,
    estimatedTableRows: mode === 'exact' ? null : num(estimate['rows']),
    accepted: { last5m: num(recent.row['last_5m']), last1h: num(recent.row['last_1h']) },
    warnings: recent.warnings,
  };
}

const OUTBOX: QueueSql = {
  states: DELIVERY_STATES,
  historyState: 'BROKER_ACCEPTED',
  tableRows: statusSql.outboxTableRows,
  cachedTableRows: statusSql.outboxCachedTableRows,
  openStates: statusSql.outboxOpenStates,
  allStates: statusSql.outboxAllStates,
  recent: statusSql.outboxAccepted,
  recentIndex: RECENT_INDEX.outbox,
};

const APPLY_COMMANDS: QueueSql = {
  states: APPLY_COMMAND_STATES,
  historyState: 'DONE',
  tableRows: statusSql.applyTableRows,
  cachedTableRows: statusSql.applyCachedTableRows,
  openStates: statusSql.applyOpenStates,
  allStates: statusSql.applyAllStates,
  recent: statusSql.applyDone,
  recentIndex: RECENT_INDEX.apply,
};

/** The outbox: rows by state, the accepted windows, scan's held/due/stuck, the oldest due, the top reasons. */
export async function readOutbox(fc: Db, exactCounts: boolean): Promise<QueueFacts> {
  const now = await nowOf(fc);
  const [counts, open, oldest, dead, failed] = await Promise.all([
    readCounts(fc, OUTBOX, now, exactCounts),
    one(fc, scanSql.open(now)),
    one(fc, statusSql.outboxOldestDue(now)),
    rows(fc, statusSql.outboxReasons('DEAD')),
    rows(fc, statusSql.outboxReasons('FAILED')),
  ]);
  return queueOf(OUTBOX.states, OUTBOX.historyState, {
    ...counts,
    due: num(open['due']),
    held: num(open['held']),
    stuck: num(open['stuck']),
    oldestDueAgeSeconds: numOrNull(oldest['age']),
    dead: reasonsOf(dead),
    failed: reasonsOf(failed),
  });
}

/** The apply commands: the same, due as `apply-command scan` counts it with `graceSeconds`. */
export async function readApplyCommands(sh: Db, graceSeconds: number, exactCounts: boolean): Promise<QueueFacts> {
  const now = await nowOf(sh);
  const [counts, open, oldest, dead, failed, keys] = await Promise.all([
    readCounts(sh, APPLY_COMMANDS, now, exactCounts),
    one(sh, applyScanSql.open(now, graceSeconds)),
    one(sh, statusSql.applyOldestDue(now, graceSeconds)),
    rows(sh, statusSql.applyReasons('DEAD')),
    rows(sh, statusSql.applyReasons('FAILED')),
    rows(sh, statusSql.applyDueAppKeys(now, graceSeconds, LIST_LIMIT)),
  ]);
  const facts = queueOf(APPLY_COMMANDS.states, APPLY_COMMANDS.historyState, {
    ...counts,
    due: num(open['due']),
    held: null,
    stuck: num(open['stuck']),
    oldestDueAgeSeconds: numOrNull(oldest['age']),
    dead: reasonsOf(dead),
    failed: reasonsOf(failed),
  });
  return { ...facts, dueAppKeys: keys.map((r) => String(r['app_key'])) };
}

/** MariaDB/MySQL: unknown column (a registry made before schema version 8 has no `detail`). */
const ER_BAD_FIELD_ERROR = 1054;

/** The fleet registry of one database (bounded); on one whose `db init` was not re-run since version 8, without `detail`. */
export async function readWorkers(db: Db): Promise<Worker[]> {
  const listed = await rows(db, workerSql.list(LIST_LIMIT)).catch((err: { errno?: number }) => {
    if (err.errno !== ER_BAD_FIELD_ERROR) throw err;
    return rows(db, workerSql.list(LIST_LIMIT, false));
  });
  return listed.map((r) => ({
    workerId: String(r['worker_id']),
    command: String(r['command']),
    host: String(r['host']),
    pid: num(r['pid']),
    version: String(r['version']),
    state: String(r['state']),
    detail: r['detail'] === null || r['detail'] === undefined ? null : String(r['detail']),
    rowsPerSecond: num(r['rows_per_second']),
    startedAt: String(r['started_at']),
    lastBeatAt: String(r['last_beat_at']),
    heartbeatSeconds: num(r['heartbeat_seconds']),
    stale: num(r['stale']) === 1,
    gone: num(r['gone']) === 1,
  }));
}

/** The fleet registry counted whole: its stale rows, its gone rows, its live rows by command and state. */
export async function readWorkerCounts(db: Db): Promise<Pick<Fleet, 'stale' | 'gone' | 'live'>> {
  const counts = (await rows(db, statusSql.workerCounts())).map((r) => ({
    command: String(r['command']),
    state: String(r['state']),
    stale: num(r['stale']) === 1,
    gone: num(r['gone']) === 1,
    n: num(r['n']),
  }));
  const sum = (xs: typeof counts) => xs.reduce((a, c) => a + c.n, 0);
  return {
    stale: sum(counts.filter((c) => c.stale)),
    gone: sum(counts.filter((c) => c.gone)),
    live: counts.filter((c) => !c.stale && !c.gone).map(({ command, state, n }) => ({ command, state, n })),
  };
}

/** Live claim owners: of outbox rows on FC, of apply commands on SH. */
export async function readClaimOwners(db: Db, side: 'fc' | 'sh'): Promise<ClaimOwner[]> {
  const now = await nowOf(db);
  const s = side === 'fc' ? statusSql.outboxClaims(now) : statusSql.applyClaims(now);
  return (await rows(db, s)).map((r) => claimOwnerOf(String(r['owner']), num(r['n']), String(r['expires'])));
}

/** The pauses in force on one database (an expired one, by the database's clock, is left out). */
export async function readPauses(db: Db): Promise<PauseInForce[]> {
  return (await listPauses(db))
    .map((r) => pauseOfRow(r))
    .filter((p) => p !== null)
    .map(({ source: _source, ...p }) => p);
}

/** The newest `reconcile run --all` run (whatever its id), or null when there has been none. */
export async function readReconcileRun(sh: Db): Promise<ReconcileRunFacts | null> {
  const latest = (await rows(sh, statusSql.latestRun()))[0];
  if (latest === undefined) return null;
  const runId = String(latest['run_id']);
  const counts = (await rows(sh, statusSql.runCounts(runId))).map((r) => ({
    state: String(r['state']),
    n: num(r['n']),
    withDifferences: num(r['with_differences']),
    started: r['started'] === null ? null : String(r['started']),
    elapsed: num(r['elapsed']),
  }));
  const claims = (await rows(sh, statusSql.runClaims(runId))).map((r) => String(r['owner']));
  return reconcileRunOf(runId, counts, claims);
}
