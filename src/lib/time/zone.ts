/**
 * Time zones of the service's DATETIMEs (SPEC §1: local times, no offset stored) and the UTC offset
 * of one such wall-clock time, for `occurredAt` (SPEC §10). Pure: never reads the process's `TZ`;
 * IANA zones go through `Intl` (the ICU data Node ships), fixed offsets are arithmetic.
 */

/** Java's `ZoneOffset` range: ±18:00. */
const MAX_OFFSET_SECONDS = 18 * 3600;
const OFFSET = /^([+-])(\d{2}):(\d{2})$/;
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/;
/**
 * Three-letter names `Intl` accepts that are IANA zones of their own. Any other three letters
 * (`CST`, `IST`, `BST`, `PST`…) are ICU's copies of Java's old short ids — `CST` is America/Chicago
 * there, while a server in Shanghai calls its zone CST too — so they are refused as ambiguous.
 */
const IANA_THREE_LETTERS = new Set([
  'UTC',
  'UCT',
  'GMT',
  'EST',
  'MST',
  'HST',
  'CET',
  'EET',
  'MET',
  'WET',
  'PRC',
  'ROC',
  'ROK',
]);

type Zone =
  | { readonly kind: 'fixed'; readonly offset: string }
  | { readonly kind: 'iana'; readonly format: Intl.DateTimeFormat };

export type ZoneCheck = { readonly ok: true; readonly zone: string } | { readonly ok: false; readonly reason: string };

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * `+08:00` for 28800 seconds; seconds are kept when there are some (`+08:05:43`, a zone's local
 * mean time before 1901), as Java's `ZoneOffset.toString` does — never `Z`.
 */
function formatOffset(seconds: number): string {
  const a = Math.abs(seconds);
  const text = `${seconds < 0 ? '-' : '+'}${pad(Math.floor(a / 3600))}:${pad(Math.floor((a % 3600) / 60))}`;
  return a % 60 === 0 ? text : `${text}:${pad(a % 60)}`;
}

/**
 * Whether a value names a zone fcctl can compute offsets in: an IANA name `Intl` knows
 * (`Asia/Shanghai`, `UTC`, `America/New_York`) or a fixed offset `±HH:MM` within ±18:00. Anything
 * starting with a sign is an offset or nothing (`Intl` of newer Node versions reads `+08` as a zone;
 * fcctl answers the same on every version). The returned zone is the value, `-00:00` as `+00:00`.
 * @example checkTimeZone('Asia/Shanghai') // { ok: true, zone: 'Asia/Shanghai' }
 * @example checkTimeZone('+25:00').ok // false
 */
export function checkTimeZone(value: string): ZoneCheck {
  if (value === '') return { ok: false, reason: 'is empty' };
  if (value.startsWith('+') || value.startsWith('-')) {
    const m = OFFSET.exec(value);
    const seconds = m ? Number(m[2]) * 3600 + Number(m[3]) * 60 : NaN;
    if (!m || Number(m[3]) > 59 || seconds > MAX_OFFSET_SECONDS)
      return { ok: false, reason: 'is not an offset ±HH:MM between -18:00 and +18:00' };
    return { ok: true, zone: formatOffset(m[1] === '-' ? -seconds : seconds) };
  }
  if (/^[A-Za-z]{3}$/.test(value) && !IANA_THREE_LETTERS.has(value.toUpperCase())) {
    return {
      ok: false,
      reason:
        'is an abbreviation, not an IANA zone name (CST is China, Cuba or US Central): give a name such as Asia/Shanghai',
    };
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch {
    return { ok: false, reason: 'is not an IANA time zone name (such as Asia/Shanghai) or an offset such as +08:00' };
  }
  return { ok: true, zone: value };
}

const zones = new Map<string, Zone>();

function zoneOf(name: string): Zone {
  let zone = zones.get(name);
  if (zone) return zone;
  const check = checkTimeZone(name);
  if (!check.ok) throw new Error(`time zone ${JSON.stringify(name.slice(0, 80))} ${check.reason}`);
  zone =
    check.zone.startsWith('+') || check.zone.startsWith('-')
      ? { kind: 'fixed', offset: check.zone }
      : {
          kind: 'iana',
          format: new Intl.DateTimeFormat('en-US', {
            timeZone: name,
            hourCycle: 'h23',
            year: 'numeric',
            month: 'numeric',
            day: 'numeric',
            hour: 'numeric',
            minute: 'numeric',
            second: 'numeric',
          }),
        };
  // Few distinct zones exist in a run; the bound only keeps a misuse from growing the map.
  if (zones.size >= 64) zones.clear();
  zones.set(name, zone);
  return zone;
}

/** Milliseconds of a wall-clock time read as if it were UTC (any year, no two-digit-year mapping). */
function wallMs(y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d);
  t.setUTCHours(h, mi, s, 0);
  return t.getTime();
}

