/**
 * Throttling on the database (issue 19 §2; pt-online-schema-change's and pt-table-checksum's
 * `--max-load` and `--max-lag`, gh-ost's throttle): before each page or batch a runner awaits
 * {@link Throttle.wait}, which returns at once while the database is under its limits (read at
 * most every {@link THROTTLE_CHECK_EVERY_MS}) and otherwise polls it (every second) until it is,
 * reporting a `throttled` start and end. A wait also ends on the stop signal, on the runner's pause
 * switch (read on every poll) and at its deadline ({@link WaitOptions}): a throttle may last hours.
 *
 * - `--max-load Threads_running=25[,VAR=N…]`: `SHOW GLOBAL STATUS` of the database being read;
 *   throttled while a value is above its limit (`>`, as pt-osc: Threads_running counts the
 *   checking thread itself, so `=1` is over as soon as one other query runs).
 * - `--max-lag S`: `Seconds_Behind_Master` of `SHOW REPLICA STATUS` on the replica (`--replica-url`,
 *   else the database being read); throttled while above S, or while replication is stopped (NULL).
 *
 * The first check is made when the throttle is opened, before the command writes anything: a
 * status variable MariaDB does not have is exit 2, a database that is not a replica is exit 3.
 */
import { EnvironmentError, UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';
import { type Db, openDb } from './connect.js';

/** How often a throttled command looks again. */
export const THROTTLE_POLL_MS = 1000;

/**
 * A reading under the limits stands this long: `wait()` within it returns at once without a
 * query. One `SHOW GLOBAL STATUS` costs about 1 ms (it materializes every variable), a manifest
 * page a few: checked before every page it cost a scan 10–20 % (bench/throttle.mjs); at most
 * twice a second it costs nothing measurable, and a load that rises is still seen within 0.5 s.
 */
export const THROTTLE_CHECK_EVERY_MS = 500;

export interface LoadLimit {
  /** a status variable name as given (MariaDB compares names without case) */
  readonly variable: string;
  readonly max: number;
}

export interface ThrottleLimits {
  readonly maxLoad: readonly LoadLimit[];
  /** null: lag not checked */
  readonly maxLagSeconds: number | null;
}

/** What one check read. `lag` is absent when not asked for; null when replication is stopped. */
export interface ThrottleReadings {
  /** by lower-cased variable name; NaN for a value that is not a number */
  readonly status: ReadonlyMap<string, number>;
  readonly lag?: { readonly seconds: number | null; readonly io: string; readonly sql: string };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A refused part as a message shows it: quoted, escaped (NUL, newlines), at most 40 characters. */
const shown = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);

/**
 * Status variables that only grow (counters since the server started, or a high-water mark): a
 * limit on one is crossed once and then throttles for ever, so it is refused. By prefix (every
 * member of these families counts), then by name; anything else (Threads_running,
 * Threads_connected, Innodb_row_lock_current_waits, Innodb_buffer_pool_pages_dirty, …) is taken
 * as a gauge.
 */
const COUNTER_PREFIXES = [
  'com_',
  'bytes_',
  'innodb_rows_',
  'handler_',
  'select_',
  'sort_',
  'created_tmp_',
  'aborted_',
  'opened_',
  'table_locks_',
  'key_read',
  'key_write',
  'feature_',
  'ssl_accept',
  'ssl_connect',
  'ssl_finished',
];
const COUNTERS = new Set([
  'uptime',
  'uptime_since_flush_status',
  'questions',
  'queries',
  'connections',
  'slow_queries',
  'threads_created',
  'max_used_connections',
  'empty_queries',
  'rows_read',
  'rows_sent',
  'rows_tmp_read',
  'innodb_data_read',
  'innodb_data_reads',
  'innodb_data_writes',
  'innodb_data_written',
  'innodb_data_fsyncs',
  'innodb_buffer_pool_read_requests',
  'innodb_buffer_pool_reads',
  'innodb_buffer_pool_write_requests',
  'innodb_log_writes',
  'innodb_log_write_requests',
  'innodb_os_log_written',
  'innodb_os_log_fsyncs',
  'innodb_pages_created',
  'innodb_pages_read',
  'innodb_pages_written',
  'innodb_row_lock_waits',
  'innodb_row_lock_time',
  'innodb_row_lock_time_max',
  'innodb_deadlocks',
  'binlog_commits',
  'binlog_bytes_written',
  'qcache_hits',
  'qcache_inserts',
  'qcache_not_cached',
  'flush_commands',
  'access_denied_errors',
]);

/**
 * Why a limit can never work, or null: Threads_running below 1 (the check's own query is running,
 * so `Threads_running=0` is never met), or a counter ({@link COUNTERS}: it only grows).
 * @example loadLimitProblem('Uptime', 100) // 'Uptime only grows (a counter since the server started): …'
 */
export function loadLimitProblem(variable: string, max: number): string | null {
  const name = variable.toLowerCase();
  if (name === 'threads_running' && max < 1)
    return `Threads_running=${max} can never be met: Threads_running counts the check's own query; give 1 or more`;
  if (COUNTERS.has(name) || COUNTER_PREFIXES.some((p) => name.startsWith(p)))
    return `${variable} only grows (a counter since the server started): once over ${max} it would throttle for ever; limit a gauge such as Threads_running or Threads_connected`;
  return null;
}

/**
 * `--max-load` as given: `VAR=N[,VAR=N…]`, each a status variable name and a whole number ≥ 0,
 * no name twice, no counter ({@link loadLimitProblem}). Throws an Error saying what is wrong (the option parser makes it exit 2).
 * @example parseMaxLoad('Threads_running=25') // [{ variable: 'Threads_running', max: 25 }]
 */
export function parseMaxLoad(value: string): LoadLimit[] {
  const limits: LoadLimit[] = [];
  const seen = new Set<string>();
  for (const raw of value.split(',')) {
    const item = raw.trim();
    const eq = item.indexOf('=');
    if (eq < 0) throw new Error(`expected STATUS_VARIABLE=N (e.g. Threads_running=25), got ${shown(item)}`);
    const variable = item.slice(0, eq).trim();
    const n = item.slice(eq + 1).trim();
    if (!IDENTIFIER.test(variable))
      throw new Error(`expected a status variable name before "=" (e.g. Threads_running), got ${shown(variable)}`);
    if (!/^\d{1,15}$/.test(n)) throw new Error(`expected a whole number ≥ 0 after ${variable}=, got ${shown(n)}`);
    const unusable = loadLimitProblem(variable, Number(n));
    if (unusable) throw new Error(unusable);
    if (seen.has(variable.toLowerCase())) throw new Error(`${variable} is given twice`);
    seen.add(variable.toLowerCase());
    limits.push({ variable, max: Number(n) });
  }
  return limits;
}

/**
 * The limits of a repeated `--max-load`, one list: a variable named in two of them is refused as
 * within one (a silent "last wins" would drop a limit the operator asked for).
 * @example mergeMaxLoad(parseMaxLoad('Threads_running=25'), parseMaxLoad('Threads_connected=400')) // both
 */
export function mergeMaxLoad(previous: readonly LoadLimit[], next: readonly LoadLimit[]): LoadLimit[] {
  for (const { variable } of next) {
    if (previous.some((p) => p.variable.toLowerCase() === variable.toLowerCase()))
      throw new Error(`${variable} is given twice (in two --max-load options)`);
  }
  return [...previous, ...next];
}

/**
 * Why the command must wait, or null: every limit exceeded, in the order given.
 * @example throttleReason({ status: new Map([['threads_running', 37]]) }, { maxLoad: [{ variable: 'Threads_running', max: 25 }], maxLagSeconds: null }) // 'Threads_running=37 > 25'
 */
export function throttleReason(readings: ThrottleReadings, limits: ThrottleLimits): string | null {
  const reasons: string[] = [];
  for (const { variable, max } of limits.maxLoad) {
    const v = readings.status.get(variable.toLowerCase());
    if (v !== undefined && v > max) reasons.push(`${variable}=${v} > ${max}`);
  }
  if (limits.maxLagSeconds !== null && readings.lag !== undefined) {
    const { seconds, io, sql } = readings.lag;
    if (seconds === null) reasons.push(`replication stopped (Seconds_Behind_Master NULL, IO ${io}, SQL ${sql})`);
    else if (seconds > limits.maxLagSeconds) reasons.push(`replica lag ${seconds} s > ${limits.maxLagSeconds} s`);
  }
  return reasons.length === 0 ? null : reasons.join(', ');
}

/**
 * What a first check found wrong with the limits themselves (exit 2): a variable the database
 * does not have, or one that is not a number.
 */
export function readingsProblem(readings: ThrottleReadings, limits: ThrottleLimits, label: string): string | null {
  for (const { variable } of limits.maxLoad) {
    const v = readings.status.get(variable.toLowerCase());
    if (v === undefined) return `--max-load: ${label} has no status variable ${variable} (SHOW GLOBAL STATUS)`;
    if (Number.isNaN(v)) return `--max-load: ${variable} of ${label} is not a number`;
  }
  return null;
}

/** What ends a wait besides the database coming under its limits. */
export interface WaitOptions {
  /**
   * The runner's pause switch, read on every poll while throttled (a throttle can last hours, a
   * pause must not wait for it): truthy ends the wait with 'paused'.
   */
  readonly paused?: () => Promise<unknown>;
  /** the run's deadline on the throttle's clock (`--max-seconds`): reached, the wait ends with 'deadline' */
  readonly deadline?: number;
  /**
   * this runner's own stop signal, when it can stop without the process (a `--all` pair whose
   * lease was lost): aborted, this runner leaves the wait with 'aborted' at the next poll
   */
  readonly signal?: AbortSignal;
}

/**
 * How a wait ended: 'ok' under the limits, 'aborted' by the stop signal, 'paused' by
 * {@link WaitOptions.paused}, 'deadline' at {@link WaitOptions.deadline}.
 */
export type WaitOutcome = 'ok' | 'aborted' | 'paused' | 'deadline';

/** What a runner awaits before each page or batch. */
export interface Throttle {
  /** 'ok' once under the limits (at once when it is); otherwise whichever of signal, pause or deadline comes first */
  wait(options?: WaitOptions): Promise<WaitOutcome>;
  /** milliseconds spent waiting so far */
  readonly throttledMs: number;
}

export type ThrottleEvent =
  | { readonly state: 'start'; readonly database: string; readonly reason: string }
  | {
      readonly state: 'end';
      readonly database: string;
      readonly reason: string;
      readonly seconds: number;
      readonly aborted: boolean;
      readonly endedBy?: 'signal' | 'paused' | 'deadline';
    };

export interface ThrottleDeps {
  /** the database being read: its status */
  readonly db: () => Promise<Db>;
  /** named in messages and events ("FC database") */
  readonly label: string;
  /** where the lag is read (`--replica-url`); default: `db` */
  readonly replica?: { readonly db: () => Promise<Db>; readonly label: string };
  readonly signal: AbortSignal;
  readonly clock?: () => number;
  readonly pollMs?: number;
  /** default {@link THROTTLE_CHECK_EVERY_MS}; 0: a query before every page or batch */
  readonly checkEveryMs?: number;
  readonly onEvent?: (e: ThrottleEvent) => void;
}

type ReplicaRow = Record<string, unknown>;

/** The default replication connection's status, or null when the database is not a replica. */
async function replicaStatus(db: Db, label: string): Promise<ReplicaRow | null> {
  const denied = (err: unknown): never => {
    if ((err as { code?: string }).code === 'ER_SPECIFIC_ACCESS_DENIED_ERROR') {
      throw new EnvironmentError(
        `--max-lag: ${label} refuses SHOW REPLICA STATUS: its user needs the REPLICA MONITOR privilege (REPLICATION CLIENT before MariaDB 10.5)`,
        { cause: err },
      );
    }
    throw err;
  };
  let rows: ReplicaRow[];
  try {
    rows = await db.query<ReplicaRow>('SHOW REPLICA STATUS');
  } catch (err) {
    // before MariaDB 10.5.1 / MySQL 8.0.22 only the older name parses
    if ((err as { code?: string }).code !== 'ER_PARSE_ERROR') denied(err);
    rows = await db.query<ReplicaRow>('SHOW SLAVE STATUS').catch(denied);
  }
  return rows[0] ?? null;
}

const field = (row: ReplicaRow, ...names: string[]) => names.map((n) => row[n]).find((v) => v !== undefined);

/** The lag reading of a `SHOW REPLICA STATUS` row (MariaDB and MySQL column names). */
export function lagOf(row: ReplicaRow): NonNullable<ThrottleReadings['lag']> {
  const raw = field(row, 'Seconds_Behind_Master', 'Seconds_Behind_Source');
  const seconds = raw === null || raw === undefined ? null : Number(raw);
  return {
    seconds: seconds !== null && Number.isFinite(seconds) ? seconds : null,
    io: String(field(row, 'Slave_IO_Running', 'Replica_IO_Running') ?? '?'),
    sql: String(field(row, 'Slave_SQL_Running', 'Replica_SQL_Running') ?? '?'),
  };
}

/** How a runner leaves a shared wait on its own: its pause, deadline or signal, or a failed read. */
type Leaving = 'paused' | 'deadline' | 'aborted' | { error: unknown };

/** One runner in a shared wait: its own pause switch and deadline. */
interface Waiter {
  readonly options: WaitOptions;
  readonly resolve: (outcome: WaitOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/** The throttle of a database, its first check made. */
class DbThrottle implements Throttle {
  throttledMs = 0;
  /** when the last reading under the limits was taken; null: none yet, or one over */
  private under: number | null = null;
  /** runners in the wait under way */
  private waiters: Waiter[] = [];
  /** a check or wait is under way */
  private running = false;
  private readonly clock: () => number;
  constructor(
    private readonly limits: ThrottleLimits,
    private readonly d: ThrottleDeps,
  ) {
    this.clock = d.clock ?? Date.now;
  }

  async read(): Promise<ThrottleReadings> {
    const status = new Map<string, number>();
    if (this.limits.maxLoad.length > 0) {
      const names = this.limits.maxLoad.map((l) => l.variable);
      const rows = await (await this.d.db()).query<{ Variable_name: string; Value: string }>(
        `SHOW GLOBAL STATUS WHERE Variable_name IN (${names.map(() => '?').join(', ')})`,
        names,
      );
      for (const r of rows)
        status.set(
          String(r.Variable_name).toLowerCase(),
          /^\s*-?\d+(\.\d+)?\s*$/.test(String(r.Value)) ? Number(r.Value) : Number.NaN,
        );
    }
    if (this.limits.maxLagSeconds === null) return { status };
    const where = this.d.replica ?? { db: this.d.db, label: this.d.label };
    const row = await replicaStatus(await where.db(), where.label);
    if (row === null)
      throw new EnvironmentError(
        `--max-lag: ${where.label} is not a replica (SHOW REPLICA STATUS is empty); give --replica-url, or leave --max-lag out`,
      );
    return { status, lag: lagOf(row) };
  }

  /** Reads the database now: the reason to wait, or null (and the reading stands for a while). */
  async check(readings?: ThrottleReadings): Promise<string | null> {
    const reason = throttleReason(readings ?? (await this.read()), this.limits);
    this.under = reason === null ? this.clock() : null;
    return reason;
  }

  wait(options: WaitOptions = {}): Promise<WaitOutcome> {
    if (this.d.signal.aborted || options.signal?.aborted) return Promise.resolve('aborted');
    if (this.under !== null && this.clock() - this.under < (this.d.checkEveryMs ?? THROTTLE_CHECK_EVERY_MS))
      return Promise.resolve('ok');
    if (options.deadline !== undefined && this.clock() >= options.deadline) return Promise.resolve('deadline');
    // One check and one wait at a time: runners sharing the throttle (`reconcile run --all
    // --concurrency N`, a send's pipeline) wait together, counted and reported once; each leaves
    // it on its own pause switch or deadline.
    return new Promise<WaitOutcome>((resolve, reject) => {
      this.waiters.push({ options, resolve, reject });
      if (!this.running) void this.checkAndWait();
    });
  }

  /** Ends the wait of `w` with `outcome`. */
  private leave(w: Waiter, outcome: WaitOutcome | { error: unknown }): void {
    this.waiters = this.waiters.filter((x) => x !== w);
    if (typeof outcome === 'object') w.reject(outcome.error);
    else w.resolve(outcome);
  }

  /**
   * Each waiter's deadline and pause switch, read now: those they end leave the wait, at once
   * while others wait on; the last ones are returned, to leave once the wait's end is reported.
   */
  private async release(): Promise<Array<{ w: Waiter; outcome: Leaving }>> {
    const leaving: Array<{ w: Waiter; outcome: Leaving }> = [];
    await Promise.all(
      [...this.waiters].map(async (w) => {
        if (w.options.signal?.aborted) return void leaving.push({ w, outcome: 'aborted' });
        if (w.options.deadline !== undefined && this.clock() >= w.options.deadline)
          return void leaving.push({ w, outcome: 'deadline' });
        if (!w.options.paused) return;
        try {
          if (await w.options.paused()) leaving.push({ w, outcome: 'paused' });
        } catch (error) {
          leaving.push({ w, outcome: { error } });
        }
      }),
    );
    this.waiters = this.waiters.filter((w) => !leaving.some((l) => l.w === w));
    if (this.waiters.length === 0) return leaving;
    for (const l of leaving) this.leave(l.w, l.outcome);
    return [];
  }

  /** The next poll: the poll interval, or sooner when a waiter's deadline comes first. */
  private nextPollMs(): number {
    const poll = this.d.pollMs ?? THROTTLE_POLL_MS;
    const deadlines = this.waiters.map((w) => w.options.deadline).filter((d): d is number => d !== undefined);
    return Math.max(0, Math.min(poll, ...deadlines.map((d) => d - this.clock())));
  }

  private async checkAndWait(): Promise<void> {
    this.running = true;
    try {
      await this.checkAndWaitOnce();
    } finally {
      this.running = false;
    }
    // a runner that came as the others left on their pause or deadline: a wait of its own
    if (this.waiters.length > 0) void this.checkAndWait();
  }

  private async checkAndWaitOnce(): Promise<void> {
    let reason: string | null;
    try {
      reason = await this.check();
    } catch (error) {
      for (const w of [...this.waiters]) this.leave(w, { error });
      return;
    }
    if (reason === null) {
      for (const w of [...this.waiters]) this.leave(w, 'ok');
      return;
    }
    const started = this.clock();
    const database = this.d.label;
    this.d.onEvent?.({ state: 'start', database, reason });
    const ended = await this.pollUntilUnder();
    const ms = this.clock() - started;
    this.throttledMs += ms;
    const seconds = Math.round(ms / 100) / 10;
    const by =
      'last' in ended
        ? ended.last.some((l) => l.outcome === 'deadline')
          ? 'deadline'
          : ended.last.some((l) => l.outcome === 'paused')
            ? 'paused'
            : 'signal'
        : ended.by;
    this.d.onEvent?.({
      state: 'end',
      database,
      reason,
      seconds,
      aborted: by !== 'ok',
      ...(by !== 'ok' && by !== 'error' ? { endedBy: by } : {}),
    });
    if ('last' in ended)
      for (const { w, outcome } of ended.last)
        typeof outcome === 'object' ? w.reject(outcome.error) : w.resolve(outcome);
    else
      for (const w of [...this.waiters])
        this.leave(w, ended.by === 'error' ? { error: ended.error } : ended.by === 'signal' ? 'aborted' : 'ok');
  }

  /**
   * Polls until under the limits ('ok'), the stop signal ('signal'), a failed read ('error'), or
   * every waiter gone on its pause switch or deadline (`last`: the ones still to be told).
   */
  private async pollUntilUnder(): Promise<
    { by: 'ok' | 'signal' } | { by: 'error'; error: unknown } | { last: Array<{ w: Waiter; outcome: Leaving }> }
  > {
    for (;;) {
      const last = await this.release();
      if (this.waiters.length === 0) return { last };
      if (!(await sleep(this.nextPollMs(), this.d.signal))) return { by: 'signal' };
      try {
        if ((await this.check()) === null) return { by: 'ok' };
      } catch (error) {
        return { by: 'error', error };
      }
    }
  }
}

/** Sleeps `ms`; false when the signal ended it first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** No limits given: null, so runners skip the check entirely. */
export function hasLimits(limits: ThrottleLimits): boolean {
  return limits.maxLoad.length > 0 || limits.maxLagSeconds !== null;
}

/**
 * The throttle of the database `deps.db`, after a first check (exit 2 for a status variable the
 * database does not have, 3 for `--max-lag` on a database that is not a replica); null when no
 * limit is set (nothing is read, nothing is connected).
 * @example const t = await openThrottle({ maxLoad: parseMaxLoad('Threads_running=25'), maxLagSeconds: null }, { db: ctx.fcDb, label: 'FC database', signal }); if ((await t?.wait({ paused, deadline })) !== 'ok') …
 */
export async function openThrottle(limits: ThrottleLimits, deps: ThrottleDeps): Promise<Throttle | null> {
  if (!hasLimits(limits)) return null;
  const t = new DbThrottle(limits, deps);
  const first = await t.read();
  const problem = readingsProblem(first, limits, deps.label);
  if (problem) throw new UsageError(problem);
  await t.check(first);
  return t;
}

/** Total seconds a run's throttles waited, one decimal: the summary's `throttledSeconds`. */
export function throttledSeconds(throttles: ReadonlyArray<Throttle | null | undefined>): number {
  return Math.round(throttles.reduce((s, t) => s + (t?.throttledMs ?? 0), 0) / 100) / 10;
}

/**
 * The replica `--max-lag` reads when `replicaUrl` is set (opened on the first check, one
 * connection, closed through `onClose`); undefined otherwise: the lag is read on the database
 * being read. Its label never shows the URL's password.
 */
export function replicaOf(
  replicaUrl: string | undefined,
  onClose: (fn: () => Promise<void>) => void,
): ThrottleDeps['replica'] {
  if (replicaUrl === undefined) return undefined;
  const label = `replica database ${maskUrl(replicaUrl).replace(/^[a-z]+:\/\/[^@]*@/i, '')}`;
  let pending: Promise<Db> | undefined;
  const db = () =>
    (pending ??= openDb('replica database', replicaUrl, { connectionLimit: 1 }).then((d) => {
      onClose(() => d.close());
      return d;
    }));
  return { db, label };
}

/**
 * One throttle per database a command reads (`reconcile run`: FC and SH), each first-checked in
 * turn, before the command writes anything; `{}` when no limit is set (nothing connected).
 * @example const t = await openThrottles(limits, config.replicaUrl.value, { fc: { db: ctx.fcDb, label: 'FC database' } }, { signal, clock, onEvent, onClose })
 */
export async function openThrottles<K extends string>(
  limits: ThrottleLimits,
  replicaUrl: string | undefined,
  dbs: Readonly<Record<K, { readonly db: () => Promise<Db>; readonly label: string }>>,
  common: Pick<ThrottleDeps, 'signal' | 'clock' | 'pollMs' | 'checkEveryMs' | 'onEvent'> & {
    readonly onClose: (fn: () => Promise<void>) => void;
  },
): Promise<Partial<Record<K, Throttle>>> {
  const out: Partial<Record<K, Throttle>> = {};
  if (!hasLimits(limits)) return out;
  const replica = limits.maxLagSeconds === null ? undefined : replicaOf(replicaUrl, common.onClose);
  for (const key of Object.keys(dbs) as K[]) {
    const { onClose: _, ...rest } = common;
    const t = await openThrottle(limits, { ...rest, ...dbs[key], ...(replica ? { replica } : {}) });
    if (t) out[key] = t;
  }
  return out;
}

/** A command's options that `addThrottleOptions` (src/commands/options.ts) declared. */
export interface ThrottleOptions {
  readonly throttle: ThrottleLimits;
}
