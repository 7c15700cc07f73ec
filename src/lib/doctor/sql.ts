import type { Statement } from '../db/statement.js';

/**
 * The server's version, doctor's proof that a database answers.
 * @example selectServerVersion().sql // 'SELECT VERSION() AS v'
 */
export function selectServerVersion(): Statement {
  return { sql: 'SELECT VERSION() AS v', params: [] };
}
