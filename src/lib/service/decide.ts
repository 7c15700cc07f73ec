/**
 * The decisions of the service mode (`--follow`, issue 27), pure: what a failure means for a
 * process that never exits on an outage, how long to wait before trying again, whether the loop
 * is healthy and the service ready, and the `--listen` address.
 */
import { isDbMisconfiguration, isOutage } from '../db/outage.js';
import { BrokerBlockedError, BrokerUnreachableError } from '../amqp/connect.js';
import { EnvironmentError } from '../cli/exit.js';

/** What a follow process is doing, as its status, heartbeat row and `/readyz` tell it. */
export type ServiceState =
  /** connecting and checking (identity, exchange, return probe) */
  | 'starting'
  /** claiming and publishing, or polling an empty queue */
  | 'running'
  /** the pause switch is set: claims nothing, holds nothing */
  | 'paused'
  /** a database, the broker or the flow center cannot be used: waiting with backoff */
  | 'outage'
  /** a setting or the broker's set-up is wrong: claims nothing, looks again every {@link MISCONFIG_RECHECK_MS} */
  | 'misconfigured'
  /** a stop signal came: finishing or releasing what is in flight */
  | 'draining';

/** How a failure is met: waited out with backoff, or re-checked slowly until someone fixes it. */
export type FailureKind = 'outage' | 'misconfigured';

/** A misconfiguration is looked at again this often (issue 27 §1). */
export const MISCONFIG_RECHECK_MS = 30_000;

/**
 * What a stop may take past its drain (issue 34 §5): a stop signal ends a service within
 * `--drain-seconds` + 10 s, exit 0, whatever is down or frozen. At the drain's end what is still
 * in flight is abandoned (the relay's channel closed under its batches, the resolver's requests
 * aborted, a write retried through an outage given up); `databaseMs` later the service's database
 * is closed under whatever still waits on it (a frozen server); the broker's close and the
 * registry row's last beat and removal are each bounded. Rows left claimed go out again after
 * their lease (docs/commands/deliveries.md, Stop).
 */
export const STOP_BUDGET = { databaseMs: 3000, heartbeatMs: 2000 } as const;

/** The first wait after an outage, and the cap of its doubling. */
export const BACKOFF = { baseMs: 1000, capMs: 30_000 } as const;

/**
 * The wait before try `attempt` (1, 2, …) after an outage: 1 s, 2 s, 4 s … capped at 30 s, with
 * up to a fifth taken off at random so a fleet restarted together does not reconnect in step.
 * @example backoffMs(1, () => 0) // 1000
 * @example backoffMs(10, () => 0) // 30000
 */
export function backoffMs(
  attempt: number,
  random: () => number = Math.random,
  policy: { baseMs: number; capMs: number } = BACKOFF,
): number {
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
  return Math.round(exp * (1 - 0.2 * random()));
}

/**
 * An error is an outage when it (or one of its causes) is a connection or server failure (a
 * database restarting or not answering, the broker gone); a database refusing the credentials or
 * naming no database it has, and any other environment error, is a misconfiguration (a wrong key,
 * a missing exchange, a failed return probe, a refused vhost). Anything else — a fault fcctl does
 * not know — is met as an outage: the process waits and tries again, and says what it was.
 * @example failureKind(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })) // 'outage'
 * @example failureKind(Object.assign(new Error('x'), { code: 'ER_ACCESS_DENIED_ERROR' })) // 'misconfigured'
 */
export function failureKind(err: unknown): FailureKind {
  if (isDbMisconfiguration(err)) return 'misconfigured';
  if (isOutage(err) || err instanceof BrokerBlockedError || err instanceof BrokerUnreachableError) return 'outage';
  if (err instanceof EnvironmentError) return 'misconfigured';
  return 'outage';
}

/**
 * The wait before the next try after a failure: backoff for an outage, the slow re-check for a
 * misconfiguration.
 */
export function retryDelayMs(kind: FailureKind, attempt: number, random: () => number = Math.random): number {
  return kind === 'misconfigured' ? MISCONFIG_RECHECK_MS : backoffMs(attempt, random);
}

/** What `/healthz` and `/readyz` answer. */
export interface Health {
  readonly healthy: boolean;
  readonly ready: boolean;
  /** one line: why not ready (or not healthy); `ok` otherwise */
  readonly reason: string;
}

/** The facts health is judged from, copied out of the running loop. */
export interface ServiceSnapshot {
  readonly state: ServiceState;
  /** the last time the loop completed a step: a claim, an idle poll, a wait's tick */
  readonly lastProgressAt: number;
  /** why the last failure happened, for a state of outage or misconfigured */
  readonly detail: string | null;
  /**
   * Why the broker is blocking the connection's publishes (a memory or disk alarm: amqplib's
   * `blocked` event), until its `unblocked` or the connection's end; null or absent when not.
   */
  readonly blocked?: string | null;
}

/**
 * Healthy while the loop makes progress or idles normally (an outage waited out is normal: a
 * restart would not help); unhealthy when it has not stepped for `stuckAfterMs` (stuck: a restart
 * helps). Ready only when running: connected, checked, not paused, and not blocked by the broker
 * (a blocked connection confirms nothing: `blocked` is said the moment the broker says it, not when
 * the confirms time out, issue 34 §7).
 * @example health({ state: 'running', lastProgressAt: 0, detail: null }, 1000, 60000) // { healthy: true, ready: true, reason: 'ok' }
 */
