/**
 * `apply-command resolve-unknown --follow` (issue 27 §2): the resolver as a service. Each pass is
 * a batch run (./run.ts, every rule of SPEC §9 unchanged: never resend when found); between passes
 * it polls for due commands every `pollMs` with one cheap indexed read. The flow center
 * unreachable or answering 5xx, or the database down, is waited out with capped backoff; a 401 (or
 * a 403 before any signed request was accepted) is a misconfiguration: nothing claimed, looked at
 * again every 30 s. A pause idles it; a stop signal ends it once the requests in flight are back
 * (each bounded by `--request-timeout`).
 */
import { hostname } from 'node:os';
import { summarizeResolve } from './decide.js';
import { UsageError } from '../../cli/exit.js';
import { fcctlVersion } from '../../cli/version.js';
import { requireSetting } from '../../config/config.js';
import { pauseCheck } from '../../pause/run.js';
import { connectPatiently } from '../../service/loop.js';
import { runService, type ServiceDeps, type ServiceOptions } from '../../service/run.js';
import type { Ctx } from '../../cli/context.js';
import { checkResolveLease, type ApplyCommandResolveOptions, rowReporter } from './command.js';
import { drainEnd, stateOnce, waitStepping } from '../../service/loop.js';
import type { Db } from '../../db/connect.js';
import {
  type ConnectionState,
  failureKind,
  type FailureKind,
  reasonLabel,
  resultLabel,
  retryDelayMs,
  type ServiceState,
} from '../../service/decide.js';
import { connectionReporter } from '../../service/metrics.js';
import { addSummary, emptySummary, forget, idleAfterPass, noSuspects, type ResolveSummary } from './decide.js';
import { READINESS_PROBE, type ResolveDeps, type ResolveOptions, runResolve } from './run.js';
import { backlog, checkWritable } from './store.js';

export interface ResolveFollowOptions {
  readonly pollMs: number;
}

export interface ResolveFollowDeps extends ResolveDeps {
  readonly onState?: (state: ServiceState, detail: string | null) => void;
  readonly onProgress?: () => void;
  /** whether a connection is usable, as the loop last found it */
  readonly onConnection?: (target: 'sh_database' | 'flow_center', state: ConnectionState) => void;
  readonly random?: () => number;
}

/**
 * The flow center answers a signed lookup now: null, or how it failed (a 401/403 is a
 * misconfiguration; no answer, a 5xx or a bad body an outage).
 */
async function flowCenterProblem(deps: ResolveFollowDeps): Promise<{ kind: FailureKind; why: string } | null> {
  const r = await deps.flow.lookup(READINESS_PROBE.bizType, READINESS_PROBE.bizId, deps.signal);
  if (r.kind === 'found' || r.kind === 'not-found') return null;
  const status = 'status' in r ? r.status : undefined;
  const why = `flow center lookup: ${r.kind}${status !== undefined ? ` ${status}` : ''}${'detail' in r && r.detail ? `: ${r.detail}` : ''}`;
  return { kind: status === 401 || status === 403 ? 'misconfigured' : 'outage', why };
}

/**
 * Whether a command is due; after a failure (`writeFirst`) a write that changes nothing comes first:
 * a failover's read-only server answers reads, and the resolver is running again only once it can
 * write (issue 35 §5).
 */
async function dueNow(options: ResolveOptions, deps: ResolveFollowDeps, writeFirst: boolean): Promise<boolean> {
  if (writeFirst) await checkWritable(deps.db);
  return (await backlog(deps.db, deps.appKey, options.pendingGraceSeconds, 1)).due > 0;
}

/**
 * The resolver as a service.
 * @example const summary = await followResolve({ ...options, pollMs: 200 }, { db, flow, appKey, signal, clock })
 */
