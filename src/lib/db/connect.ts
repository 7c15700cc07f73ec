import { setTimeout as delay } from 'node:timers/promises';
import type mysql from 'mysql2/promise';
import { EnvironmentError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';
import { identityCheck, openWithTls, sslModeOf, tlsCauseOf, withIdentityCheck } from './tls.js';
import { type DatabaseAddress, DEFAULT_POOL_SIZE, databaseAddressOf, parseDatabaseUrl } from './url.js';
import { versionProblem } from './version.js';

export { parseDatabaseUrl };

/** A pool on one database; `label` names it in errors ("FC database"). */
export interface Db {
  readonly label: string;
  readonly pool: mysql.Pool;
  /** rows of a SELECT */
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** affected rows of a write */
  execute(sql: string, params?: readonly unknown[]): Promise<{ affectedRows: number; insertId: number }>;
  /**
   * Runs independent statements in one round trip, each in its own autocommit (no lock outlives
   * its statement), and settles each one on its own: its affected rows, or its error. For group
   * commit ({@link ./batch.js}); the statements are formatted client-side, as `query` does.
   * Rejects as a whole only when the connection fails.
   */
  batch(
    statements: ReadonlyArray<{ readonly sql: string; readonly params: readonly unknown[] }>,
  ): Promise<Array<PromiseSettledResult<number>>>;
  /** runs fn in one short transaction; never hold it across network I/O (SPEC §2) */
  transaction<T>(fn: (conn: mysql.PoolConnection) => Promise<T>): Promise<T>;
  /** closes the pools; statements still in flight after `graceMs` (default {@link CLOSE_GRACE_MS}) are dropped */
  close(graceMs?: number): Promise<void>;
}

/**
 * The longest a statement (or a short transaction, or a batch) may wait for its answer, the wait for
 * a free connection included: a database that takes connections and answers nothing (a frozen
 * server, a stalled network) then fails like one that refuses them — an outage the services see
 * and report — instead of holding a command, its `/readyz` and its stop for as long as it lasts.
 * What goes through {@link Db} is short (reads are paged, writes by key); the long ones — the
 * manifest scan's streamed read, `db init`'s index builds, `reconcile --all`'s run lock — run on
 * connections of their own, outside this deadline.
 */
export const STATEMENT_TIMEOUT_MS = 10_000;

/**
 * The error of a statement with no answer in time: an outage (its code is mysql2's own for a
 * query timeout), and the connection it ran on is dropped, never reused for another statement.
 */
export function noAnswerError(label: string, ms: number): Error {
  return Object.assign(new Error(`${label}: no answer in ${Math.round(ms / 1000)} s`), {
    code: 'PROTOCOL_SEQUENCE_TIMEOUT',
  });
}

/**
 * Ends a connection at once, its socket destroyed: mysql2's destroy() only half-closes it, and a
 * frozen server never answers the close, so the socket (and the process) would stay. Its commands
 * still waiting fail as a lost connection, and the pool forgets it.
 */
function dropConnection(conn: unknown): void {
  const c = conn as { stream?: { destroy?: () => void }; connection?: { stream?: { destroy?: () => void } } };
  (c.stream ?? c.connection?.stream)?.destroy?.();
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ECONNRESET',
  'PROTOCOL_CONNECTION_LOST',
  'ER_ACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'EAI_AGAIN',
]);

/** InnoDB picked this statement as a deadlock victim or gave up waiting for a lock: safe to retry. */
function isTransientLockError(err: unknown): boolean {
  const errno = (err as { errno?: number }).errno;
  return errno === 1213 || errno === 1205;
}

/**
 * Runs `fn` again (up to 4 tries, short jittered pauses) when InnoDB aborted it for a deadlock
 * or lock wait timeout: the statement was rolled back whole, and every fcctl write is guarded, so
 * running it again is safe. Concurrent relays updating indexed columns make deadlocks normal.
 */
async function retryOnLockConflict<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 4 || !isTransientLockError(err)) throw err;
      await new Promise((r) => setTimeout(r, attempt * 10 + Math.random() * 20));
    }
  }
}

