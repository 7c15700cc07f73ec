/**
 * The fleet's pause switch (issue 19 §3), the decisions, pure: which commands can be paused and on
 * which database, what `--until` means, and whether a row read from `fcctl_pause` (or a pause file)
 * pauses a run. `run.ts` orchestrates, `store.ts` reads and writes, `sql.ts` builds the statements;
 * the `fcctl_paused` gauge is `lib/metrics/paused.ts`.
 */
import { CONTROL } from '../ids.js';

/** The database a pausable command writes: its pause is kept there. */
export type PauseSide = 'fc' | 'sh';

/**
 * The cron commands that check the switch, by their own words, with the database whose
 * `fcctl_pause` table holds their pause (the one they write).
 */
export const PAUSABLE_COMMANDS: Readonly<Record<string, PauseSide>> = {
  'deliveries send': 'fc',
  'apply-command resolve-unknown': 'sh',
  'reconcile run': 'sh',
};

export type PausableCommand = keyof typeof PAUSABLE_COMMANDS;

/** What paused a run: the switch's row (or the pause file), with the reason and who set it. */
export interface PauseState {
  readonly command: string;
  readonly reason: string;
  /** `user@host` of `fcctl pause`, or `pause file PATH` */
  readonly pausedBy: string;
  /** ISO 8601 UTC (`…Z`); null for a pause file */
  readonly pausedAt: string | null;
  /** ISO 8601 UTC; null: until resumed */
  readonly until: string | null;
  readonly source: 'database' | 'file';
}

/** A pause row as `sql.ts` selects it (UTC DATETIMEs as strings, `expired` 0/1 from the database clock). */
export interface PauseRow {
  readonly command: string;
  readonly reason: string;
  readonly paused_by: string;
  readonly paused_at: string;
  readonly until_at: string | null;
  readonly expired: number | string;
}

/** Longest reason kept (the column's width). */
export const MAX_REASON_LENGTH = 512;
/** Furthest `--until` accepted: a year. */
export const MAX_UNTIL_SECONDS = 366 * 86400;

/**
 * The command a `pause`/`resume` names, from its words (`deliveries send`, or `"deliveries send"`
 * as one argument), or why it cannot be paused.
 * @example pausableCommand(['deliveries', 'send']) // { ok: true, command: 'deliveries send', side: 'fc' }
 */
export function pausableCommand(
  words: readonly string[],
): { ok: true; command: string; side: PauseSide } | { ok: false; message: string } {
  const command = words.join(' ').trim().split(/\s+/).join(' ');
  const known = Object.keys(PAUSABLE_COMMANDS)
    .map((c) => `'${c}'`)
    .join(', ');
  if (command === '') return { ok: false, message: `name the command to pause or resume: one of ${known}` };
  const side = PAUSABLE_COMMANDS[command];
  if (side === undefined)
    return { ok: false, message: `${JSON.stringify(command)} cannot be paused: the pausable commands are ${known}` };
  return { ok: true, command, side };
}

/** Why a `--reason` is refused (exit 2), or null: one line, not empty, at most 512 characters. */
export function reasonProblem(reason: string): string | null {
  if (reason.trim() === '') return '--reason must not be empty: say why, for whoever finds the fleet paused';
  if (CONTROL.test(reason)) return '--reason must be one line without control characters';
  if (reason.length > MAX_REASON_LENGTH) return `--reason is longer than ${MAX_REASON_LENGTH} characters`;
  return null;
}

/** When a pause ends: in so many seconds (the database's clock), at a UTC instant, or never. */
export type Until =
  | { readonly kind: 'never' }
  | { readonly kind: 'in'; readonly seconds: number }
  | { readonly kind: 'at'; readonly utc: string };

const DURATION = /^(\d{1,9})(s|m|h|d)$/;
const UNITS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86400 };
/** An instant with an explicit offset: a bare local time would mean another hour on another host. */
const INSTANT = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i;

/**
 * `--until TIME`: a duration from now (`90s`, `30m`, `2h`, `1d`) or an ISO 8601 instant with its
 * offset (`2026-12-01T18:00:00+08:00`, `…Z`), in the future and at most a year away.
 * @example parseUntil('2h', Date.parse('2026-12-01T00:00:00Z')) // { ok: true, until: { kind: 'in', seconds: 7200 } }
 */
