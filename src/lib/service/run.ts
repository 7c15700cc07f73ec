/**
 * What every `--follow` service has around its loop (issue 27): its state (said once per change),
 * `/healthz` and `/readyz` judged from it, the `--listen` endpoint with `/metrics`, and its row in
 * the fleet registry `fcctl_worker`, beaten every `heartbeatSeconds` and removed on a clean stop.
 * The loop itself (the relay's, the resolver's) is given the handle and reports through it.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import type { Db } from '../db/connect.js';
import { health, type Health, type ServiceSnapshot, type ServiceState, STOP_BUDGET } from './decide.js';
import { afterStop } from './loop.js';
import { close, listen } from './http.js';
import { type ServiceMetrics, serviceMetrics } from './metrics.js';
import { registryCommand, workerDetail } from './sql.js';
import { beatWorker, pruneGoneWorkers, removeWorker } from './store.js';

export interface ServiceOptions {
  /** the command's path, as the pause switch and the registry name it (`deliveries send`) */
  readonly command: string;
  /** `--listen`, or null: no endpoint */
  readonly listen: { readonly host: string; readonly port: number } | null;
  readonly heartbeatSeconds: number;
  /** the loop not stepping for this long is stuck (`/healthz` 503) */
  readonly stuckAfterMs: number;
  /** fcctl's version, for the registry */
  readonly version: string;
  /** `--drain-seconds`: what is in flight after a stop signal may take this long */
  readonly drainMs: number;
  /** what of the queue the service takes, named in its registry row ({@link registryCommand}): the resolver's app key */
  readonly scope?: string;
}

export interface ServiceDeps {
  readonly clock: () => number;
  /** the database the command writes: the registry row lives there */
  readonly db: () => Promise<Db>;
  /** hears each change of state (the command logs it once) */
  readonly onState?: (state: ServiceState, detail: string | null) => void;
  /** hears the broker blocking the connection (its reason) and unblocking it (null) (the command logs it) */
  readonly onBlocked?: (reason: string | null) => void;
  /** read with each beat when metrics are served: the due rows and the oldest one's age */
  readonly backlog?: () => Promise<{ due: number; oldestAgeSeconds: number }>;
  /** the stop signal */
  readonly signal: AbortSignal;
  /**
   * Closes the service's database at once (its statements still waiting fail): called
   * {@link STOP_BUDGET}.databaseMs after the drain, so a frozen server does not hold the stop.
   */
  readonly abandon?: () => Promise<void>;
}

/** What the loop reports through. */
export interface ServiceHandle {
  readonly onState: (state: ServiceState, detail: string | null) => void;
  readonly onProgress: () => void;
  /** the broker blocking the connection's publishes (its reason), or no longer (null): `/readyz` at once */
  readonly onBlocked: (reason: string | null) => void;
  /** rows (or commands) finished, for the registry's rows/s */
  readonly countRows: (n: number) => void;
  /** null without `--listen` */
  readonly metrics: ServiceMetrics | null;
  readonly health: () => Health;
  readonly state: () => ServiceState;
  /** why the state is what it is (an outage's target and error), as the loop said it */
  readonly detail: () => string | null;
  /** what the last beat measured: rows/s since the beat before, and the backlog (null until read) */
  readonly beat: () => {
    readonly rowsPerSecond: number;
    readonly due: number | null;
    readonly oldestDueSeconds: number | null;
  };
}

/**
 * Runs `loop` as a service: the endpoint is listening before the loop starts (a port taken is exit 3
 * before anything is claimed), the registry row is beaten meanwhile, and both are gone when it ends.
 * @example const summary = await runService(options, deps, (svc) => followSend(o, { ...d, ...svc }))
 */
export async function runService<T>(
  o: ServiceOptions,
  deps: ServiceDeps,
  loop: (svc: ServiceHandle) => Promise<T>,
): Promise<T> {
  const metrics = o.listen ? await serviceMetrics(o.command === 'deliveries send' ? 'relay' : 'resolver', o) : null;
  const snapshot: { -readonly [K in keyof ServiceSnapshot]: ServiceSnapshot[K] } = {
    state: 'starting',
    lastProgressAt: deps.clock(),
    detail: null,
    blocked: null,
  };
  const label = { command: o.command };
  let rows = 0;
  const lastBeat = { rowsPerSecond: 0, due: null as number | null, oldestDueSeconds: null as number | null };
  // a change of state is written to the registry at once, not at the next beat
  let beatNow: () => void = () => {};
  // each change said once: the loop announces its own start, as this does before the loop runs
  let said: string | null = null;
  const setReady = () => metrics?.ready.set(label, snapshot.state === 'running' && !snapshot.blocked ? 1 : 0);
  const handle: ServiceHandle = {
    beat: () => lastBeat,
    metrics,
    onState: (state, detail) => {
      const changed = state !== snapshot.state;
      snapshot.state = state;
      snapshot.detail = detail;
      if (changed) beatNow();
      setReady();
      metrics?.paused.set(label, state === 'paused' ? 1 : 0);
      const saying = `${state}\n${detail ?? ''}`;
      if (saying === said) return;
      said = saying;
      deps.onState?.(state, detail);
    },
    onProgress: () => {
      snapshot.lastProgressAt = deps.clock();
      // Unix time, whatever clock the loop keeps (the resolver's is monotonic: seconds since start)
      metrics?.lastProgress.set(label, Math.floor(Date.now() / 1000));
    },
    onBlocked: (reason) => {
      if (reason === snapshot.blocked) return;
      snapshot.blocked = reason;
      setReady();
      deps.onBlocked?.(reason);
    },
    countRows: (n) => {
      rows += n;
    },
    health: () => health(snapshot, deps.clock(), o.stuckAfterMs),
    state: () => snapshot.state,
    detail: () => snapshot.detail,
  };
  handle.onState('starting', null);
  let server: Server | null = null;
  if (o.listen && metrics) {
    server = await listen(o.listen, {
      metrics: async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }),
      health: handle.health,
    });
  }
  const beats = heartbeat(o, deps, handle, () => rows, lastBeat);
  beatNow = beats.now;
  // past the drain and its margin, whatever still waits on the database fails (issue 34 §5)
  const overdue = afterStop(deps.signal, o.drainMs + STOP_BUDGET.databaseMs, () => {
    void deps.abandon?.().catch(() => undefined);
  });
  try {
    return await loop(handle);
  } finally {
    overdue.dispose();
    await beats.stop();
    if (server) await close(server);
  }
}