/** Turns a driver error into a one-line environment error that never shows the password. */
export function dbError(label: string, url: string, err: unknown): Error {
  const e = err as { code?: string; message?: string };
  const tls = tlsCauseOf(err, sslModeOf(url));
  if (tls) return new EnvironmentError(`cannot connect to ${label} at ${maskUrl(url)}: ${tls}`, { cause: err });
  if (e.code && CONNECT_CODES.has(e.code)) {
    return new EnvironmentError(`cannot connect to ${label} at ${maskUrl(url)}: ${e.code}`, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** mysql2, imported by the first {@link openDb}. */
let driver: typeof mysql | undefined;

/** How a pool is opened: its size, its close grace, and who learns of it before it is checked. */
export interface OpenDbOptions {
  readonly connectionLimit?: number;
  /** each statement's deadline ({@link STATEMENT_TIMEOUT_MS} when not given; 0: none) */
  readonly statementTimeoutMs?: number;
  /** how long its close waits for a statement still in flight ({@link CLOSE_GRACE_MS} when not given) */
  readonly closeGraceMs?: number;
  /**
   * Called with the pool as soon as it exists, before its first statement: a caller that gives up
   * waiting for the check (a database that stops answering) can still close it.
   */
  readonly onPool?: (db: Db) => void;
}

/**
 * Opens a pool and checks it answers. Times are read as strings (`dateStrings`), big integers
 * as strings: never through a JS Date or a lossy number (SPEC §1).
 * @example const fc = await openDb('FC database', process.env.FCCTL_FC_DATABASE_URL!)
 */
export async function openDb(label: string, url: string, options: OpenDbOptions = {}): Promise<Db> {
  const address = databaseAddressOf(label, url);
  const poolOptions = poolOptionsOf(address, options);
  // Loaded with the first database a command opens: `--version`, help and `canon` never need it.
  const d = (driver ??= (await import('mysql2/promise')).default);
  return openWithTls(label, address, d, poolOptions, {
    open: (o) => openChecked(label, url, d, o, address, options),
    fail: (err) => dbError(label, url, err),
  });
}

/** Opens a pool with these options, checks it answers and gates the server's version. */
async function openChecked(
  label: string,
  url: string,
  driver: typeof mysql,
  poolOptions: mysql.PoolOptions,
  address: DatabaseAddress,
  options: OpenDbOptions,
): Promise<Db> {
  const identity = identityCheck(address.tls, address.host);
  // checked in the TLS handshake, before the login; again as the pool hands out each connection
  const ssl = poolOptions.ssl;
  const checked = typeof ssl === 'object' ? { ...poolOptions, ssl: withIdentityCheck(ssl, identity) } : poolOptions;
  const pools = new Pools(
    label,
    driver,
    checked,
    {
      timeoutMs: options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS,
      closeGraceMs: options.closeGraceMs ?? CLOSE_GRACE_MS,
    },
    (conn) => identity(conn.stream),
  );
  const db = dbOn(label, url, pools);
  options.onPool?.(db);
  let version: string;
  try {
    // One round trip both proves the pool answers and gates the server's version (issue 35 §4).
    const rows = await db.query<{ v: string }>('SELECT VERSION() AS v');
    version = String(rows[0]?.v ?? '');
  } catch (err) {
    await db.close();
    throw err;
  }
  const problem = versionProblem(version);
  if (problem !== null) {
    await db.close();
    throw new EnvironmentError(`${label}: ${problem}`);
  }
  return db;
}

/** The driver's options for a database's address (TLS apart). */
function poolOptionsOf(address: DatabaseAddress, options: OpenDbOptions): mysql.PoolOptions {
  return {
    host: address.host,
    port: address.port,
    user: address.user,
    password: address.password,
    database: address.database,
    connectionLimit: options.connectionLimit ?? DEFAULT_POOL_SIZE,
    connectTimeout: 5000,
    dateStrings: true,
    // MySQL 8's JSON columns as the text the server holds, never parsed: canon hashes text (issue 35 §4).
    jsonStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    charset: 'utf8mb4_bin',
    multipleStatements: false,
  };
}

/**
 * How long {@link Pools.close} waits for a statement still in flight (a database that stopped
 * answering) before it drops the connections: the server rolls back what they held, and the
 * process can end instead of waiting for ever.
 */
export const CLOSE_GRACE_MS = 5000;

/** A driver connection as the close needs it: its socket. */
type Held = { stream?: { destroyed?: boolean; destroy(): void } };

/**
 * Every connection a pool holds, those still connecting included: mysql2 keeps them in its
 * callback pool's `_allConnections` (no public accessor); empty if a later mysql2 moves it.
 */
function connectionsOf(p: mysql.Pool | null): Held[] {
  const all = (p as unknown as { pool?: { _allConnections?: { length: number; get(i: number): unknown } } } | null)
    ?.pool?._allConnections;
  if (!all || typeof all.get !== 'function') return [];
  // a connection whose socket is gone has ended (the pool keeps it listed after its end)
  return Array.from({ length: all.length }, (_, i) => all.get(i) as Held).filter((c) => c.stream?.destroyed !== true);
}

/**
 * How long the server keeps a session idle inside a transaction (MariaDB): more than a
 * transaction's whole deadline ({@link STATEMENT_TIMEOUT_MS}), so only an abandoned one is ended.
 */
export const IDLE_TRANSACTION_SECONDS = 20;

/** Why a new connection must not be used (a TLS identity check), or null. */
type ConnectionCheck = (conn: { stream?: unknown }) => Error | null;

function preparePool(p: mysql.Pool, check: ConnectionCheck, refuse: (err: Error) => void): mysql.Pool {
  return p.on('connection', (conn) => {
    // mysql2 emits pool errors on idle connections; a dropped idle connection is not fatal.
    conn.on('error', () => undefined);
    const refused = check(conn as unknown as { stream?: unknown });
    if (refused) {
      // its first statement then fails, reported as this cause (Pools.failure)
      refuse(refused);
      conn.destroy();
      return;
    }
    // Values are escaped client-side with backslashes: a server running NO_BACKSLASH_ESCAPES
    // would read them differently, so every fcctl session turns it off.
    // (The event hands over the driver's callback connection; the command runs before any other.)
    // A transaction whose connection was dropped at its deadline while the network stalled stays
    // open on the server (it never hears the close) with its row locks: SKIP LOCKED claims passed
    // its rows by for hours (wait_timeout). MariaDB ends a session idle inside a transaction after
    // IDLE_TRANSACTION_SECONDS (every fcctl transaction ends within its deadline); MySQL reads the
    // part as a comment (it has no such setting).
    const core = conn as unknown as { query(sql: string, cb: (err: unknown) => void): void };
    core.query(
      `SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '') /*M!100300 , idle_transaction_timeout = ${IDLE_TRANSACTION_SECONDS} */`,
      () => undefined,
    );
  });
}

/**
 * The main pool and, opened on first use, the batch pool. Multi-statement text only ever goes
 * through batch(), on its own small pool, built from formatted (escaped) statements: the main
 * pool keeps multipleStatements off.
 */
class Pools {
  readonly pool: mysql.Pool;
  private batchPool: mysql.Pool | null = null;
  private closing: Promise<void> | null = null;
  /** why the last refused connection was refused: the cause of the error its statement gets */
  private failure: Error | null = null;
  private readonly refuse = (err: Error) => {
    this.failure = err;
  };
  takeFailure(): Error | null {
    const failure = this.failure;
    this.failure = null;
    return failure;
  }
  constructor(
    private readonly label: string,
    readonly driver: typeof mysql,
    private readonly options: mysql.PoolOptions,
    limits: {
      /** {@link STATEMENT_TIMEOUT_MS}, or what the opener set (0: none) */
      readonly timeoutMs: number;
      readonly closeGraceMs: number;
    },
    private readonly check: ConnectionCheck = () => null,
  ) {
    this.pool = preparePool(driver.createPool(options), check, this.refuse);
    this.timeoutMs = limits.timeoutMs;
    this.closeGraceMs = limits.closeGraceMs;
  }
  /** each statement's deadline (0: none) */
  readonly timeoutMs: number;
  private readonly closeGraceMs: number;
  /** The error of a statement past {@link timeoutMs}. */
  late(): Error {
    return noAnswerError(this.label, this.timeoutMs);
  }
  /** `work` on a connection, ended at the statement deadline: then the connection is dropped. */
  within<T>(conn: mysql.PoolConnection, work: Promise<T>): Promise<T> {
    return withDeadline(work, this.timeoutMs, () => {
      dropConnection(conn);
      return noAnswerError(this.label, this.timeoutMs);
    });
  }
  batchConnection(): Promise<mysql.PoolConnection> {
    if (this.closing !== null) return Promise.reject(new Error(`${this.label}: pool is closed`));
    this.batchPool ??= preparePool(
      this.driver.createPool({ ...this.options, multipleStatements: true, connectionLimit: 2 }),
      this.check,
      this.refuse,
    );
    return this.batchPool.getConnection();
  }
  /**
   * One statement on a pooled connection, answered within {@link timeoutMs} (the wait for a free
   * connection included), through the driver's callback API: its promise wrapper captures a stack
   * trace per statement, a tenth of the CPU of a single-row write, and fcctl never shows those
   * stacks. mysql2's own `timeout` option is not used: after it fires the pool keeps the connection
   * busy for ever (the pool gives it back only at the statement's end), so ten of them would leave
   * every later statement queued with no deadline. Here the connection is dropped instead.
   */
  run(sql: string, params: readonly unknown[]): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      let done = false;
      let conn: mysql.PoolConnection | null = null;
      const settle = (err: unknown, result?: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(result);
      };
      const timer =
        this.timeoutMs > 0
          ? setTimeout(() => {
              if (conn) dropConnection(conn);
              settle(noAnswerError(this.label, this.timeoutMs));
            }, this.timeoutMs)
          : undefined;
      const core = this.pool.pool as unknown as {
        getConnection(cb: (err: unknown, conn: mysql.PoolConnection) => void): void;
      };
      core.getConnection((err, c) => {
        if (err) return settle(err);
        // given after the deadline: back to the pool unused
        if (done) return c.release();
        conn = c;
        const callback = c as unknown as {
          query(sql: string, values: unknown[], cb: (err: unknown, result: unknown) => void): void;
        };
        callback.query(sql, params as unknown[], (qerr, result) => {
          // a connection whose statement outlived its deadline was dropped, not given back
          if (done) return;
          if (isReadOnly(qerr)) c.destroy();
          else c.release();
          settle(qerr, result);
        });
      });
    });
  }
  /**
   * Ends both pools, once: a second call waits for the first (a pool ended once never reports a
   * second end done). `graceMs` (the pool's close grace by default) is how long statements still
   * in flight are waited for; a service's stop past its drain closes with 0.
   */
  close(graceMs = this.closeGraceMs): Promise<void> {
    this.closing ??= this.end(graceMs);
    return this.closing;
  }
  private async end(graceMs: number): Promise<void> {
    const ended = Promise.all([this.pool.end().catch(() => undefined), this.batchPool?.end().catch(() => undefined)]);
    const left = () => [...connectionsOf(this.pool), ...connectionsOf(this.batchPool)];
    const deadline = Date.now() + graceMs;
    // A pool's end waits for each connection's statement in flight, and may report itself done
    // while one still waits (its count shrinks as the idle ones end): a connection left after the
    // grace never answered, and its socket is destroyed. Not the driver's destroy(), which only
    // half-closes it: a server that stopped answering never closes its side, and the socket would
    // keep the process alive for ever.
    await Promise.race([ended, delay(graceMs, undefined, { ref: false })]);
    while (left().length > 0 && Date.now() < deadline) await delay(25);
    for (const conn of left()) dropConnection(conn);
  }
}

