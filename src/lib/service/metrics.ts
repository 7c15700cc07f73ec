/**
 * The metrics a `--follow` service serves on `/metrics` (issue 27 §3, issue 36), through
 * prom-client — never a hand-written exposition format. Loaded only with `--listen`: a cron run
 * pays nothing for it. Labels are of bounded sets only (a result, a reason code, a target, a
 * state), never an event, answer or school id. One registry per process (not prom-client's global
 * one), so tests can hold several. Each service serves the service families, its own (the relay's
 * or the resolver's, never the other's) and the process's; the output passes `promtool check metrics`.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type ConnectionState, connectionStep, type ConnectionTrack } from './decide.js';

/** What the relay's and the resolver's loops report; every method is cheap (a counter or a gauge set). */
export interface ServiceMetrics {
  readonly registry: Registry;
  readonly ready: Gauge;
  readonly paused: Gauge;
  readonly connectionUp: Gauge;
  readonly connectionState: Gauge;
  readonly reconnects: Counter;
  readonly lastProgress: Gauge;
  readonly relayRows: Counter;
  readonly relayPublishes: Counter;
  readonly relayConfirms: Counter;
  readonly relayClaimToConfirm: Histogram;
  readonly relayCreatedToConfirm: Histogram;
  readonly relayBatchDuration: Histogram;
  readonly relayInFlight: Gauge;
  readonly relayDue: Gauge;
  readonly relayOldestDue: Gauge;
  readonly resolverCommands: Counter;
  readonly resolverDue: Gauge;
  readonly resolverOldestDue: Gauge;
  /** where the in-flight gauge reads its value at each scrape (the relay's current publisher) */
  inFlightSource: () => number;
}

/** The service a registry is for: the relay's families or the resolver's, never both. */
export type ServiceKind = 'relay' | 'resolver';

/**
 * Seconds from a batch's claim to a row's confirm, measured exactly (a monotonic clock): fine
 * below a second, where the follow relay's 0.5 s goal is watched (steps of 50 ms at most up to 0.5 s).
 */
const CLAIM_TO_CONFIRM_BUCKETS = [
  0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.75, 1, 1.5, 2, 5, 10, 30,
];
/** Whole seconds from a row's creation (the column's precision) to its confirm: seconds to minutes. */
const CREATED_TO_CONFIRM_BUCKETS = [1, 2, 3, 5, 10, 30, 60, 120, 300, 900, 3600];
const BATCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15];

/**
 * prom-client's default metrics that `promtool check metrics` refuses: gauges named `_total`
 * (a `_total` suffix is a counter's). Their un-suffixed twins (`nodejs_active_handles`, …) stay.
 */
const NOT_LINT_CLEAN = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * A registry with the service families, the given service's own, `fcctl_build_info` and the
 * process's (`collectDefaultMetrics`, less what is not lint-clean).
 * @example const m = await serviceMetrics('relay', { command: 'deliveries send', version: '1.0.0' }); m.relayPublishes.inc()
 */
export async function serviceMetrics(
  kind: ServiceKind,
  build: { readonly command: string; readonly version: string },
): Promise<ServiceMetrics> {
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  // the event-loop delay sampled every 100 ms, not prom-client's 10 ms: an idle relay's CPU is mostly that timer otherwise
  prom.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  for (const name of NOT_LINT_CLEAN) registry.removeSingleMetric(name);
  // the other service's families are made (the loops need no null checks) but not registered: not served
  const on = (k: ServiceKind | 'both') => (k === 'both' || k === kind ? [registry] : []);
  const gauge = (k: ServiceKind | 'both', name: string, help: string, labelNames: string[] = []) =>
    new prom.Gauge({ name, help, labelNames, registers: on(k) });
  const counter = (k: ServiceKind | 'both', name: string, help: string, labelNames: string[] = []) =>
    new prom.Counter({ name, help, labelNames, registers: on(k) });
  const histogram = (k: ServiceKind, name: string, help: string, buckets: number[]) =>
    new prom.Histogram({ name, help, buckets, registers: on(k) });
  gauge('both', 'fcctl_build_info', 'always 1: the fcctl version and Node.js version serving', [
    'command',
    'version',
    'node_version',
  ]).set({ command: build.command, version: build.version, node_version: process.version }, 1);
  const m: { inFlightSource: () => number } = { inFlightSource: () => 0 };
  return Object.assign(m, {
    registry,
    ready: gauge('both', 'fcctl_service_ready', '1 when connected, checked and not paused (what /readyz answers)', [
      'command',
    ]),
    paused: gauge('both', 'fcctl_service_paused', '1 while the pause switch holds the service', ['command']),
    connectionUp: gauge(
      'both',
      'fcctl_service_connection_up',
      '1 while connected to the target (else 0: closed or lost)',
      ['command', 'target'],
    ),
    connectionState: gauge(
      'both',
      'fcctl_service_connection_state',
      'a state set, one state 1 per target: connected; closed (by fcctl: paused, or waiting while another target is out); lost (wanted and unreachable)',
      ['command', 'target', 'state'],
    ),
    reconnects: counter(
      'both',
      'fcctl_service_reconnects_total',
      'connections to the target had again after a loss (not the first connect, not a resume)',
      ['command', 'target'],
    ),
    lastProgress: gauge(
      'both',
      'fcctl_service_last_progress_timestamp_seconds',
      'when the loop last completed a step',
      ['command'],
    ),
    ...relayFamilies(gauge, counter, histogram, m),
    resolverCommands: counter(
      'resolver',
      'fcctl_resolver_commands_total',
      'apply commands settled: result done, retry (FAILED, tried again), dead (no more tries), released, stale; by reason code',
      ['result', 'reason'],
    ),
    resolverDue: gauge(
      'resolver',
      'fcctl_resolver_due_commands',
      "apply commands of this resolver's app key due now (with its --pending-grace)",
    ),
    resolverOldestDue: gauge(
      'resolver',
      'fcctl_resolver_oldest_due_age_seconds',
      "seconds since the oldest due apply command of this resolver's app key became due (its retry time, or its --pending-grace ending) (0: none due); fcctl status counts every app key's, with 600 s",
    ),
  });
}

