/**
 * SQL of the pause switch (`fcctl_pause`, `fcctl_pause_event`: sql/fc.sql and sql/sh.sql), as
 * `{sql, params}` builders. Times are UTC from the database's own clock (`UTC_TIMESTAMP()`), so an
 * `--until` means the same instant to every host whatever its zone or clock.
 */
import type { Statement } from '../db/statement.js';
import type { Until } from './decide.js';

const COLUMNS =
  'command, reason, paused_by, paused_at, until_at, (until_at IS NOT NULL AND until_at <= UTC_TIMESTAMP()) AS expired';

function untilSql(until: Until): { sql: string; params: unknown[] } {
  switch (until.kind) {
    case 'never':
      return { sql: 'NULL', params: [] };
    case 'in':
      return { sql: 'UTC_TIMESTAMP() + INTERVAL ? SECOND', params: [until.seconds] };
    case 'at':
      return { sql: '?', params: [until.utc] };
  }
}

/** @example const { sql, params } = pauseSql.select('deliveries send') */
export const pauseSql = {
  /** The pause of one command (one primary-key read: cheap enough before every batch). */
  select: (command: string): Statement => ({
    sql: `SELECT ${COLUMNS} FROM fcctl_pause WHERE command = ?`,
    params: [command],
  }),
  /** The same, locked, inside `pause`'s and `resume`'s transaction. */
  selectForUpdate: (command: string): Statement => ({
    sql: `SELECT ${COLUMNS} FROM fcctl_pause WHERE command = ? FOR UPDATE`,
    params: [command],
  }),
  /** Every pause on this database, expired ones too (`pause --list` says which). */
  list: (): Statement => ({ sql: `SELECT ${COLUMNS} FROM fcctl_pause ORDER BY command`, params: [] }),
  /** Sets (or replaces) a command's pause. */
  upsert: (p: { command: string; reason: string; pausedBy: string; until: Until }): Statement => {
    const u = untilSql(p.until);
    return {
      sql:
        `INSERT INTO fcctl_pause (command, reason, paused_by, paused_at, until_at) VALUES (?, ?, ?, UTC_TIMESTAMP(), ${u.sql}) ` +
        'ON DUPLICATE KEY UPDATE reason = VALUES(reason), paused_by = VALUES(paused_by), paused_at = UTC_TIMESTAMP(), until_at = VALUES(until_at)',
      params: [p.command, p.reason, p.pausedBy, ...u.params],
    };
  },
  /** Ends a command's pause. */
  delete: (command: string): Statement => ({ sql: 'DELETE FROM fcctl_pause WHERE command = ?', params: [command] }),
  /** The history: one row per pause and resume, with who, from which host and when. */
  event: (e: {
    command: string;
    action: 'pause' | 'resume';
    reason: string | null;
    until: Until;
    actor: string;
    host: string;
  }): Statement => {
    const u = untilSql(e.until);
    return {
      sql: `INSERT INTO fcctl_pause_event (command, action, reason, until_at, actor, host, create_time) VALUES (?, ?, ?, ${u.sql}, ?, ?, UTC_TIMESTAMP())`,
      params: [e.command, e.action, e.reason, ...u.params, e.actor, e.host],
    };
  },
};