/** A read-only server's refusal: mysql2's pool drops such a connection (a failover left it on a replica). */
function isReadOnly(err: unknown): boolean {
  const errno = (err as { errno?: number } | null)?.errno;
  return errno === 1290 || errno === 1792 || errno === 1836;
}

/** A connection asked of a pool within `ms`; one that comes later goes back to the pool unused. */
function acquireWithin(
  acquiring: Promise<mysql.PoolConnection>,
  ms: number,
  onLate: () => Error,
): Promise<mysql.PoolConnection> {
  return withDeadline(acquiring, ms, () => {
    acquiring.then(
      (c) => c.release(),
      () => undefined,
    );
    return onLate();
  });
}

/** Whether a connection's socket was dropped ({@link dropConnection}, or lost). */
function isDropped(conn: unknown): boolean {
  const c = conn as { stream?: { destroyed?: boolean }; connection?: { stream?: { destroyed?: boolean } } };
  return (c.stream ?? c.connection?.stream)?.destroyed === true;
}

/** `work`, or the error of `onLate()` once `ms` have passed (0: no deadline). */
function withDeadline<T>(work: Promise<T>, ms: number, onLate: () => Error): Promise<T> {
  if (ms <= 0) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onLate()), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

function dbOn(label: string, url: string, pools: Pools): Db {
  const fail = (err: unknown) => dbError(label, url, pools.takeFailure() ?? err);
  const db: Db = {
    label,
    pool: pools.pool,
    async query<T>(sql: string, params: readonly unknown[] = []) {
      try {
        const rows = await pools.run(sql, params);
        return rows as T[];
      } catch (err) {
        throw fail(err);
      }
    },
    async execute(sql, params = []) {
      try {
        const r = (await retryOnLockConflict(() => pools.run(sql, params))) as mysql.ResultSetHeader;
        return { affectedRows: r.affectedRows, insertId: r.insertId };
      } catch (err) {
        throw fail(err);
      }
    },
    batch: (statements) => runBatch(db, statements, pools, fail),
    transaction: (fn) => runTransaction(pools, fn, fail),
    close: (graceMs) => pools.close(graceMs),
  };
  return db;
}

