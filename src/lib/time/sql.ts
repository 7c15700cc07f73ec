import type { Statement } from '../db/statement.js';

/**
 * The server's zone facts in one statement (`ServerZoneFacts`, `service-zone.ts`). The offset is
 * that of the global zone, converted explicitly (`CONVERT_TZ` accepts `SYSTEM`), never `NOW()`:
 * `NOW()` is in the session's zone, which a session setting would hide.
 * @example selectServerZone().sql.startsWith('SELECT @@session.time_zone AS session_zone') // true
 */
export function selectServerZone(): Statement {
  return {
    sql:
      'SELECT @@session.time_zone AS session_zone, @@global.time_zone AS global_zone, @@system_time_zone AS system_zone, UTC_TIMESTAMP() AS utc_now, ' +
      "TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), CONVERT_TZ(UTC_TIMESTAMP(), '+00:00', @@global.time_zone)) AS offset_minutes",
    params: [],
  };
}
