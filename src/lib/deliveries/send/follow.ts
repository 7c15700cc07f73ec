/**
 * `deliveries send --follow` (issue 27): the relay as a service. It runs until a stop signal,
 * claiming and publishing exactly as a batch run does (./run.ts: every check and guard of SPEC §5
 * unchanged), and when nothing is due it polls again after `pollMs` instead of ending. A failure
 * never ends the process: an outage (a database or the broker down, the broker blocking
 * publishes) is waited out with capped backoff, a misconfiguration (publisher identity, a missing
 * exchange, a failed return probe) is looked at again every 30 s, and a pause idles it. Each
 * stretch between two such interruptions is a *session*: its own confirm channel, return probe
 * and claim owner, its results added to the one summary.
 */
import { backlog } from './store.js';
import { hostname } from 'node:os';
import { openBroker } from '../../amqp/connect.js';
import { UsageError } from '../../cli/exit.js';
import { requireSetting } from '../../config/config.js';
import { fcctlVersion } from '../../cli/version.js';
import { checkedPublisher, progressReason, rowEvent, summarizeSend } from './decide.js';
import { pauseCheck } from '../../pause/run.js';
import { followStatus, relayMetrics } from './metrics.js';
import { connectPatiently } from '../../service/loop.js';
import { runService, type ServiceHandle } from '../../service/run.js';
import { serviceZoneReader } from '../../time/service-zone.js';
import { commandThrottles, type Ctx } from '../../cli/context.js';
import type { DeliveriesSendOptions } from './command.js';
import type { Broker } from '../../amqp/connect.js';
import type { ConfirmPublisher } from '../../amqp/confirm-publisher.js';
import { drainEnd, stateOnce, waitStepping } from '../../service/loop.js';
import type { Db } from '../../db/connect.js';
import {
  type ConnectionState,
  failureKind,
  type FailureKind,
  retryDelayMs,
  type ServiceState,
} from '../../service/decide.js';
import { emptySummary } from './decide.js';
import { claimBatches, finishRun, openPublisher, prepareExchange, type Run, verifiedPublisher } from './run.js';
import { checkWritable, countDue } from './store.js';
import { newClaimOwner } from '../../db/claim-owner.js';
import type { PauseState } from '../../pause/decide.js';
import type { SendDeps, SendOptions, SendSummary } from './types.js';

export interface FollowOptions {
  /** with nothing due, the wait before looking again */
  readonly pollMs: number;
  /** after a stop signal, how long what is in flight may take before the channel is closed under it */
  readonly drainMs: number;
  /** declare the exchange instead of only checking it (as `--declare`) */
  readonly declare: boolean;
}

/** What the service loop reports as it goes (status view, metrics, heartbeat, health). */
export interface FollowEvents {
  /** a change of state, with the reason of an outage or misconfiguration; said once per change */
  readonly onState?: (state: ServiceState, detail: string | null) => void;
  /** the loop completed a step (a poll, a batch, a tick of a wait): for `/healthz` */
  readonly onProgress?: () => void;
  /** a connection's state as the loop last found it: connected, closed by the relay (paused, draining, another target out), lost */
  readonly onConnection?: (target: 'broker' | 'fc_database', state: ConnectionState) => void;
  /** the session's publisher while it runs (null between sessions): for the in-flight gauge */
  readonly onPublisher?: (publisher: ConfirmPublisher | null) => void;
  /** the broker blocking the connection (its reason) or no longer (null), the moment it says so: for `/readyz` */
  readonly onBlocked?: (reason: string | null) => void;
}

/**
 * Which connection a failure is of: the database's errors carry a MySQL code or SQL state, or are
 * fcctl's own "cannot connect to FC database" line; anything else in a session is the broker's.
 */
export function outageTarget(err: unknown): 'broker' | 'fc_database' {
  for (
    let e = err as { code?: unknown; sqlState?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e.sqlState !== undefined || (typeof e.code === 'string' && /^(ER_|PROTOCOL_)/.test(e.code)))
      return 'fc_database';
    if (typeof e.message === 'string' && /\bFC database\b|application_info/.test(e.message)) return 'fc_database';
  }
  return 'broker';
}

