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
  'ENOSPC',
  'EROFS',
  'EDQUOT',
  'EIO',
]);

/**
 * Whether an error (or one of its causes, five deep) carries an outage code.
 * @example isOutage(Object.assign(new Error('down'), { code: 'ECONNREFUSED' })) // true
 */
export function isOutage(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string' && OUTAGE_CODES.has(e.code)) return true;
  }
  return false;
}