export function parseUntil(text: string, nowMs: number): { ok: true; until: Until } | { ok: false; message: string } {
  const t = text.trim();
  const d = DURATION.exec(t);
  if (d) {
    const seconds = Number(d[1]) * UNITS[d[2]!]!;
    if (seconds < 1 || seconds > MAX_UNTIL_SECONDS)
      return { ok: false, message: `--until ${JSON.stringify(text)}: expected from 1s to 366d` };
    return { ok: true, until: { kind: 'in', seconds } };
  }
  const at = INSTANT.test(t) && onTheCalendar(t) ? Date.parse(t.replace(' ', 'T')) : NaN;
  if (!Number.isFinite(at)) {
    return {
      ok: false,
      message: `--until ${JSON.stringify(text)}: expected a duration (90s, 30m, 2h, 1d) or an ISO 8601 time with its offset (2026-12-01T18:00:00+08:00)`,
    };
  }
  if (at <= nowMs) return { ok: false, message: `--until ${JSON.stringify(text)} is in the past` };
  if (at - nowMs > MAX_UNTIL_SECONDS * 1000)
    return { ok: false, message: `--until ${JSON.stringify(text)} is more than 366 days away` };
  return {
    ok: true,
    until: { kind: 'at', utc: new Date(Math.floor(at / 1000) * 1000).toISOString().slice(0, 19).replace('T', ' ') },
  };
}

/** The written date and time exist (Date.parse rolls 2026-02-30 over into March, takes 24:00). */
function onTheCalendar(t: string): boolean {
  const [y, mo, d, h, mi, se] = [
    t.slice(0, 4),
    t.slice(5, 7),
    t.slice(8, 10),
    t.slice(11, 13),
    t.slice(14, 16),
    t.slice(17, 19),
  ].map((x) => Number(x) || 0) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth && h <= 23 && mi <= 59 && se <= 59;
}

/**
 * A UTC DATETIME as ISO 8601 with `Z`.
 * @example utcIso('2026-12-01 10:00:00') // '2026-12-01T10:00:00Z'
 */
export function utcIso(datetime: string | null): string | null {
  return datetime === null ? null : `${String(datetime).slice(0, 19).replace(' ', 'T')}Z`;
}

/**
 * Whether a row read from `fcctl_pause` pauses the run: an expired `until` counts as not paused.
 * @example pauseOfRow({ command: 'deliveries send', reason: 'x', paused_by: 'ops@h', paused_at: '2026-12-01 10:00:00', until_at: null, expired: 0 })?.reason // 'x'
 */
export function pauseOfRow(row: PauseRow | undefined): PauseState | null {
  if (row === undefined || Number(row.expired) === 1) return null;
  return {
    command: row.command,
    reason: row.reason,
    pausedBy: row.paused_by,
    pausedAt: utcIso(row.paused_at),
    until: utcIso(row.until_at),
    source: 'database',
  };
}

/**
 * The pause a `--pause-file` stands for: its first line as the reason (or a note when it has none).
 * @example pauseOfFile('deliveries send', '/run/fcctl/pause', 'disk full\nmore') // { reason: 'disk full', pausedBy: 'pause file /run/fcctl/pause', … }
 */
export function pauseOfFile(command: string, path: string, text: string): PauseState {
  const first = (text.split(/\r?\n/)[0] ?? '').trim().slice(0, MAX_REASON_LENGTH);
  return {
    command,
    reason: first === '' ? `pause file ${path} exists` : first,
    pausedBy: `pause file ${path}`,
    pausedAt: null,
    until: null,
    source: 'file',
  };
}

/** One row of `pause --list`. */
export function listRow(row: PauseRow, side: PauseSide): Record<string, unknown> {
  return {
    command: row.command,
    database: side.toUpperCase(),
    state: Number(row.expired) === 1 ? 'expired' : 'paused',
    reason: row.reason,
    pausedBy: row.paused_by,
    pausedAt: utcIso(row.paused_at),
    until: utcIso(row.until_at),
  };
}

/** The summary members of a paused run: who paused it, why, since and until when. */
export function pauseFields(p: PauseState): Record<string, unknown> {
  return { reason: p.reason, pausedBy: p.pausedBy, pausedAt: p.pausedAt, until: p.until, source: p.source };
}
