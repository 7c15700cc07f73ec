const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/**
 * An instant as ISO 8601 in a zone `offsetMinutes` east of UTC, milliseconds and the offset always
 * written (`+00:00`, never `Z`): the `ts` of every JSON line fcctl prints (docs/output.md).
 * The default offset is the process's local one at that instant (the `TZ` environment variable).
 * @example isoWithOffset(new Date('2026-12-01T02:05:00.123Z'), 480) // '2026-12-01T10:05:00.123+08:00'
 */
export function isoWithOffset(date: Date, offsetMinutes = -date.getTimezoneOffset()): string {
  const shifted = new Date(date.getTime() + offsetMinutes * 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return (
    `${pad(shifted.getUTCFullYear(), 4)}-${pad(shifted.getUTCMonth() + 1)}-${pad(shifted.getUTCDate())}` +
    `T${pad(shifted.getUTCHours())}:${pad(shifted.getUTCMinutes())}:${pad(shifted.getUTCSeconds())}.${pad(shifted.getUTCMilliseconds(), 3)}` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

/** What a `ts` looks like: date, time with milliseconds, and the offset. */
export const TS_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}$/;
