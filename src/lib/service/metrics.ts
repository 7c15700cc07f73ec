/**
 * The metrics a `--follow` service serves on `/metrics` (issue 27 §3), through prom-client — never
 * a hand-written exposition format. Loaded only with `--listen`: a cron run pays nothing for it.
 * Labels are of bounded sets only (a result, a reason code, a target), never an event, answer or
 * school id. One registry per process (not prom-client's global one), so tests can hold several.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the relay's and the resolver's loops report; every method is cheap (a counter or a gauge set). */
export interface ServiceMetrics {
  readonly registry: Registry;
  readonly ready: Gauge;
  readonly paused: Gauge;
  readonly connectionUp: Gauge;
  readonly reconnects: Counter;
  readonly lastProgress: Gauge;
  readonly relayRows: Counter;
  readonly relayPublishes: Counter;
  readonly relayConfirms: Counter;
  readonly relayCommitToConfirm: Histogram;
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

/** Seconds from a row's creation to its confirm: sub-second for a follow relay, minutes for cron. */
const LATENCY_BUCKETS = [0.05, 0.1, 0.15, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
const BATCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15];

/**
 * A registry with the service families, and the process's own (`collectDefaultMetrics`).
 * @example const m = await serviceMetrics(); m.relayPublishes.inc(); await m.registry.metrics()
 */
export async function serviceMetrics(): Promise<ServiceMetrics> {
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  // the event-loop delay sampled every 100 ms, not prom-client's 10 ms: an idle relay's CPU is mostly that timer otherwise
  prom.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new prom.Gauge({ name, help, labelNames, registers: [registry] });
  const counter = (name: string, help: string, labelNames: string[] = []) =>
    new prom.Counter({ name, help, labelNames, registers: [registry] });
  const histogram = (name: string, help: string, buckets: number[]) =>
    new prom.Histogram({ name, help, buckets, registers: [registry] });
  const m: { inFlightSource: () => number } = { inFlightSource: () => 0 };
  return Object.assign(m, {
    registry,
    ready: gauge('fcctl_service_ready', '1 when connected, checked and not paused (what /readyz answers)', ['command']),
    paused: gauge('fcctl_service_paused', '1 while the pause switch holds the service', ['command']),
    connectionUp: gauge('fcctl_service_connection_up', '1 while the connection to the target is usable', [
      'command',
      'target',
    ]),
    reconnects: counter('fcctl_service_reconnects_total', 'connections opened again after a loss', [
      'command',
      'target',
    ]),
    lastProgress: gauge('fcctl_service_last_progress_timestamp_seconds', 'when the loop last completed a step', [
      'command',
    ]),
    relayRows: counter('fcctl_relay_rows_total', 'rows adjudicated, by result and reason code', ['result', 'reason']),
    relayPublishes: counter('fcctl_relay_publishes_total', 'messages published'),
    relayConfirms: counter('fcctl_relay_confirms_total', 'publish outcomes: ack, nack, timeout, returned', ['outcome']),
    relayCommitToConfirm: histogram(
      'fcctl_relay_commit_to_confirm_seconds',
      "from the outbox row's create_time (whole seconds, the column's) to its confirm",
      LATENCY_BUCKETS,
    ),
    relayBatchDuration: histogram(
      'fcctl_relay_batch_duration_seconds',
      'from a batch claimed to its rows adjudicated',
      BATCH_BUCKETS,
    ),
    relayInFlight: new prom.Gauge({
      name: 'fcctl_relay_in_flight_messages',
      help: 'messages published and not yet confirmed',
      registers: [registry],
      collect() {
        this.set(m.inFlightSource());
      },
    }),
    relayDue: gauge('fcctl_relay_due_rows', 'rows due now (counted up to 100000, every few seconds)'),
    relayOldestDue: gauge('fcctl_relay_oldest_due_age_seconds', 'age of the oldest due row (0: none due)'),
    resolverCommands: counter('fcctl_resolver_commands_total', 'apply commands settled, by result', ['result']),
    resolverDue: gauge('fcctl_resolver_due_commands', 'apply commands due now'),
    resolverOldestDue: gauge(
      'fcctl_resolver_oldest_due_age_seconds',
      'age of the oldest due apply command (0: none due)',
    ),
  });
}
