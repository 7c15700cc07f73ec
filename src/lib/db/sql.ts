import type { Statement } from './statement.js';

/**
 * The database's NOW() and UTC_TIMESTAMP() in one statement (one instant), as text: a scan's start
 * and the task start are read in the database's own clock.
 * @example selectDatabaseNow().sql // 'SELECT CAST(NOW() AS CHAR) AS t, CAST(UTC_TIMESTAMP() AS CHAR) AS u'
 */
export function selectDatabaseNow(): Statement {
  return { sql: 'SELECT CAST(NOW() AS CHAR) AS t, CAST(UTC_TIMESTAMP() AS CHAR) AS u', params: [] };
}
