/** DATETIME text as the databases and fcctl's files hold it (SPEC §1: local times, no zone). */

/** A DATETIME as mysql2 returns it with `dateStrings` (a fraction, if any, is dropped by {@link normalizeDateTime}). */
const DATETIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.\d+)?$/;

/**
 * A DATETIME as manifest text: `yyyy-MM-dd HH:mm:ss` (a `T` separator is accepted, a fraction
 * dropped); null for anything else.
 * @example normalizeDateTime('2026-10-21T08:00:00') // '2026-10-21 08:00:00'
 */
export function normalizeDateTime(value: string): string | null {
  const m = DATETIME.exec(value);
  return m ? `${m[1]} ${m[2]}` : null;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/**
 * A DATETIME literal in the local zone, `YYYY-MM-DD HH:mm:ss`: the databases keep local times
 * (SPEC §1), so fcctl writes them exactly as the services do.
 * @example localDateTime(new Date(2026, 0, 2, 3, 4, 5)) // '2026-01-02 03:04:05'
 */
export function localDateTime(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}
