import { EnvironmentError, UsageError } from '../cli/exit.js';
import type { Config, SettingSource } from '../config/config.js';
import type { Db } from '../db/connect.js';
import { selectServerZone } from './sql.js';
import { checkTimeZone, instantOffset, offsetOfMinutes } from './zone.js';

/**
 * The zone of the service's DATETIMEs (`serviceTimeZone`, SPEC §10): as configured, else the FC
 * database's own zone read from the server — never this host's `TZ`.
 */
export interface ServiceTimeZone {
  /** an IANA name or `±HH:MM`, as `offsetAt` takes it */
  readonly zone: string;
  /** the setting's source, or `fc-database` (the server's zone), `fc-database-offset` (its current offset only) */
  readonly source: Exclude<SettingSource, 'unset'> | 'fc-database' | 'fc-database-offset';
  /** where it came from, in words, for `doctor` */
  readonly from: string;
}

/** What the FC server says about its zone (one row of `selectServerZone`, `sql.ts`). */
export interface ServerZoneFacts {
  /** `@@session.time_zone` of fcctl's connection: openDb sets none, so the server's default or init_connect's */
  readonly sessionZone: string;
  /** `@@global.time_zone`: `SYSTEM`, a named zone or `+08:00` */
  readonly globalZone: string;
  /** `@@system_time_zone`: what the OS told the server at startup, usually an abbreviation (`UTC`, `CST`) */
  readonly systemZone: string;
  /** `UTC_TIMESTAMP()` as `YYYY-MM-DD HH:mm:ss` */
  readonly utcNow: string;
  /** minutes east of UTC of the global zone now; null when the server cannot convert to it */
  readonly offsetMinutes: number | null;
}

/**
 * Reads the FC server's zone facts.
 * @example const facts = await readServerZone(await ctx.fcDb()) // { globalZone: 'SYSTEM', systemZone: 'UTC', … }
 */
export async function readServerZone(db: Db): Promise<ServerZoneFacts> {
  const { sql, params } = selectServerZone();
  const [row] = await db.query<Record<string, string | number | null>>(sql, params);
  if (!row) throw new EnvironmentError(`${db.label}: the time zone query returned no row`);
  const text = (v: unknown) =>
    v === null || v === undefined ? '' : Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  return {
    sessionZone: text(row['session_zone']),
    globalZone: text(row['global_zone']),
    systemZone: text(row['system_zone']),
    utcNow: text(row['utc_now']),
    offsetMinutes:
      row['offset_minutes'] === null || row['offset_minutes'] === undefined ? null : Number(row['offset_minutes']),
  };
}

/** A server's offset text (`+8:00` on some servers) as `±HH:MM`; null when it is none. */
function serverOffset(value: string): string | null {
  const m = /^([+-])(\d{1,2}):(\d{2})$/.exec(value);
  if (!m) return null;
  const check = checkTimeZone(`${m[1]}${m[2]!.padStart(2, '0')}:${m[3]}`);
  return check.ok ? check.zone : null;
}

/** `system_time_zone` names trusted as zones: no abbreviation other than UTC's (CST, IST, EST… are ambiguous or lose DST). */
const isTrustedSystemName = (name: string) => name.includes('/') || ['UTC', 'GMT', 'UCT'].includes(name.toUpperCase());

/**
 * The service's zone from the FC server's facts (pure):
 * - `time_zone` a fixed offset → that offset;
 * - a named zone → that name, when `Intl` knows it;
 * - `SYSTEM` → `system_time_zone` when it is an IANA name (`UTC`, `Asia/Shanghai`) whose offset now
 *   is the server's;
 * - otherwise (`SYSTEM` with `CST`, a name `Intl` does not know) → the server's current offset,
 *   `fc-database-offset`: right until the zone's next DST change, so `doctor` warns.
 * @example zoneFromServer({ sessionZone: 'SYSTEM', globalZone: 'SYSTEM', systemZone: 'UTC', utcNow: '2026-10-21 02:05:00', offsetMinutes: 0 }).zone // 'UTC'
 */
