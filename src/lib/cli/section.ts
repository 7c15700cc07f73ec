/**
 * A read-only report's sections (`fcctl explain`, `fcctl status`): each reads one database, and a
 * side that is not configured or does not answer is that section's state, never the whole report's.
 */
import type { Db } from '../db/connect.js';
import type { Ctx } from './context.js';
import { UsageError } from './exit.js';

/** A section that could not be read: its side is not configured, or did not answer. */
export type Unread = { readonly status: 'not configured' } | { readonly status: 'unreachable'; readonly error: string };

/** A section as shown: its rows, or why there are none. */
export type Section<T> = ({ readonly status: 'ok' } & T) | Unread;

export const NOT_CONFIGURED: Unread = { status: 'not configured' };

/**
 * The read, or its failure once `ms` have passed without an answer (the read itself is left to the
 * pool's close). The timer holds no process open: a read still waiting holds its socket, and one a
 * command stopped waiting for (a view left by q) must not keep the process for the rest of `ms`.
 */
export async function withDeadline<T>(read: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms).unref();
  });
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads one section; a failure is the section's (its first line), a usage error still the
 * command's. With `deadlineMs`, a connect and reads that have not answered by then fail the section ("no answer
 * in N s"): a database that stops answering without refusing cannot hold the whole report.
 */
export async function readSection<T extends object>(
  open: (() => Promise<Db>) | null,
  read: (db: Db) => Promise<T>,
  deadlineMs: number | null = null,
): Promise<Section<T>> {
  if (open === null) return NOT_CONFIGURED;
  try {
    const reading = open().then(read);
    return { status: 'ok', ...(await (deadlineMs === null ? reading : withDeadline(reading, deadlineMs))) };
  } catch (err) {
    if (err instanceof UsageError) throw err;
    return { status: 'unreachable', error: (err as Error).message.split('\n')[0] ?? '' };
  }
}

/**
 * How long a report's close waits for a statement still in flight: a read it stopped waiting for
 * (past its deadline, or a view left by q) holds nothing worth waiting for, and the process ends
 * at once rather than after the pools' usual grace.
 */
export const REPORT_CLOSE_GRACE_MS = 500;

/** The databases a report may read: a side without a URL is null ("not configured", never guessed); neither is exit 2. */
export function configuredDatabases(ctx: Ctx): { fcDb: (() => Promise<Db>) | null; shDb: (() => Promise<Db>) | null } {
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