export interface FollowDeps extends Omit<SendDeps, 'broker'>, FollowEvents {
  /** a new broker connection (the previous one is closed or given up first) */
  readonly connectBroker: () => Promise<Broker>;
  /**
   * the service's zone for occurredAt (read from the FC database when not configured: it may be down
   * at start): `fresh` at each session's start, else as recently read (`serviceZoneReader`)
   */
  readonly zone: (fresh?: boolean) => Promise<string>;
  /** the random source of the backoff's jitter (tests pin it) */
  readonly random?: () => number;
}

/** How `verifiedPublisher` says the registry could not be read (./run.ts). */
const REGISTRY_UNREADABLE = /the app registry \(application_info\) could not be read/;

/** A stop reason of a session that a new session cannot cure by itself right away. */
const OUTAGE_STOPS = new Set<SendSummary['stoppedBy']>(['broker-lost', 'broker-blocked', 'broker-refusing']);

/**
 * The relay as a service.
 * @example const summary = await followSend(options, { db, connectBroker: () => openBroker(url), publisher, signal, clock: Date.now })
 */
export async function followSend(options: SendOptions & FollowOptions, deps: FollowDeps): Promise<SendSummary> {
  const summary = emptySummary();
  let broker: Broker | null = null;
  const setState = stateOnce(deps.onState);
  const dropBroker = async (state: ConnectionState = 'closed') => {
    await broker?.close().catch(() => undefined);
    broker = null;
    deps.onBlocked?.(null);
    deps.onConnection?.('broker', state);
  };
  let failures = 0;
  const failed = async (kind: FailureKind, why: string) => {
    failures += 1;
    setState(kind, why);
    return waitStepping(retryDelayMs(kind, failures, deps.random), deps);
  };
  setState('starting');
  try {
    while (!deps.signal.aborted) {
      deps.onProgress?.();
      let pause: PauseState | null | undefined;
      try {
        pause = await deps.paused?.();
      } catch (err) {
        if (failureKind(err) === 'outage') deps.onConnection?.('fc_database', 'lost');
        if (!(await failed(failureKind(err), (err as Error).message))) break;
        continue;
      }
      if (pause) {
        summary.paused = pause;
        setState('paused', pause.reason ?? null);
        deps.onConnection?.('fc_database', 'connected'); // the switch was just read through it
        await dropBroker(); // paused: no channel kept open, nothing held; looked at again every poll
        if (!(await waitStepping(options.pollMs, deps))) break;
        continue;
      }
      delete summary.paused;
      let session: SessionEnd;
      try {
        broker ??= await connect(deps);
        session = await runSession(
          options,
          deps,
          broker,
          summary,
          () => {
            failures = 0;
            deps.onConnection?.('broker', 'connected');
            deps.onConnection?.('fc_database', 'connected');
            setState('running');
          },
          (why) => {
            deps.onConnection?.('fc_database', 'lost');
            setState('outage', why);
          },
        );
      } catch (err) {
        session = { kind: failureKind(err), why: (err as Error).message, target: outageTarget(err) };
      }
      if (session.kind === 'stopped') break;
      sessionConnections(deps, session, broker);
      if (session.kind === 'paused') continue;
      // Blocked by an alarm: the connection is kept, so its `unblocked` is heard and the next
      // session starts then, not a backoff later.
      if (broker?.blocked && !broker.closed) {
        setState('outage', session.why);
        if (!(await unblocked(broker, deps))) break;
        continue;
      }
      if (session.kind === 'outage') await dropBroker(session.target === 'broker' ? 'lost' : 'closed');
      if (!(await failed(session.kind, session.why))) break;
    }
  } finally {
    setState('draining');
    await dropBroker();
  }
  summary.stoppedBy =
    summary.claimed >= options.maxRows ? 'max-rows' : deps.signal.aborted ? 'signal' : summary.stoppedBy;
  return summary;
}