export async function followResolve(
  options: ResolveOptions & ResolveFollowOptions,
  deps: ResolveFollowDeps,
): Promise<ResolveSummary> {
  const total = emptySummary();
  const deadline = deps.clock() + options.maxSeconds * 1000;
  const setState = stateOnce(deps.onState);
  let failures = 0;
  let checked = false;
  // Rows whose requests failed alone (issue 34 §1), judged across passes; and whether the last pass
  // stopped for an outage the readiness lookup may not see (POST apply failing, or rows' lookups
  // while it answers): the state stays `outage` until a pass goes through.
  const suspects = noSuspects();
  let flowDown = false;
  const running = () => {
    flowDown = false;
    failures = 0;
    deps.onConnection?.('flow_center', 'connected');
    setState('running');
  };
  const failed = async (kind: FailureKind, why: string, target: 'sh_database' | 'flow_center') => {
    failures += 1;
    checked = false;
    reportLost(deps.onConnection, target);
    setState(kind, why);
    return waitStepping(retryDelayMs(kind, failures, deps.random), deps);
  };
  setState('starting');
  while (!deps.signal.aborted && total.claimed < options.maxRows && deps.clock() < deadline) {
    deps.onProgress?.();
    let due: boolean;
    try {
      const pause = await deps.paused?.();
      if (pause) {
        total.paused = pause;
        setState('paused', pause.reason ?? null);
        pausedConnections(deps);
        if (!(await waitStepping(options.pollMs, deps))) break;
        continue;
      }
      delete total.paused;
      due = await dueNow(options, deps, !checked);
      deps.onConnection?.('sh_database', 'connected');
    } catch (err) {
      if (!(await failed(failureKind(err), (err as Error).message, 'sh_database'))) break;
      continue;
    }
    if (!checked) {
      const problem = await flowCenterProblem(deps);
      if (problem) {
        if (!(await failed(problem.kind, problem.why, 'flow_center'))) break;
        continue;
      }
      checked = true;
    }
    if (!flowDown || !due) running();
    if (!due) {
      forget(suspects); // nothing due: no suspect waits for a retry (settled, or by another resolver)
      if (!(await waitStepping(options.pollMs, deps))) break;
      continue;
    }
    let part: ResolveSummary;
    try {
      part = await onePass(options, { ...deps, suspects }, total.claimed, deadline);
    } catch (err) {
      if (!(await failed(failureKind(err), (err as Error).message, 'sh_database'))) break;
      continue;
    }
    addSummary(total, part);
    const problem = flowCenterStop(part);
    if (problem) flowDown = problem.kind === 'outage';
    else if (flowDown) running(); // the flow center answered a whole pass: ready again
    if (problem && !(await failed(problem.kind, problem.why, 'flow_center'))) break;
    // due rows all locked by another transaction (SKIP LOCKED claims nothing): poll, never spin
    if (!problem && idleAfterPass(part) && !(await waitStepping(options.pollMs, deps))) break;
  }
  setState('draining');
  total.stoppedBy = followStop(total, options.maxRows, deps, deadline);
  return total;
}

/** A target lost; while the SH database is out the flow center is closed (nothing is asked of it meanwhile). */
function reportLost(onConnection: ResolveFollowDeps['onConnection'], target: 'sh_database' | 'flow_center'): void {
  onConnection?.(target, 'lost');
  if (target === 'sh_database') onConnection?.('flow_center', 'closed');
}

/** Paused: the SH database connected (the switch was just read through it), the flow center closed (nothing asked of it). */
function pausedConnections(deps: ResolveFollowDeps): void {
  deps.onConnection?.('sh_database', 'connected');
  deps.onConnection?.('flow_center', 'closed');
}

/** Why the service loop ended. */
function followStop(
  total: ResolveSummary,
  maxRows: number,
  deps: ResolveFollowDeps,
  deadline: number,
): ResolveSummary['stoppedBy'] {
  if (total.claimed >= maxRows) return 'max-rows';
  if (deps.signal.aborted) return 'signal';
  return deps.clock() >= deadline ? 'max-seconds' : total.stoppedBy;
}

/**
 * One pass over what is due: a batch run within what is left of the budgets, in which an error is
 * the row's only while the flow center answers others (issue 34 §1: an outage charges nothing).
 */
function onePass(
  options: ResolveOptions,
  deps: ResolveFollowDeps,
  claimedSoFar: number,
  deadline: number,
): Promise<ResolveSummary> {
  const maxSeconds = Math.max((deadline - deps.clock()) / 1000, 0);
  return runResolve({ ...options, confirmErrors: true, maxRows: options.maxRows - claimedSoFar, maxSeconds }, deps);
}

/**
 * A batch that stopped for the flow center: credentials refused is misconfiguration (claim nothing,
 * re-check), errors an outage (back off); the service never exits for either.
 */
function flowCenterStop(part: ResolveSummary): { kind: FailureKind; why: string } | null {
  if (part.stoppedBy === 'credentials-refused')
    return { kind: 'misconfigured', why: part.credentialsRefused ?? 'credentials refused' };
  if (part.stoppedBy === 'flow-center-errors')
    return { kind: 'outage', why: `flow center answers nothing but errors (last: ${part.flowCenterErrors ?? '?'})` };
  return null;
}