export function health(s: ServiceSnapshot, now: number, stuckAfterMs: number): Health {
  const stuckFor = now - s.lastProgressAt;
  if (stuckFor > stuckAfterMs)
    return {
      healthy: false,
      ready: false,
      reason: `stuck: the loop has not made progress for ${Math.round(stuckFor / 1000)} s`,
    };
  if (s.blocked && s.state !== 'draining')
    return { healthy: true, ready: false, reason: `blocked: the broker is blocking publishes (${s.blocked})` };
  if (s.state === 'running') return { healthy: true, ready: true, reason: 'ok' };
  const why: Record<Exclude<ServiceState, 'running'>, string> = {
    starting: 'starting: connecting and checking',
    paused: 'paused',
    outage: 'outage',
    misconfigured: 'misconfigured',
    draining: 'draining: stopping',
  };
  return { healthy: true, ready: false, reason: s.detail ? `${why[s.state]}: ${s.detail}` : why[s.state] };
}

/**
 * `--listen [HOST]:PORT`: `:9464` is loopback only (127.0.0.1); a container passes `0.0.0.0:9464`.
 * An IPv6 host is written in brackets (`[::1]:9464`). Null when malformed.
 * @example listenAddress(':9464') // { host: '127.0.0.1', port: 9464 }
 * @example listenAddress('0.0.0.0:9464') // { host: '0.0.0.0', port: 9464 }
 */
export function listenAddress(text: string): { host: string; port: number } | null {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535 || String(port) !== m[3]!.replace(/^0+(?=\d)/, ''))
    return null;
  const host = m[1] ?? (m[2] === '' ? '127.0.0.1' : m[2]!);
  if (m[2] !== undefined && m[2] !== '' && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host)) return null;
  return { host, port };
}

/**
 * The last `size` latencies, for a live p99 (the status line) without a metrics registry.
 * @example const w = new LatencyWindow(); w.record(120); w.quantile(0.99) // 120
 */
export class LatencyWindow {
  private readonly values: number[] = [];
  private next = 0;
  constructor(private readonly size = 1000) {}

  record(ms: number): void {
    if (this.values.length < this.size) this.values.push(ms);
    else this.values[this.next] = ms;
    this.next = (this.next + 1) % this.size;
  }

  /** The `q` quantile of the window (nearest rank), or null when empty. */
  quantile(q: number): number | null {
    if (this.values.length === 0) return null;
    const sorted = [...this.values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? null;
  }
}

/** The service flags of a command that can run as a service (issue 27). */
export interface ServiceFlags {
  readonly follow: boolean;
  readonly pollMs: number;
  readonly drainMs: number;
  readonly listen: { readonly host: string; readonly port: number } | null;
  readonly heartbeatSeconds: number;
}

/**
 * A connection as `fcctl_service_connection_state` names it (issue 36 §4): connected; closed by
 * fcctl itself (paused, draining, or waiting while another target is out); lost (wanted, not had).
 */
export type ConnectionState = 'connected' | 'closed' | 'lost';

/** What is remembered of a target between reports. */
export interface ConnectionTrack {
  readonly state: ConnectionState;
  /** connected at least once */
  readonly connected: boolean;
  /** lost since it was last connected */
  readonly lostSince: boolean;
}

/**
 * The next track of a target, and whether this report is a reconnect: a connection had again
 * after a loss, once it had been connected before (the first connect is none, nor a resume after
 * a pause's deliberate close).
 * @example connectionStep({ state: 'lost', connected: true, lostSince: true }, 'connected').reconnect // true
 * @example connectionStep({ state: 'closed', connected: true, lostSince: false }, 'connected').reconnect // false
 */
export function connectionStep(
  prev: ConnectionTrack | null,
  state: ConnectionState,
): { track: ConnectionTrack; reconnect: boolean } {
  const connected = prev?.connected ?? false;
  const lostSince = (prev?.lostSince ?? false) || (state === 'lost' && connected);
  if (state !== 'connected') return { track: { state, connected, lostSince }, reconnect: false };
  const reconnect = prev?.state !== 'connected' && lostSince;
  return { track: { state, connected: true, lostSince: false }, reconnect };
}

/**
 * The one result vocabulary of rows and apply commands (issue 36 §3), in the services' metrics and
 * the batch runs' files alike: `done`, `retry` (FAILED: tried again after its backoff), `dead` (no
 * more tries, whatever the reason), `held` (a relay row held without a try charged), `revoked` (its
 * grant withdrawn), `released` (its claim given back, nothing charged), `stale` (another worker
 * moved it on). Null: not counted (a dry run's would-publish).
 * @example resultLabel({ kind: 'failed', dead: true }) // 'dead'
 * @example resultLabel({ kind: 'accepted' }) // 'done'
 * @example resultLabel({ kind: 'skipped', reason: 'STALE' }) // 'stale'
 */
export function resultLabel(r: {
  readonly kind: string;
  readonly dead?: boolean;
  readonly reason?: unknown;
}): string | null {
  switch (r.kind) {
    case 'accepted':
    case 'done':
      return 'done';
    case 'failed':
      return r.dead ? 'dead' : 'retry';
    case 'dead':
    case 'held':
    case 'revoked':
    case 'released':
    case 'stale':
      return r.kind;
    case 'skipped':
      // the relay's STALE: its guarded write found the row moved on by another worker (the resolver's `stale`)
      return r.reason === 'STALE' ? 'stale' : 'released';
    default:
      return null;
  }
}

/**
 * A reason as a label: its code only (the part before any `:` detail), bounded in length; '' when none.
 * @example reasonLabel({ kind: 'failed', reason: 'BROKER_NACK: x' }) // 'BROKER_NACK'
 */
export function reasonLabel(result: { readonly kind: string; readonly reason?: unknown }): string {
  return typeof result.reason !== 'string' ? '' : result.reason.split(':')[0]!.slice(0, 40);
}
