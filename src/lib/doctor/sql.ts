import type { Statement } from '../db/statement.js';

/**
 * The server's version, doctor's proof that a database answers.
 * @example selectServerVersion().sql // 'SELECT VERSION() AS v'
 */
export function selectServerVersion(): Statement {
  return { sql: 'SELECT VERSION() AS v', params: [] };
}

/**
 * The connection's own grants: needs no privilege (docs/privileges.md).
 * @example showOwnGrants().sql // 'SHOW GRANTS'
 */
export function showOwnGrants(): Statement {
  return { sql: 'SHOW GRANTS', params: [] };
}

/**
 * The connection's database (its URL's path).
 * @example selectCurrentDatabase().sql // 'SELECT DATABASE() AS d'
 */
export function selectCurrentDatabase(): Statement {
  return { sql: 'SELECT DATABASE() AS d', params: [] };
}

/**
 * The TLS version of this session (`Value` empty in plaintext): doctor says how it connected.
 * SHOW, not a SELECT: MySQL 8 has no information_schema.SESSION_STATUS, MariaDB no
 * performance_schema status tables by default.
 * @example selectSessionTls().sql // "SHOW SESSION STATUS LIKE 'Ssl_version'"
 */
export function selectSessionTls(): Statement {
  return { sql: "SHOW SESSION STATUS LIKE 'Ssl_version'", params: [] };
}
