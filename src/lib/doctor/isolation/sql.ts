import type { Statement } from '../../db/statement.js';

/**
 * The registered app keys: `application_info.app_key` of every row, whatever its status.
 * @example selectAppKeys().sql // 'SELECT app_key FROM application_info ORDER BY app_key'
 */
export function selectAppKeys(): Statement {
  return { sql: 'SELECT app_key FROM application_info ORDER BY app_key', params: [] };
}
