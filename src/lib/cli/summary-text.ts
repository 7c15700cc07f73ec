import { formatDuration } from './progress.js';
import { cellText, type Row } from './table.js';

/**
 * A key naming a duration in seconds: `…Seconds` and the run's own `seconds`, not an instant
 * (`finishedAtSeconds`, `nowSeconds`: seconds since 1970, no duration to read).
 */
const DURATION_KEY = /(^s|.S)econds$/;
const INSTANT_KEY = /(At|^now)Seconds$/;

/**
 * A summary value as a person reads it on a terminal: a duration of a minute or more also as
 * days, hours and minutes — `oldestPendingAgeSeconds 3890175` says nothing at a glance,
 * `45d00h36m (3890175 s)` does (issue 36 §16); nothing (null) as `none`. JSON keeps the number.
 * @example summaryValueText('oldestPendingAgeSeconds', 3890175) // '45d00h36m (3890175 s)'
 */
export function summaryValueText(key: string, value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (
    DURATION_KEY.test(key) &&
    !INSTANT_KEY.test(key) &&
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= 60
  )
    return `${formatDuration(value)} (${value} s)`;
  if (Array.isArray(value)) return listText(value);
  if (isPlainObject(value)) return mapText(value);
  return cellText(value);
}

/**
 * The rows of a summary on a terminal, never a JSON object (issue 36 §16): a member whose value is
 * a map of scalars is one row, `SNAPSHOT_HASH_MISMATCH 1, INVALID_ROUTING_KEY 3` (counts of 0
 * left out, `none` when nothing is left); a member holding maps is one row per member, its key
 * dotted (`run.byState  DONE 6`).
 * @example summaryRows({ failedByReason: { NACK: 2, TIMEOUT: 0 } }) // [{ key: 'failedByReason', value: 'NACK 2' }]
 */
export function summaryRows(summary: Readonly<Record<string, unknown>>, prefix = ''): Row[] {
  const rows: Row[] = [];
  for (const [key, value] of Object.entries(summary)) {
    if (isPlainObject(value) && Object.values(value).some((v) => isPlainObject(v) || Array.isArray(v)))
      rows.push(...summaryRows(value, `${prefix}${key}.`));
    else rows.push({ key: `${prefix}${key}`, value: summaryValueText(key, value) });
  }
  return rows;
}

/**
 * A map's key as shown before its value: as it is when it is one word (a code, a state); else
 * quoted, as JSON quotes it — a key is often text from elsewhere (a flow center's branch), and one
 * holding spaces or commas (`CREATED 40, IDEMPOTENT`) would read as other members' counts.
 */
function keyText(key: string): string {
  return /^[\p{L}\p{N}_.:/@-]+$/u.test(key) ? key : JSON.stringify(key);
}

/** `A 1, B 2`: a map's members (counts of 0 left out), `none` when nothing is left. */
function mapText(map: Readonly<Record<string, unknown>>): string {
  const parts = Object.entries(map)
    .filter(([, v]) => v !== 0)
    .map(([k, v]) => `${keyText(k)} ${summaryValueText(k, v)}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/** A list's items, `, ` between scalars and `; ` between maps (each as `k v` pairs); `none` when empty. */
function listText(list: readonly unknown[]): string {
  if (list.length === 0) return 'none';
  if (!list.some(isPlainObject)) return list.map((item) => summaryValueText('', item)).join(', ');
  return list
    .map((item) =>
      isPlainObject(item)
        ? Object.entries(item)
            .map(([k, v]) => `${keyText(k)} ${summaryValueText(k, v)}`)
            .join(' ')
        : summaryValueText('', item),
    )
    .join('; ');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