/**
 * The connections as a session's end found them: an outage's target lost. When the broker could
 * not be connected (`broker` null), or a misconfiguration was found, the database is connected: the
 * pause switch was read through it just before (so it has a state from the start, the broker down
 * or not); a broker that refused the connection over a misconfiguration is lost (wanted, not had).
 */
function sessionConnections(deps: FollowDeps, session: SessionEnd, broker: Broker | null): void {
  if (session.kind === 'outage') deps.onConnection?.(session.target, 'lost');
  const brokerDown = broker === null && session.kind === 'outage' && session.target === 'broker';
  if (session.kind === 'misconfigured' || brokerDown) deps.onConnection?.('fc_database', 'connected');
  if (session.kind === 'misconfigured' && broker === null) deps.onConnection?.('broker', 'lost');
}

async function connect(deps: FollowDeps): Promise<Broker> {
  const broker = await deps.connectBroker();
  broker.onBlocked((reason) => deps.onBlocked?.(reason));
  deps.onConnection?.('broker', 'connected');
  return broker;
}

/** Waits while the broker blocks the connection: true once unblocked (or the connection ended), false on the stop signal. */
async function unblocked(broker: Broker, deps: FollowDeps): Promise<boolean> {
  while (broker.blocked !== null && !broker.closed) if (!(await waitStepping(250, deps))) return false;
  return true;
}

/** How a session ended: by the signal or a budget (the service ends), a pause, or a failure to wait out. */
type SessionEnd =
  | { kind: 'stopped' }
  | { kind: 'paused' }
  | { kind: FailureKind; why: string; target: 'broker' | 'fc_database' };

/**
 * One session: identity, exchange and return probe checked (a failure here is a misconfiguration
 * unless the broker or a database is down), then claims until something interrupts it.
 */
async function runSession(
  given: SendOptions & FollowOptions,
  deps: FollowDeps,
  broker: Broker,
  summary: SendSummary,
  onReady: () => void,
  onOutage: (why: string) => void,
): Promise<SessionEnd> {
  // read again at each session: a reconnect may follow a server restarted in another zone
  const options = { ...given, serviceTimeZone: await deps.zone(true) };
  await verifiedPublisher(deps.db, deps.publisher);
  // reads succeed on a failover's read-only server: running (and the backoff reset) only once a
  // write does, or each retry would say running for a moment and start its backoff again
  await checkWritable(deps.db);
  await prepareExchange(broker, { declare: options.declare, dryRun: false });
  const publisher = await openPublisher(broker, options, deps.clock);
  onReady();
  const deadline = deps.clock() + options.maxSeconds * 1000;
  const drain = drainOnSignal(deps, options.drainMs, publisher);
  const run: Run = {
    options,
    deps: { ...deps, broker },
    summary,
    deadline,
    fatal: null,
    follow: {
      idle: () => idle(options, deps, broker, publisher, deadline),
      // outcomes written again through a database outage: not ready meanwhile, ready once they land
      // (not when the session is ending on a failed claim: it is running again once a new session's write succeeds)
      onWriteOutage: (why) => (why !== null ? onOutage(why) : run.fatal ? undefined : onReady()),
      drainEnd: drain.signal,
      zone: () => deps.zone(),
    },
  };
  deps.onPublisher?.(publisher);
  summary.stoppedBy = 'drained';
  try {
    await claimBatches(run, broker, publisher, newClaimOwner());
    await finishRun(run, broker, publisher);
  } catch (err) {
    return { kind: failureKind(err), why: (err as Error).message, target: outageTarget(err) };
  } finally {
    deps.onPublisher?.(null);
    drain.dispose();
    await publisher.close();
  }
  return sessionEnd(summary, deps, options);
}

