/**
 * Whether an error is an outage — a database, broker, network or disk this process cannot use
 * right now — rather than a fault of the item being worked on: `reconcile run --all` gives its
 * pairs back on one, and a `--follow` service waits it out instead of exiting.
 */

/** Error codes of a database, network or disk this process cannot use: an outage, not an item's fault. */
const OUTAGE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_TABLEACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
  'ER_NO_SUCH_TABLE',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_QUERY_INTERRUPTED',
  // a server gone read-only: a managed failover (RDS/Aurora, Cloud SQL) demotes the writer for
  // seconds to a minute; a write is refused until the new writer is reached (issue 35 §5)
  'ER_READ_ONLY_MODE',
  'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION',
  'ER_INNODB_READ_ONLY',
  'ENOSPC',
  'EROFS',
  'EDQUOT',
  'EIO',
]);

/**
 * Error codes of a database that refuses this process's settings: a wrong user or password
 * (1045), no grant on the database or a table (1044, 1142), a database that does not exist
 * (1049). Waiting does not cure them — someone must fix a setting — so a service meets them as a
 * misconfiguration (claims nothing, looks again every 30 s), not an outage (issue 34 §8). They
 * stay in {@link OUTAGE_CODES} for the batch commands that give their work back on either.
 */
const MISCONFIG_CODES = new Set([
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_TABLEACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
]);

/**
 * 1290 (`ER_OPTION_PREVENTS_STATEMENT`) is an outage only when the option is read-only
 * (`--read-only` or `--super-read-only`): the same code names other options (`--secure-file-priv`,
 * `--skip-grant-tables`) that waiting does not cure.
 */
const READ_ONLY_OPTION = /read[-_ ]only/i;

type Coded = { code?: unknown; message?: unknown; cause?: unknown };

/** Whether an error or one of its causes (five deep) passes `test`. */
function carries(err: unknown, codes: ReadonlySet<string>, also?: (e: Coded) => boolean): boolean {
  for (let e = err as Coded | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && codes.has(e.code)) return true;
    if (also?.(e)) return true;
  }
  return false;
}

/** A server refusing a write because it is read-only (1290 naming read-only). */
function readOnlyOption(e: Coded): boolean {
  return e.code === 'ER_OPTION_PREVENTS_STATEMENT' && typeof e.message === 'string' && READ_ONLY_OPTION.test(e.message);
}

/**
 * Whether an error (or one of its causes) is the database refusing this process's settings.
 * @example isDbMisconfiguration(Object.assign(new Error('denied'), { code: 'ER_ACCESS_DENIED_ERROR' })) // true
 */
export function isDbMisconfiguration(err: unknown): boolean {
  return carries(err, MISCONFIG_CODES);
}

const READ_ONLY_CODES = new Set([
  'ER_READ_ONLY_MODE',
  'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION',
  'ER_INNODB_READ_ONLY',
]);

/**
 * Whether an error (or one of its causes) is a server refusing a write because it is read-only:
 * an outage, which a batch run names as such (issue 35 §5).
 * @example isReadOnly(Object.assign(new Error('Running in read-only mode'), { code: 'ER_READ_ONLY_MODE' })) // true
 */
export function isReadOnly(err: unknown): boolean {
  return carries(err, READ_ONLY_CODES, readOnlyOption);
}

/**
 * Whether an error (or one of its causes, five deep) carries an outage code.
 * @example isOutage(Object.assign(new Error('down'), { code: 'ECONNREFUSED' })) // true
 */
export function isOutage(err: unknown): boolean {
  return carries(err, OUTAGE_CODES, readOnlyOption);
}
