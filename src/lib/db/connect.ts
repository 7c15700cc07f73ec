import { setTimeout as delay } from 'node:timers/promises';
import type mysql from 'mysql2/promise';
import { EnvironmentError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';
import { identityCheck, openWithTls, sslModeOf, tlsCauseOf } from './tls.js';
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
  close(): Promise<void>;
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
  const pools = new Pools(label, driver, poolOptions, options.closeGraceMs, (conn) => identity(conn.stream));
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
    const core = conn as unknown as { query(sql: string, cb: (err: unknown) => void): void };
    core.query("SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')", () => undefined);
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
    private readonly closeGraceMs = CLOSE_GRACE_MS,
    private readonly check: ConnectionCheck = () => null,
  ) {
    this.pool = preparePool(driver.createPool(options), check, this.refuse);
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
   * The driver's callback API: its promise wrapper captures a stack trace per statement, a tenth
   * of the CPU of a single-row write, and fcctl never shows those stacks.
   */
  run(sql: string, params: readonly unknown[]): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.pool.pool.query(sql, params as unknown[], (err: unknown, result: unknown) =>
        err ? reject(err) : resolve(result),
      );
    });
  }
  /** Ends the pools, once (a second call waits for the first). */
  close(): Promise<void> {
    this.closing ??= this.end(this.closeGraceMs);
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
    for (const conn of left()) conn.stream?.destroy();
  }
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
    transaction: (fn) => runTransaction(pools.pool, fn, fail),
    close: () => pools.close(),
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
    conn = await pools.batchConnection();
  } catch (err) {
    throw fail(err);
  }
  let counts: Array<number | null>;
  try {
    counts = await batchCounts(db.label, conn, statements, pools.driver.format);
    conn.release();
  } catch (err) {
    conn.destroy();
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

/** {@link Db.transaction}: one short transaction, run again when InnoDB aborted it for a lock conflict. */
function runTransaction<T>(
  pool: mysql.Pool,
  fn: (conn: mysql.PoolConnection) => Promise<T>,
  fail: (err: unknown) => Error,
): Promise<T> {
  return retryOnLockConflict(async () => {
    let conn: mysql.PoolConnection;
    try {
      conn = await pool.getConnection();
    } catch (err) {
      throw fail(err);
    }
    try {
      await conn.beginTransaction();
      const result = await fn(conn);
      await conn.commit();
      return result;
    } catch (err) {
      await conn.rollback().catch(() => undefined);
      throw isTransientLockError(err) ? err : fail(err);
    } finally {
      conn.release();
    }
  });
}