function sessionEnd(summary: SendSummary, deps: FollowDeps, options: SendOptions): SessionEnd {
  if (
    deps.signal.aborted ||
    summary.stoppedBy === 'max-rows' ||
    summary.stoppedBy === 'max-seconds' ||
    summary.claimed >= options.maxRows
  )
    return { kind: 'stopped' };
  if (summary.stoppedBy === 'paused') return { kind: 'paused' };
  if (summary.stoppedBy === 'publisher-identity') {
    const why = summary.publisherIdentity ?? 'publisher identity';
    delete summary.publisherIdentity;
    // a registry that could not be read is the database down, not a wrong key
    return { kind: REGISTRY_UNREADABLE.test(why) ? 'outage' : 'misconfigured', why, target: 'fc_database' };
  }
  if (OUTAGE_STOPS.has(summary.stoppedBy)) {
    const why = summary.brokerBlocked
      ? `the broker is blocking publishes (${summary.brokerBlocked})`
      : `the broker connection was lost (${summary.brokerLost ?? summary.stoppedBy})`;
    // one session's reasons are not the next one's
    delete summary.brokerLost;
    delete summary.brokerBlocked;
    return { kind: 'outage', why, target: 'broker' };
  }
  return { kind: 'outage', why: `the session ended: ${summary.stoppedBy}`, target: 'broker' };
}

/**
 * The wait between polls of an empty outbox: true once something may be due (a row, the pause
 * switch, the broker gone, so the claim loop looks), false on the stop signal or the deadline.
 * Idle, each poll is one count of due rows (capped at 1) and one read of the pause switch: the
 * claim transaction, the identity check and the grants are paid only when a row is due.
 */
async function idle(
  options: FollowOptions,
  deps: FollowDeps,
  broker: Broker,
  publisher: ConfirmPublisher,
  deadline: number,
): Promise<boolean> {
  for (;;) {
    deps.onProgress?.();
    if (!(await waitStepping(options.pollMs, deps)) || deps.clock() >= deadline) return false;
    if (publisher.closed || broker.blocked !== null) return true;
    if ((await deps.paused?.()) || (await countDue(deps.db, 1)) > 0) return true;
  }
}

/**
 * After a stop signal the claim loop claims no more and waits for its batches; if they are not done
 * by the drain's end (`drainMs` after the signal), the channel is closed under them: their
 * unconfirmed rows are adjudicated as a closed channel (outcome unknown: FAILED, resent later) and
 * nothing stays claimed past its lease. `signal` is the drain's end (issue 34 §5).
 */
function drainOnSignal(
  deps: FollowDeps,
  drainMs: number,
  publisher: ConfirmPublisher,
): { readonly signal: AbortSignal; dispose: () => void } {
  const onAbort = () => deps.onState?.('draining', null);
  const drained = drainEnd(deps.signal, drainMs);
  const onDrained = () => void publisher.close().catch(() => undefined);
  if (deps.signal.aborted) onAbort();
  else deps.signal.addEventListener('abort', onAbort, { once: true });
  drained.signal.addEventListener('abort', onDrained, { once: true });
  return {
    signal: drained.signal,
    dispose: () => {
      deps.signal.removeEventListener('abort', onAbort);
      drained.signal.removeEventListener('abort', onDrained);
      drained.dispose();
    },
  };
}

const COMMAND = 'deliveries send';

/**
 * `fcctl deliveries send --follow`: the relay as a service ({@link followSend}), with `--listen`'s
 * endpoint and its row in the fleet registry (src/lib/service/run.ts). Exit 0 once drained after
 * SIGTERM/SIGINT; per-row failures are in the summary and the metrics, not the exit code of a
 * process that may have run for weeks.
 */
