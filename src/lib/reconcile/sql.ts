/** The statements of the reconciliation's own (the manifests' are in src/lib/manifest/sql.ts). */
import type { Statement } from '../db/statement.js';

/**
 * Whether a database's local clock (NOW()) is past a `yyyy-MM-dd HH:mm:ss` second: one `passed` column, 0 or 1.
 * @example selectClockPassed('2026-11-30 09:00:00') // { sql: 'SELECT NOW() > ? AS passed', params: ['2026-11-30 09:00:00'] }
 */
export function selectClockPassed(t: string): Statement {
  return { sql: 'SELECT NOW() > ? AS passed', params: [t] };
}

/** {@link selectClockPassed} in UTC (UTC_TIMESTAMP()), to compare with another database's clock in another zone. */
export function selectUtcClockPassed(t: string): Statement {
  return { sql: 'SELECT UTC_TIMESTAMP() > ? AS passed', params: [t] };
}
