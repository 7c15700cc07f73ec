const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/**
 * A DATETIME literal in the local zone, `YYYY-MM-DD HH:mm:ss`: the databases keep local times
 * (SPEC §1), so fcctl writes them exactly as the services do.
 * @example localDateTime(new Date(2026, 0, 2, 3, 4, 5)) // '2026-01-02 03:04:05'
 */
export function localDateTime(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}