export async function runFollowSend(options: DeliveriesSendOptions, ctx: Ctx): Promise<number> {
  if (options.metricsFile !== undefined)
    throw new UsageError('--metrics-file is for batch runs: a --follow relay serves its metrics on --listen');
  const publisher = checkedPublisher(options, ctx.config);
  ctx.signalIsStop();
  const { service } = options;
  const started = ctx.clock();
  const zone: { value?: string } = {};
  // the FC database once open: closed under a stop that outlives its drain
  const opened: { db?: Db } = {};
  const progress = ctx.output.progress('deliveries send --follow');
  const relayStatus = (svc: ServiceHandle) => {
    const s = followStatus(svc);
    progress.setStatus(s.status);
    return s;
  };
  const summary = await runService(
    // stuck: no step for the longest a step may take (a confirm's wait, a lease) and a minute more
    {
      command: COMMAND,
      listen: service.listen,
      heartbeatSeconds: service.heartbeatSeconds,
      stuckAfterMs: Math.max(options.confirmTimeoutMs, options.leaseSeconds * 1000) + 60_000,
      version: fcctlVersion(),
      drainMs: service.drainMs,
    },
    {
      clock: ctx.clock,
      db: ctx.fcDb,
      signal: ctx.signal,
      abandon: async () => opened.db?.close(0),
      onState: (state, detail) => ctx.output.event('state', { state, ...(detail ? { detail } : {}) }),
      onBlocked: (reason) => ctx.output.event('blocked', { blocked: reason !== null, ...(reason ? { reason } : {}) }),
      backlog: async () => backlog(await ctx.fcDb()),
    },
    (svc) => followSession(options, ctx, { svc, publisher, zone, progress, status: relayStatus(svc), opened }),
  );
  progress.stop();
  ctx.output.summary({
    ...summarizeSend(summary, options, (ctx.clock() - started) / 1000, zone.value ?? ''),
    follow: true,
    host: hostname(),
  });
  return 0;
}

/** The service's body: the FC database (waited for, never an exit), then {@link followSend} with the service's callbacks. */
async function followSession(
  options: DeliveriesSendOptions,
  ctx: Ctx,
  run: {
    readonly svc: ServiceHandle;
    readonly publisher: ReturnType<typeof checkedPublisher>;
    readonly zone: { value?: string };
    readonly progress: ReturnType<Ctx['output']['progress']>;
    readonly status: ReturnType<typeof followStatus>;
    readonly opened: { db?: Db };
  },
): Promise<SendSummary> {
  const { svc, status, progress } = run;
  const metrics = relayMetrics(svc.metrics);
  // the FC database down at start is an outage like any other: waited for, never an exit
  const open = () =>
    Promise.all([ctx.fcDb(), commandThrottles(ctx, options.throttle, { fc: { db: ctx.fcDb, label: 'FC database' } })]);
  const opened = await connectPatiently(open, {
    clock: ctx.clock,
    signal: ctx.signal,
    onState: svc.onState,
    onProgress: svc.onProgress,
    // the database out from the start: lost, and the broker not opened meanwhile (closed, not no series)
    onFailure: () => {
      metrics.onConnection?.('fc_database', 'lost');
      metrics.onConnection?.('broker', 'closed');
    },
  });
  if (opened === null) return emptySummary();
  const [db, { fc: throttle }] = opened;
  run.opened.db = db;
  // the FC server's zone, read again at each reconnect and once a minute: its time_zone may change under a running relay
  const readZone = serviceZoneReader(ctx.config, ctx.fcDb, {
    clock: ctx.clock,
    onChange: (z, was) => was && ctx.output.event('zone', { zone: z.zone, was: was.zone, from: z.from }),
  });
  return followSend(
    { ...options, serviceTimeZone: '', pollMs: options.service.pollMs, drainMs: options.service.drainMs },
    {
      db,
      connectBroker: () => openBroker(requireSetting(ctx.config, 'amqpUrl')),
      zone: async (fresh) => (run.zone.value = (await readZone(fresh)).zone),
      publisher: run.publisher,
      signal: ctx.signal,
      clock: ctx.clock,
      paused: pauseCheck(COMMAND, ctx.fcDb, options.pauseFile),
      ...(throttle ? { throttle } : {}),
      onState: svc.onState,
      onProgress: svc.onProgress,
      onBlocked: svc.onBlocked,
      ...metrics,
      onSettled: (batch) => {
        metrics.onSettled?.(batch);
        status.onSettled(batch);
      },
      onPublisher: (p) => {
        metrics.onPublisher?.(p);
        status.onPublisher(p);
      },
      onRow: (row, result) => {
        metrics.onRow?.(row, result);
        svc.countRows(1);
        progress.record(progressReason(result));
        ctx.output.eventIf('row', rowEvent(row, result));
      },
    },
  );
}