/** The zone's offset, in seconds, at one instant (whole seconds). */
function offsetAtInstant(format: Intl.DateTimeFormat, ms: number): number {
  const p: Record<string, number> = {};
  for (const part of format.formatToParts(ms)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Math.round((wallMs(p['year']!, p['month']!, p['day']!, p['hour']!, p['minute']!, p['second']!) - ms) / 1000);
}

/**
 * A zone's offset at an instant (no wall time to resolve), formatted as {@link offsetAt} does.
 * @example instantOffset(Date.UTC(2026, 6, 1), 'America/New_York') // '-04:00'
 */
export function instantOffset(ms: number, zone: string): string {
  const z = zoneOf(zone);
  return z.kind === 'fixed' ? z.offset : formatOffset(offsetAtInstant(z.format, Math.floor(ms / 1000) * 1000));
}

/**
 * A count of minutes east of UTC as an offset.
 * @example offsetOfMinutes(-330) // '-05:30'
 */
export function offsetOfMinutes(minutes: number): string {
  return formatOffset(minutes * 60);
}

const DAY_MS = 86_400_000;

/**
 * The offset (seconds) of a wall-clock time, as Java's `ZonedDateTime.of(localDateTime, zone)`
 * resolves it: one valid offset → it; an overlap (clocks set back) → the earlier offset, the one
 * before the transition; a gap (clocks set forward) → the offset before the gap, so that the wall
 * time and this offset name the instant Java picks (Java moves the wall time forward by the gap
 * and prints the offset after it: the same instant). The offsets on either side are read a day
 * away, so one transition a day at most is assumed (the tz database has none closer).
 */
function resolveOffset(format: Intl.DateTimeFormat, wall: number): number {
  const before = offsetAtInstant(format, wall - DAY_MS);
  const after = offsetAtInstant(format, wall + DAY_MS);
  const valid = [...new Set([before, after])].filter((o) => offsetAtInstant(format, wall - o * 1000) === o);
  if (valid.length === 1) return valid[0]!;
  if (valid.length === 2) return Math.max(...valid);
  return before;
}

/** Offsets of a zone's local hours; null: a transition falls inside that hour (computed per call). */
const hours = new Map<string, string | null>();
const MAX_HOURS = 10_000;

/**
 * The UTC offset of a local DATETIME (`YYYY-MM-DD HH:mm:ss`) in a zone, DST-aware, resolved as
 * Java's `ZonedDateTime.of` does (see above). Called per published row: offsets are cached per
 * zone and local hour (bounded), an hour holding a transition is computed exactly every time.
 * @example offsetAt('2026-10-21 10:05:00', 'Asia/Shanghai') // '+08:00'
 * @example offsetAt('2026-07-01 12:00:00', 'America/New_York') // '-04:00'
 * @example offsetAt('2026-03-08 02:30:00', 'America/New_York') // '-05:00' (in the gap: = 03:30-04:00)
 * @example offsetAt('2026-11-01 01:30:00', 'America/New_York') // '-04:00' (the overlap: the earlier)
 */
export function offsetAt(local: string, zone: string): string {
  if (!LOCAL.test(local)) throw new Error(`not a DATETIME: ${JSON.stringify(local.slice(0, 40))}`);
  const z = zoneOf(zone);
  if (z.kind === 'fixed') return z.offset;
  // the date and hour (`2026-10-21 10`); a `T` instead of the space is only another key
  const key = `${zone}\u0000${local.slice(0, 13)}`;
  const cached = hours.get(key);
  if (cached) return cached;
  const [y, mo, d, h, mi, s] = LOCAL.exec(local)!.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (cached === undefined) {
    const first = resolveOffset(z.format, wallMs(y, mo, d, h, 0, 0));
    const last = resolveOffset(z.format, wallMs(y, mo, d, h, 59, 59));
    // One transition at most: the hour's offsets are a step, so equal ends mean one offset throughout.
    const hour = first === last ? formatOffset(first) : null;
    if (hours.size >= MAX_HOURS) hours.delete(hours.keys().next().value!);
    hours.set(key, hour);
    if (hour) return hour;
  }
  return formatOffset(resolveOffset(z.format, wallMs(y, mo, d, h, mi, s)));
}
