/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import type { PoolConnection } from 'mysql2/promise';
import { EnvironmentError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { pauseOfRow, type PauseRow, type PauseState, type Until } from './decide.js';
import { pauseSql } from './sql.js';

/** A missing table: the database predates the switch (`db init` creates it), so nobody can have paused. */
const noTable = (err: unknown) => (err as { code?: string }).code === 'ER_NO_SUCH_TABLE';

/** The pause of `command` on `db`, or null (none, expired, or no `fcctl_pause` table yet). */
export async function readPause(db: Db, command: string): Promise<PauseState | null> {
  const q = pauseSql.select(command);
  try {
    return pauseOfRow((await db.query<PauseRow>(q.sql, q.params))[0]);
  } catch (err) {
    if (noTable(err)) return null;
    throw err;
  }
}

const schemaHint =
  (side: string) =>
  (err: unknown): never => {
    if (noTable(err))
      throw new EnvironmentError(`the pause table fcctl_pause is missing: run \`fcctl db init --side ${side}\``, {
        cause: err,
      });
    throw err;
  };

/**
 * Sets (or replaces) the pause of `command`, and records it in the history, in one transaction.
 * Returns the pause it replaced (still in force) and the one now set.
 */
export async function setPause(
  db: Db,
  side: string,
  p: { command: string; reason: string; until: Until; actor: string; host: string },
): Promise<{ previous: PauseState | null; pause: PauseState }> {
  return db
    .transaction(async (conn: PoolConnection) => {
      const sel = pauseSql.selectForUpdate(p.command);
      const previous = pauseOfRow(((await conn.query(sel.sql, sel.params))[0] as PauseRow[])[0]);
      const up = pauseSql.upsert({ command: p.command, reason: p.reason, pausedBy: p.actor, until: p.until });
      await conn.query(up.sql, up.params);
      const ev = pauseSql.event({
        command: p.command,
        action: 'pause',
        reason: p.reason,
        until: p.until,
        actor: p.actor,
        host: p.host,
      });
      await conn.query(ev.sql, ev.params);
      const now = pauseOfRow(((await conn.query(sel.sql, sel.params))[0] as PauseRow[])[0]);
      if (now === null)
        throw new EnvironmentError(
          `the pause of ${p.command} was written but reads back as expired: is the database clock right?`,
        );
      return { previous, pause: now };
    })
    .catch(schemaHint(side));
}

/** Ends the pause of `command` (recorded in the history when there was one); returns the pause it ended, expired or not. */
export async function clearPause(
  db: Db,
  side: string,
  p: { command: string; reason: string | null; actor: string; host: string },
): Promise<{ ended: Record<string, unknown> | null }> {
  return db
    .transaction(async (conn: PoolConnection) => {
      const sel = pauseSql.selectForUpdate(p.command);
      const row = ((await conn.query(sel.sql, sel.params))[0] as PauseRow[])[0];
      if (row === undefined) return { ended: null };
      const del = pauseSql.delete(p.command);
      await conn.query(del.sql, del.params);
      const ev = pauseSql.event({
        command: p.command,
        action: 'resume',
        reason: p.reason,
        until: { kind: 'never' },
        actor: p.actor,
        host: p.host,
      });
      await conn.query(ev.sql, ev.params);
      const was = pauseOfRow(row);
      return { ended: { reason: row.reason, pausedBy: row.paused_by, expired: was === null } };
    })
    .catch(schemaHint(side));
}

/** Every pause row on `db`, expired ones too; none when the table does not exist yet. */
export async function listPauses(db: Db): Promise<PauseRow[]> {
  const q = pauseSql.list();
  try {
    return await db.query<PauseRow>(q.sql, q.params);
  } catch (err) {
    if (noTable(err)) return [];
    throw err;
  }
}