type Statements = Parameters<Db['batch']>[0];

/** {@link Db.batch}: the statements in one round trip, each settled on its own. */
async function runBatch(
  db: Db,
  statements: Statements,
  pools: Pools,
  fail: (err: unknown) => Error,
): Promise<Array<PromiseSettledResult<number>>> {
  const one = (i: number) =>
    db.execute(statements[i]!.sql, statements[i]!.params).then(
      (r): PromiseSettledResult<number> => ({ status: 'fulfilled', value: r.affectedRows }),
      (reason: unknown): PromiseSettledResult<number> => ({ status: 'rejected', reason }),
    );
  if (statements.length <= 1) return Promise.all(statements.map((_, i) => one(i)));
  let conn: mysql.PoolConnection;
  try {
    conn = await acquireWithin(pools.batchConnection(), pools.timeoutMs, () => pools.late());
  } catch (err) {
    throw fail(err);
  }
  let counts: Array<number | null>;
  try {
    counts = await pools.within(conn, batchCounts(db.label, conn, statements, pools.driver.format));
    conn.release();
  } catch (err) {
    conn.destroy();
    dropConnection(conn);
    throw fail(err);
  }
  const settled: Array<PromiseSettledResult<number>> = [];
  for (let i = 0; i < statements.length; i++) {
    const c = counts[i];
    settled.push(c === null || c === undefined ? await one(i) : { status: 'fulfilled', value: c });
  }
  return settled;
}