/** The backlog read at a beat: what the beat measured, and the service's due gauges. */
async function readBacklog(
  o: ServiceOptions,
  deps: ServiceDeps,
  svc: ServiceHandle,
  measured: { due: number | null; oldestDueSeconds: number | null },
): Promise<void> {
  if (!deps.backlog) return;
  const b = await deps.backlog();
  measured.due = b.due;
  measured.oldestDueSeconds = b.oldestAgeSeconds;
  if (!svc.metrics) return;
  const [due, oldest] =
    o.command === 'deliveries send'
      ? [svc.metrics.relayDue, svc.metrics.relayOldestDue]
      : [svc.metrics.resolverDue, svc.metrics.resolverOldestDue];
  due.set(b.due);
  oldest.set(b.oldestAgeSeconds);
}

/**
 * The registry row, beaten every `heartbeatSeconds` (a failed beat is skipped: the database may be
 * the outage the loop is waiting out), with the backlog gauges read at the same time and the
 * registry's gone rows deleted (issue 36 §8, service/sql.ts GONE_WORKER); removed at
 * the stop (the last beat and the removal bounded: a database that is down does not hold the stop).
 */
function heartbeat(
  o: ServiceOptions,
  deps: ServiceDeps,
  svc: ServiceHandle,
  rowsSoFar: () => number,
  measured: { rowsPerSecond: number; due: number | null; oldestDueSeconds: number | null },
): { stop: () => Promise<void>; now: () => void } {
  const workerId = randomUUID();
  const base = {
    workerId,
    command: registryCommand(o.command, o.scope ?? null),
    host: hostname(),
    pid: process.pid,
    version: o.version,
    heartbeatSeconds: o.heartbeatSeconds,
  };
  let lastRows = 0;
  let lastAt = deps.clock();
  // the start a row made again says (pruned while frozen, then thawed): monotonic, no wall-clock step
  const beganAt = performance.now();
  let beating: Promise<void> = Promise.resolve();
  const beat = async () => {
    const now = deps.clock();
    const rate = ((rowsSoFar() - lastRows) * 1000) / Math.max(now - lastAt, 1);
    lastRows = rowsSoFar();
    lastAt = now;
    measured.rowsPerSecond = rate;
    const db = await deps.db();
    await beatWorker(db, {
      ...base,
      state: svc.state(),
      rowsPerSecond: rate,
      detail: workerDetail(svc.state(), svc.detail()),
      uptimeSeconds: (performance.now() - beganAt) / 1000,
    });
    // the rows of processes long gone (killed, stopped during an outage) are the live fleet's to remove
    await pruneGoneWorkers(db).catch(() => undefined);
    await readBacklog(o, deps, svc, measured);
  };
  // One beat at a time: a database that takes connections and answers nothing makes each beat wait
  // out its timeouts, and queued beats would pile up for as long as it lasts (and hold the stop).
  let busy = false;
  const tick = () => {
    if (busy) return;
    busy = true;
    beating = beat()
      .catch(() => undefined)
      .finally(() => {
        busy = false;
      });
  };
  // the last beat and the removal share one budget: a database that is down does not hold the stop
  let until = 0;
  const bounded = (p: Promise<unknown>) =>
    Promise.race([p, new Promise((r) => setTimeout(r, Math.max(until - Date.now(), 0)).unref())]);
  tick();
  const timer = setInterval(tick, o.heartbeatSeconds * 1000);
  return {
    now: tick,
    stop: async () => {
      clearInterval(timer);
      until = Date.now() + STOP_BUDGET.heartbeatMs;
      await bounded(beating);
      const remove = (async () => {
        const db = await deps.db();
        await removeWorker(db, workerId);
      })().catch(() => undefined);
      await bounded(remove);
    },
  };
}