/** The relay's own families. */
function relayFamilies(
  gauge: (k: ServiceKind, name: string, help: string, labelNames?: string[]) => Gauge,
  counter: (k: ServiceKind, name: string, help: string, labelNames?: string[]) => Counter,
  histogram: (k: ServiceKind, name: string, help: string, buckets: number[]) => Histogram,
  m: { inFlightSource: () => number },
) {
  const inFlight = gauge('relay', 'fcctl_relay_in_flight_messages', 'messages published and not yet confirmed');
  // read at each scrape from the relay's current publisher
  Object.assign(inFlight, {
    collect(this: Gauge) {
      this.set(m.inFlightSource());
    },
  });
  return {
    relayRows: counter(
      'relay',
      'fcctl_relay_rows_total',
      'rows adjudicated: result done, retry (FAILED, tried again), dead (DEAD, no more tries), held, revoked, released, stale (moved on by another worker); by reason code',
      ['result', 'reason'],
    ),
    relayPublishes: counter('relay', 'fcctl_relay_publishes_total', 'messages published'),
    relayConfirms: counter('relay', 'fcctl_relay_confirms_total', 'publish outcomes: ack, nack, timeout, returned', [
      'outcome',
    ]),
    relayClaimToConfirm: histogram(
      'relay',
      'fcctl_relay_claim_to_confirm_seconds',
      "from the commit of the claim of the row's batch to the row's publisher confirm (ack or nack), every attempt, in ms (a monotonic clock); a confirm that never came (timeout, channel closed) is not in it, nor the wait before the claim (up to one --poll-interval when idle)",
      CLAIM_TO_CONFIRM_BUCKETS,
    ),
    relayCreatedToConfirm: histogram(
      'relay',
      'fcctl_relay_created_to_confirm_whole_seconds',
      "from the row's create_time (whole seconds, the column's) to its confirm, for rows never retried, held or replayed (a row released uncharged or re-claimed after a lease is in it, with its whole wait)",
      CREATED_TO_CONFIRM_BUCKETS,
    ),
    relayBatchDuration: histogram(
      'relay',
      'fcctl_relay_batch_duration_seconds',
      'from a batch claimed to its rows adjudicated',
      BATCH_BUCKETS,
    ),
    relayInFlight: inFlight,
    relayDue: gauge(
      'relay',
      'fcctl_relay_due_rows',
      'rows due to be sent now (counted up to 10000, every few seconds; held rows not counted)',
    ),
    relayOldestDue: gauge(
      'relay',
      'fcctl_relay_oldest_due_age_seconds',
      'seconds since the oldest due row became due (its retry or recheck time, its replay, its lease ending, or its creation), over every due row as fcctl status counts it (0: none due)',
    ),
  };
}

/**
 * A target's connection as the loop finds it: the state set, `connection_up`, and a reconnect
 * counted only when a connection is had again after a loss ({@link connectionStep}).
 * @example const report = connectionReporter(m, 'deliveries send'); report('broker', 'closed')
 */
export function connectionReporter(
  m: ServiceMetrics | null,
  command: string,
): (target: string, state: ConnectionState) => void {
  const tracks = new Map<string, ConnectionTrack>();
  return (target, state) => {
    if (m === null) return;
    const step = connectionStep(tracks.get(target) ?? null, state);
    tracks.set(target, step.track);
    // the series exists at 0 from the first report: `increase()` sees the first reconnect
    m.reconnects.inc({ command, target }, step.reconnect ? 1 : 0);
    for (const s of ['connected', 'closed', 'lost'] as const)
      m.connectionState.set({ command, target, state: s }, s === state ? 1 : 0);
    m.connectionUp.set({ command, target }, state === 'connected' ? 1 : 0);
  };
}
