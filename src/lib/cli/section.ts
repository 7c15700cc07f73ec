/**
 * A read-only report's sections (`fcctl explain`, `fcctl status`, `reconcile history`): each reads
 * one database, and a side that is not configured or does not answer is that section's state,
 * never the whole report's.
 */
import type { Db } from '../db/connect.js';
import type { Ctx } from './context.js';
import { UsageError } from './exit.js';

/** A section that could not be read: its side is not configured, or did not answer. */
export type Unread = { readonly status: 'not configured' } | { readonly status: 'unreachable'; readonly error: string };

/** A section as shown: its rows, or why there are none. */
export type Section<T> = ({ readonly status: 'ok' } & T) | Unread;

export const NOT_CONFIGURED: Unread = { status: 'not configured' };

/** A read that did not answer by its deadline. */
export class NoAnswer extends Error {}

/**
 * How long one section's reads may take, its connect included. A database that refuses is known at
 * once (the connect fails); one that stopped answering mid-connection would hold the report (and
 * `status --watch`) for ever: its section says "no answer in 10 s" instead, the others are shown.
 */
export const SECTION_DEADLINE_MS = 10_000;

/**
 * The read, or its failure once `ms` have passed without an answer (the read itself is left to the
 * pool's close). The timer holds no process open: a read still waiting holds its socket, and one a
 * command stopped waiting for (a view left by q) must not keep the process for the rest of `ms`.
 */
export async function withDeadline<T>(read: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswer(`no answer in ${ms / 1000} s`)), ms).unref();
  });
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A side's database, opened on first use; null when the side is not configured. */
export type OpenDb = (() => Promise<Db>) | null;

/** Reads one section of a side: its rows, or why there are none. */
export type ReadSection = <T extends object>(open: OpenDb, read: (db: Db) => Promise<T>) => Promise<Section<T>>;

/**
 * A reader of one report's sections. A failure is the section's (its first line), a usage error
 * still the command's. A connect and reads that have not answered in `deadlineMs` fail the section
 * ("no answer in 10 s"): a database that stops answering without refusing cannot hold the report.
 * A side that could not be connected to, or did not answer in time, is not asked again by the
 * same reader: its later sections are unreachable at once with the same error, so a report that
 * reads its sections one after another waits one deadline per side, not one per section.
 * @example const section = sectionReader(); const s = await section(deps.fcDb, (db) => readOutbox(db))
 */
export function sectionReader(deadlineMs = SECTION_DEADLINE_MS): ReadSection {
  const down = new Map<() => Promise<Db>, Unread>();
  return async <T extends object>(open: OpenDb, read: (db: Db) => Promise<T>): Promise<Section<T>> => {
    if (open === null) return NOT_CONFIGURED;
    const known = down.get(open);
    if (known !== undefined) return known;
    let opened = false;
    try {
      const reading = open().then((db) => {
        opened = true;
        return read(db);
      });
      return { status: 'ok', ...(await withDeadline(reading, deadlineMs)) };
    } catch (err) {
      if (err instanceof UsageError) throw err;
      const unread: Unread = { status: 'unreachable', error: (err as Error).message.split('\n')[0] ?? '' };
      if (!opened || err instanceof NoAnswer) down.set(open, unread);
      return unread;
    }
  };
}

/**
 * How long a report's close waits for a statement still in flight: a read it stopped waiting for
 * (past its deadline, or a view left by q) holds nothing worth waiting for, and the process ends
 * at once rather than after the pools' usual grace.
 */
export const REPORT_CLOSE_GRACE_MS = 500;

/** The databases a report may read: a side without a URL is null ("not configured", never guessed); neither is exit 2. */
export function configuredDatabases(ctx: Ctx): { fcDb: OpenDb; shDb: OpenDb } {
  const has = (name: 'fcDatabaseUrl' | 'shDatabaseUrl') => Boolean(ctx.config[name].value);
  if (!has('fcDatabaseUrl') && !has('shDatabaseUrl'))
    throw new UsageError(
      'neither the FC nor the SH database is configured (FCCTL_FC_DATABASE_URL, FCCTL_SH_DATABASE_URL)',
    );
  const options = { closeGraceMs: REPORT_CLOSE_GRACE_MS };
  return {
    fcDb: has('fcDatabaseUrl') ? () => ctx.fcDb(options) : null,
    shDb: has('shDatabaseUrl') ? () => ctx.shDb(options) : null,
  };
}