const COMMAND = 'apply-command resolve-unknown';

/** The resolver's service around its loop: endpoint, registry row on the SH database, the stop's budget. */
function resolverService(
  options: ApplyCommandResolveOptions,
  ctx: Ctx,
  d: { readonly clock: () => number; readonly appKey: string; readonly abandon: () => Promise<void> },
): [ServiceOptions, ServiceDeps] {
  return [
    {
      command: COMMAND,
      listen: options.service.listen,
      heartbeatSeconds: options.service.heartbeatSeconds,
      stuckAfterMs: 2 * options.requestTimeoutMs + options.leaseSeconds * 1000 + 60_000,
      version: fcctlVersion(),
      drainMs: options.service.drainMs,
      // it settles only its app key's commands: `fcctl status --fail-if apply-due` judges per app key
      scope: d.appKey,
    },
    {
      clock: d.clock,
      db: ctx.shDb,
      signal: ctx.signal,
      abandon: d.abandon,
      onState: (state, detail) => ctx.output.event('state', { state, ...(detail ? { detail } : {}) }),
      backlog: async () => backlog(await ctx.shDb(), d.appKey, options.pendingGraceSeconds),
    },
  ];
}

/**
 * `fcctl apply-command resolve-unknown --follow`: the resolver as a service
 * ({@link followResolve}), with `--listen`'s endpoint and its row in the fleet
 * registry. Exit 0 once the requests in flight are back after SIGTERM/SIGINT.
 */
export async function runFollowResolve(options: ApplyCommandResolveOptions, ctx: Ctx): Promise<number> {
  if (options.metricsFile !== undefined)
    throw new UsageError('--metrics-file is for batch runs: a --follow resolver serves its metrics on --listen');
  checkResolveLease(options);
  const flow = ctx.flow({ timeoutMs: options.requestTimeoutMs, maxSockets: options.concurrency });
  const appKey = requireSetting(ctx.config, 'appKey');
  ctx.signalIsStop();
  const started = ctx.clock();
  const progress = ctx.output.progress(`${COMMAND} --follow`);
  const reportRow = rowReporter(ctx, progress);
  // leases and budgets want a monotonic clock: a wall-clock step must not expire or stretch them
  const clock = () => performance.now();
  // the SH database once open: closed under a stop that outlives its drain
  const opened: { db?: Db } = {};
  // the end of a stop's drain: requests still in flight then are abandoned, their rows released (issue 34 §3)
  const drain = drainEnd(ctx.signal, options.service.drainMs);
  const summary = await runService(
    ...resolverService(options, ctx, { clock, appKey, abandon: async () => opened.db?.close(0) }),
    async (svc) => {
      progress.setStatus(() => ({
        state: svc.state(),
        'rows/s': Math.round(svc.beat().rowsPerSecond * 10) / 10,
        due: svc.beat().due ?? '–',
      }));
      const onConnection = connectionReporter(svc.metrics, COMMAND);
      // the SH database down at start is an outage like any other: waited for, never an exit
      const db = await connectPatiently(() => ctx.shDb(), {
        clock,
        signal: ctx.signal,
        onState: svc.onState,
        onProgress: svc.onProgress,
        onFailure: () => reportLost(onConnection, 'sh_database'),
      });
      if (db === null) return emptySummary();
      opened.db = db;
      return followResolve(
        { ...options, pollMs: options.service.pollMs },
        {
          db,
          flow,
          drainEnd: drain.signal,
          appKey,
          signal: ctx.signal,
          clock,
          paused: pauseCheck(COMMAND, ctx.shDb, options.pauseFile),
          onState: svc.onState,
          onProgress: svc.onProgress,
          onConnection,
          onRow: (row, report) => {
            svc.countRows(1);
            const result = resultLabel(report);
            if (result !== null) svc.metrics?.resolverCommands.inc({ result, reason: reasonLabel(report) });
            reportRow(row, report);
          },
        },
      );
    },
  ).finally(() => {
    progress.stop();
    drain.dispose();
  });
  ctx.output.summary({
    ...summarizeResolve(COMMAND, summary, {
      exitCode: 0,
      dryRun: false,
      flowUrl: flow.baseUrl,
      seconds: (ctx.clock() - started) / 1000,
    }),
    follow: true,
    host: hostname(),
  });
  return 0;
}