/**
 * Runs the statements as one multi-statement text. Each statement is followed by recording its
 * row count in a session variable: after an error, they tell exactly which statements ran (and
 * what they matched); the rest (null) run one by one.
 */
async function batchCounts(
  label: string,
  conn: mysql.PoolConnection,
  statements: Statements,
  format: typeof mysql.format,
): Promise<Array<number | null>> {
  const vars = statements.map((_, i) => `@fcctl_batch_${i}`);
  const text = [
    `SET ${vars.map((v) => `${v} = NULL`).join(', ')}`,
    ...statements.flatMap((st, i) => [
      format(st.sql, st.params as Parameters<typeof mysql.format>[1]),
      `SET ${vars[i]} = ROW_COUNT()`,
    ]),
  ].join(';\n');
  try {
    const [results] = await conn.query(text);
    const rs = results as unknown as mysql.ResultSetHeader[];
    if (!Array.isArray(rs) || rs.length !== 1 + 2 * statements.length)
      throw new Error(
        `${label}: a batch of ${statements.length} statements answered ${Array.isArray(rs) ? rs.length : 1} results`,
      );
    return statements.map((_, i) => rs[1 + 2 * i]!.affectedRows);
  } catch (err) {
    if (typeof (err as { errno?: unknown }).errno !== 'number' || (err as { fatal?: boolean }).fatal) throw err;
    const [rows] = await conn.query(`SELECT ${vars.map((v, i) => `${v} AS r${i}`).join(', ')}`);
    const row = (rows as Array<Record<string, string | number | null>>)[0] ?? {};
    return statements.map((_, i) =>
      row[`r${i}`] === null || row[`r${i}`] === undefined ? null : Number(row[`r${i}`]),
    );
  }
}

/**
 * {@link Db.transaction}: one short transaction, run again when InnoDB aborted it for a lock
 * conflict, answered whole within the statement deadline (a transaction is a few statements by
 * key): past it the connection is dropped and the server rolls the transaction back.
 */
function runTransaction<T>(
  pools: Pools,
  fn: (conn: mysql.PoolConnection) => Promise<T>,
  fail: (err: unknown) => Error,
): Promise<T> {
  return retryOnLockConflict(async () => {
    let conn: mysql.PoolConnection;
    try {
      conn = await acquireWithin(pools.pool.getConnection(), pools.timeoutMs, () => pools.late());
    } catch (err) {
      throw fail(err);
    }
    const work = async () => {
      await conn.beginTransaction();
      const result = await fn(conn);
      await conn.commit();
      return result;
    };
    try {
      return await pools.within(conn, work());
    } catch (err) {
      if (!isDropped(conn)) await withDeadline(conn.rollback(), 1000, () => pools.late()).catch(() => undefined);
      throw isTransientLockError(err) ? err : fail(err);
    } finally {
      if (isDropped(conn)) conn.destroy();
      else conn.release();
    }
  });
}