export function zoneFromServer(facts: ServerZoneFacts): ServiceTimeZone {
  const said =
    facts.globalZone === 'SYSTEM'
      ? `time_zone SYSTEM, system_time_zone ${facts.systemZone || '(empty)'}`
      : `time_zone ${facts.globalZone}`;
  const session =
    facts.sessionZone !== '' && facts.sessionZone !== facts.globalZone
      ? `; this session's ${facts.sessionZone} ignored`
      : '';
  const fixed = serverOffset(facts.globalZone);
  if (fixed) return { zone: fixed, source: 'fc-database', from: `from the FC database: ${said}${session}` };
  const candidate = facts.globalZone === 'SYSTEM' ? facts.systemZone : facts.globalZone;
  const known =
    candidate !== '' && !candidate.startsWith('+') && !candidate.startsWith('-') && checkTimeZone(candidate).ok;
  if (known && facts.globalZone !== 'SYSTEM')
    return { zone: candidate, source: 'fc-database', from: `from the FC database: ${said}${session}` };
  let why = `${JSON.stringify(candidate)} is no IANA zone name`;
  if (known && isTrustedSystemName(candidate)) {
    const utcMs = Date.parse(`${facts.utcNow.replace(' ', 'T')}Z`);
    // The OS's zone name is only a hint: it must give the server's offset now.
    if (
      facts.offsetMinutes === null ||
      Number.isNaN(utcMs) ||
      instantOffset(utcMs, candidate) === offsetOfMinutes(facts.offsetMinutes)
    ) {
      return { zone: candidate, source: 'fc-database', from: `from the FC database: ${said}${session}` };
    }
    why = `${candidate}'s offset now is not the server's ${offsetOfMinutes(facts.offsetMinutes)}`;
  }
  if (facts.offsetMinutes === null)
    throw new EnvironmentError(
      `cannot tell the FC database's time zone (${said}): set serviceTimeZone (FCCTL_SERVICE_TIME_ZONE)`,
    );
  return {
    zone: offsetOfMinutes(facts.offsetMinutes),
    source: 'fc-database-offset',
    from: `the FC database's current offset: ${said}; ${why}. Set serviceTimeZone if the service's zone has daylight saving time`,
  };
}

const SOURCE_LABELS: Record<Exclude<SettingSource, 'unset'>, string> = {
  flag: '--service-time-zone',
  env: 'FCCTL_SERVICE_TIME_ZONE',
  'env-file': 'FCCTL_SERVICE_TIME_ZONE_FILE',
  config: 'the config file',
  'config-file': 'serviceTimeZoneFile',
};

/**
 * The configured zone, checked (exit 2 naming where it came from), or undefined when unset.
 * Connects nothing: `send` refuses a bad zone before it claims a row.
 * @example configuredServiceTimeZone(config)?.zone // 'Asia/Shanghai'
 */
export function configuredServiceTimeZone(config: Config): ServiceTimeZone | undefined {
  const { value, source } = config.serviceTimeZone;
  if (value === undefined || source === 'unset') return undefined;
  const check = checkTimeZone(value);
  if (!check.ok) {
    const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
    throw new UsageError(`serviceTimeZone from ${SOURCE_LABELS[source]}: ${shown} ${check.reason}`);
  }
  return { zone: check.zone, source, from: `from ${SOURCE_LABELS[source]}` };
}

/**
 * The zone `occurredAt` is computed in: the configured one (checked first, connecting nothing),
 * else the FC database's (one query).
 * @example const { zone } = await resolveServiceTimeZone(ctx.config, ctx.fcDb)
 */
export async function resolveServiceTimeZone(config: Config, fcDb: () => Promise<Db>): Promise<ServiceTimeZone> {
  return configuredServiceTimeZone(config) ?? zoneFromServer(await readServerZone(await fcDb()));
}

/**
 * How old a service's reading of the FC server's zone may be before it reads it again (issue 34
 * §9): a `SET GLOBAL time_zone`, or the DST change of a server known only by its offset, reaches
 * `occurredAt` within a minute — one query a minute, where a read per batch would be one per batch
 * (up to 200 a second at the latency bench's rate). A reconnect always reads it again.
 */
export const SERVICE_ZONE_MAX_AGE_MS = 60_000;

/**
 * The zone of a process that runs for weeks (`--follow`): the configured one as is; else the FC
 * server's, read again when `fresh` (a new session: a reconnect) or older than `maxAgeMs`. A read
 * that fails keeps the last zone known (the database's outage is the loop's to notice), and fails
 * only when none is. `onChange` hears each change of zone.
 * @example const zone = serviceZoneReader(config, ctx.fcDb, { clock: Date.now }); await zone(true) // { zone: 'UTC', … }
 */
export function serviceZoneReader(
  config: Config,
  fcDb: () => Promise<Db>,
  o: {
    readonly clock: () => number;
    readonly maxAgeMs?: number;
    readonly onChange?: (zone: ServiceTimeZone, was: ServiceTimeZone | null) => void;
  },
): (fresh?: boolean) => Promise<ServiceTimeZone> {
  const configured = configuredServiceTimeZone(config);
  let last: ServiceTimeZone | null = null;
  let readAt = 0;
  return async (fresh = false) => {
    if (configured) return configured;
    if (last && !fresh && o.clock() - readAt < (o.maxAgeMs ?? SERVICE_ZONE_MAX_AGE_MS)) return last;
    let zone: ServiceTimeZone;
    try {
      zone = zoneFromServer(await readServerZone(await fcDb()));
    } catch (err) {
      if (last && !fresh) return last;
      throw err;
    }
    readAt = o.clock();
    if (last?.zone !== zone.zone) o.onChange?.(zone, last);
    last = zone;
    return zone;
  };
}

/**
 * `Asia/Shanghai (from the FC database: time_zone …)`.
 * @example describeServiceTimeZone({ zone: 'UTC', source: 'env', from: 'from FCCTL_SERVICE_TIME_ZONE' }) // 'UTC (from FCCTL_SERVICE_TIME_ZONE)'
 */
export function describeServiceTimeZone(z: ServiceTimeZone): string {
  return `${z.zone} (${z.from})`;
}
