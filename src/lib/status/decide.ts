/**
 * `fcctl status`'s decisions, pure (issue 29 §2): the `--fail-if` list, which conditions hold in a
 * snapshot, the exit code, a run's ETA, and the raw counts shaped into a section. Tested without I/O.
 */
import { ExitCode } from '../cli/exit.js';
import type { Section } from '../explain/types.js';
import { servesScope } from '../service/sql.js';
import {
  type ClaimOwner,
  FAIL_CONDITIONS,
  type FailCondition,
  type Fleet,
  type QueueFacts,
  type ReasonCount,
  type ReconcileRunFacts,
  type Sides,
  type StatusFormat,
  type Unjudged,
} from './types.js';

/**
 * The conditions `--fail-if` names, comma-separated, or why the list is refused.
 * @example parseFailIf('dead,stale-workers') // { ok: true, conditions: ['dead', 'stale-workers'] }
 */
export function parseFailIf(value: string): { ok: true; conditions: FailCondition[] } | { ok: false; message: string } {
  const names = value.split(',').map((s) => s.trim());
  const unknown = names.filter((n) => !(FAIL_CONDITIONS as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0)
    return {
      ok: false,
      message: `unknown condition ${JSON.stringify(unknown[0] ?? value)}: expected a comma-separated list of ${FAIL_CONDITIONS.join(', ')}`,
    };
  return { ok: true, conditions: [...new Set(names as FailCondition[])] };
}

const rowsOf = <T extends object>(s: Section<T>): (T & { status: 'ok' }) | null => (s.status === 'ok' ? s : null);
const both = <T extends object>(s: Sides<T>) => [rowsOf(s.fc), rowsOf(s.sh)].filter((x) => x !== null);

/** What the conditions are decided from: the snapshot's sections (a section not read holds none). */
export interface ConditionFacts {
  readonly outbox: Section<Pick<QueueFacts, 'states' | 'due'>>;
  readonly applyCommands: Section<Pick<QueueFacts, 'states' | 'due' | 'dueAppKeys'>>;
  readonly fleet: Sides<Pick<Fleet, 'stale' | 'live'>>;
  readonly pauses: Sides<{ readonly pauses: readonly unknown[] }>;
  readonly reconcile: Section<{ readonly run: Pick<ReconcileRunFacts, 'failed'> | null }>;
}

/** The `--follow` service that works a queue: the relay (FC registry), the resolver (SH registry). */
export const RELAY_COMMAND = 'deliveries send';
export const RESOLVER_COMMAND = 'apply-command resolve-unknown';

/**
 * Rows due and no live service of `command` registered to take them: both sections read, rows
 * due, and no live row (a stale or gone one takes nothing) of that command in any state.
 */
function dueWithout(queue: Section<Pick<QueueFacts, 'due'>>, fleet: Section<Pick<Fleet, 'live'>>, command: string) {
  const q = rowsOf(queue);
  const f = rowsOf(fleet);
  return q !== null && f !== null && q.due > 0 && !f.live.some((l) => l.command === command && l.n > 0);
}

/**
 * Apply commands due for an app key with no live resolver of that app key registered: a resolver
 * settles only its own app key's commands (its registry row names it: service/sql.ts
 * registryCommand), so one working another key's is none for these.
 */
function applyDueWithout(queue: Section<Pick<QueueFacts, 'due' | 'dueAppKeys'>>, fleet: Section<Pick<Fleet, 'live'>>) {
  const q = rowsOf(queue);
  const f = rowsOf(fleet);
  if (q === null || f === null || q.due === 0) return false;
  const resolvers = f.live.filter((l) => l.n > 0).map((l) => l.command);
  // without the keys (not read): any live resolver, as before the keys were named
  const keys = q.dueAppKeys ?? null;
  if (keys === null) return !resolvers.some((c) => c === RESOLVER_COMMAND || c.startsWith(`${RESOLVER_COMMAND} `));
  return keys.some((key) => !resolvers.some((c) => servesScope(c, RESOLVER_COMMAND, key)));
}

/**
 * Whether each `--fail-if` condition holds: a DEAD outbox row or apply command, a pause in force
 * on either database, a stale registry row on either (counted over the whole registry, not the
 * listed rows; a gone one is not), a failed pair in the newest `--all` run; a live service in
 * outage, or not ready (any state but running, as its `/readyz` says); outbox rows due with no
 * live relay registered, apply commands due with no live resolver.
 */
export function conditionsOf(f: ConditionFacts): Record<FailCondition, boolean> {
  const dead = (s: Section<Pick<QueueFacts, 'states'>>) => (rowsOf(s)?.states['DEAD'] ?? 0) > 0;
  const live = both(f.fleet).flatMap((s) => s.live.filter((l) => l.n > 0));
  return {
    dead: dead(f.outbox) || dead(f.applyCommands),
    paused: both(f.pauses).some((s) => s.pauses.length > 0),
    'stale-workers': both(f.fleet).some((s) => s.stale > 0),
    'failed-pairs': (rowsOf(f.reconcile)?.run?.failed ?? 0) > 0,
    outage: live.some((l) => l.state === 'outage'),
    'not-ready': live.some((l) => l.state !== 'running'),
    'no-relay': dueWithout(f.outbox, f.fleet.fc, RELAY_COMMAND),
    'apply-due': applyDueWithout(f.applyCommands, f.fleet.sh),
  };
}

/** The sections each condition is judged from, by their names in the document. */
export const CONDITION_SECTIONS: Readonly<Record<FailCondition, readonly string[]>> = {
  dead: ['outbox', 'applyCommands'],
  paused: ['pauses.fc', 'pauses.sh'],
  'stale-workers': ['fleet.fc', 'fleet.sh'],
  'failed-pairs': ['reconcile'],
  outage: ['fleet.fc', 'fleet.sh'],
  'not-ready': ['fleet.fc', 'fleet.sh'],
  'no-relay': ['outbox', 'fleet.fc'],
  'apply-due': ['applyCommands', 'fleet.sh'],
};

/** A section of the facts by its name in the document (`fleet.sh`). */
function sectionNamed(f: ConditionFacts, name: string): Section<object> {
  const [key, side] = name.split('.') as [keyof ConditionFacts, 'fc' | 'sh' | undefined];
  const s = f[key];
  return side === undefined ? (s as Section<object>) : (s as Sides<object>)[side];
}

/**
 * The `--fail-if` conditions that cannot be judged: a section one needs was not read (its side
 * not configured, or not answering) and what was read does not make it hold. Such a condition is no pass: the exit code says so (3), as
 * DEAD apply commands on an SH database nobody read would otherwise go unseen.
 * @example unjudgedOf(shNotConfigured, ['dead']) // [{ condition: 'dead', sections: ['applyCommands'] }]
 */
export function unjudgedOf(f: ConditionFacts, wanted: readonly FailCondition[]): Unjudged[] {
  // one DEAD row read is enough: a condition that holds on what was read is judged (it fails, exit 1)
  const holds = conditionsOf(f);
  return wanted
    .filter((condition) => !holds[condition])
    .map((condition) => ({
      condition,
      sections: CONDITION_SECTIONS[condition].filter((name) => sectionNamed(f, name).status !== 'ok'),
    }))
    .filter((u) => u.sections.length > 0);
}

/** The database a section is read from. */
const sideOf = (section: string) => (section === 'outbox' || section.endsWith('.fc') ? 'FC' : 'SH');

/**
 * The one line that says which `--fail-if` conditions could not be judged and why, or null.
 * @example unjudgedLine([{ condition: 'dead', sections: ['applyCommands'] }], doc) // '--fail-if dead cannot be judged: applyCommands not read (SH database not configured: FCCTL_SH_DATABASE_URL)'
 */
export function unjudgedLine(unjudged: readonly Unjudged[], f: ConditionFacts): string | null {
  if (unjudged.length === 0) return null;
  const why = (name: string) => {
    const s = sectionNamed(f, name);
    const side = sideOf(name);
    return s.status === 'unreachable'
      ? `${side} database unreachable: ${s.error}`
      : `${side} database not configured: FCCTL_${side}_DATABASE_URL`;
  };
  const parts = unjudged.map(
    (u) => `${u.condition} cannot be judged: ${u.sections.map((n) => `${n} not read (${why(n)})`).join(', ')}`,
  );
  return `--fail-if ${parts.join('; ')}`;
}

/** The conditions asked for that hold, in `--fail-if`'s order. */
export function failingOf(
  conditions: Readonly<Record<FailCondition, boolean>>,
  wanted: readonly FailCondition[],
): FailCondition[] {
  return wanted.filter((c) => conditions[c]);
}

/**
 * 3 when a section's side did not answer, or a `--fail-if` condition could not be judged (the
 * health cannot be judged), else 1 when a `--fail-if` condition holds, else 0.
 * @example statusExitCode({ unreachable: 0, unjudged: 0, failing: ['dead'] }) // 1
 */
export function statusExitCode(s: {
  unreachable: number;
  unjudged: number;
  failing: readonly FailCondition[];
}): number {
  if (s.unreachable > 0 || s.unjudged > 0) return ExitCode.ENVIRONMENT;
  return s.failing.length > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * Seconds until a run's remaining pairs are finished, at the rate its finished pairs took since it
 * began: 0 with none remaining, null before any is finished.
 * @example runEta({ total: 10, finished: 4, elapsedSeconds: 60 }) // 90
 */
export function runEta(r: { total: number; finished: number; elapsedSeconds: number }): number | null {
  const remaining = r.total - r.finished;
  if (remaining <= 0) return 0;
  if (r.finished === 0 || r.elapsedSeconds <= 0) return null;
  return Math.round((remaining * r.elapsedSeconds) / r.finished);
}

/** The process of a reconcile claim token `owner:n` (one process makes many claims). */
export const processOfToken = (token: string) => token.replace(/:\d+$/, '');

/** The run's facts from its counts per state and its live claims. */
export function reconcileRunOf(
  runId: string,
  counts: ReadonlyArray<{ state: string; n: number; withDifferences: number; started: string | null; elapsed: number }>,
  claimTokens: readonly string[],
): ReconcileRunFacts {
  const n = (state: string) => counts.find((c) => c.state === state)?.n ?? 0;
  const total = counts.reduce((a, c) => a + c.n, 0);
  const started = counts.map((c) => c.started).filter((s): s is string => s !== null);
  const done = n('DONE');
  const failed = n('FAILED');
  return {
    runId,
    startedAt: started.sort()[0] ?? null,
    total,
    done,
    failed,
    pending: n('PENDING'),
    claimed: n('CLAIMED'),
    withDifferences: counts.reduce((a, c) => a + (c.state === 'DONE' ? c.withDifferences : 0), 0),
    processes: [...new Set(claimTokens.map(processOfToken))].sort(),
    etaSeconds: runEta({
      total,
      finished: done + failed,
      elapsedSeconds: Math.max(0, ...counts.map((c) => c.elapsed)),
    }),
  };
}

/**
 * Below this many rows (InnoDB's estimate) the history state is counted exactly: reading the whole
 * index then costs tens of milliseconds, and an estimate would only puzzle.
 */
export const EXACT_BELOW_ROWS = 200_000;

/** Whether the history state is counted exactly or estimated from the table's estimated rows. */
export function countMode(tableRows: number, exactCounts: boolean): 'exact' | 'estimate' {
  return exactCounts || tableRows < EXACT_BELOW_ROWS ? 'exact' : 'estimate';
}

/**
 * The raw counts of the outbox or the apply commands as one section's facts. `counts`: exact rows
 * per state, of every state or of the open ones only; then the history state is the table's
 * estimated rows less the open ones (never below 0), and is named in `estimated`.
 */
export function queueOf(
  allStates: readonly string[],
  historyState: string,
  raw: {
    counts: ReadonlyArray<{ state: string; n: number }>;
    /** InnoDB's estimate of the table's rows when the history state was not counted, else null */
    estimatedTableRows: number | null;
    accepted: { last5m: number; last1h: number };
    due: number;
    held: number | null;
    stuck: number;
    oldestDueAgeSeconds: number | null;
    dead: readonly ReasonCount[];
    failed: readonly ReasonCount[];
    warnings: readonly string[];
  },
): QueueFacts {
  const states: Record<string, number> = Object.fromEntries(allStates.map((s) => [s, 0]));
  for (const s of raw.counts) states[s.state] = s.n;
  const estimate = raw.estimatedTableRows;
  if (estimate !== null) {
    const open = raw.counts.filter((c) => c.state !== historyState).reduce((a, c) => a + c.n, 0);
    states[historyState] = Math.max(0, estimate - open);
  }
  return {
    states,
    estimated: estimate === null ? [] : [historyState],
    due: raw.due,
    held: raw.held,
    stuck: raw.stuck,
    oldestDueAgeSeconds: raw.oldestDueAgeSeconds,
    reasons: { DEAD: raw.dead, FAILED: raw.failed },
    accepted: raw.accepted,
    warnings: raw.warnings,
  };
}

/** A claim owner `host:pid:random` split into its host and pid (another shape keeps neither). */
export function claimOwnerOf(owner: string, rows: number, expiresAt: string): ClaimOwner {
  const m = /^(.*):(\d{1,9}):[0-9a-f]+$/.exec(owner);
  return { owner, host: m ? m[1]! : null, pid: m ? Number(m[2]) : null, rows, expiresAt };
}

/**
 * What `status` does: one snapshot, the live view (`--watch` on a terminal), or refuses `--watch`
 * off a terminal without `--json` (nothing to redraw, and a script asked for no JSON), and the one
 * line (`--format line`) with `--json` (two formats) or `--watch` (a status bar runs it again itself).
 * @example statusMode({ watch: true, json: false, format: 'report', interactive: false }) // { ok: false, message: … }
 */
export function statusMode(o: {
  watch: boolean;
  json: boolean;
  format: StatusFormat;
  interactive: boolean;
}): { ok: true; mode: 'watch' | 'snapshot' } | { ok: false; message: string } {
  if (o.format === 'line' && o.json)
    return { ok: false, message: '--format line and --json are two formats: pass one of them' };
  if (o.format === 'line' && o.watch)
    return {
      ok: false,
      message: '--format line prints one snapshot: without --watch (a status bar runs it again itself)',
    };
  if (!o.watch || o.json) return { ok: true, mode: 'snapshot' };
  if (!o.interactive) return { ok: false, message: '--watch needs a terminal: off one, pass --json for one snapshot' };
  return { ok: true, mode: 'watch' };
}
