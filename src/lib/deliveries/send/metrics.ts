/**
 * What a follow relay reports to its `/metrics` (src/lib/service/metrics.ts), as the hooks of
 * `followSend`: rows by result and reason code, publishes, confirms by outcome, commit-to-confirm
 * and batch durations, reconnects, connection states, the in-flight gauge. Without `--listen`
 * (no metrics) every hook is left out.
 */
import type { ConfirmPublisher } from '../../amqp/confirm-publisher.js';
import { LatencyWindow } from '../../service/decide.js';
import type { ServiceMetrics } from '../../service/metrics.js';
import type { ServiceHandle } from '../../service/run.js';
import type { FollowEvents } from './follow.js';
import type { SendDeps } from './types.js';

const COMMAND = 'deliveries send';

/** A reason as a label: its code only (the part before any `:` detail), bounded in length. */
export function reasonLabel(result: { kind: string; reason?: string }): string {
  return result.reason === undefined ? '' : result.reason.split(':')[0]!.slice(0, 40);
}

/** How a publish outcome is counted: ack, returned (acked but unroutable), nack, timeout, or lost (channel gone, refused, unsent). */
export function confirmLabel(o: {
  kind: string;
  returned?: boolean;
}): 'ack' | 'returned' | 'nack' | 'timeout' | 'lost' {
  if (o.kind === 'ack') return o.returned ? 'returned' : 'ack';
  if (o.kind === 'nack' || o.kind === 'timeout') return o.kind;
  return 'lost';
}

/**
 * The hooks that feed the metrics.
 * @example followSend(options, { ...deps, ...relayMetrics(svc.metrics) })
 */
export function relayMetrics(
  m: ServiceMetrics | null,
): Pick<SendDeps, 'onRow' | 'onBatch' | 'onSettled'> &
  Pick<FollowEvents, 'onReconnect' | 'onConnection' | 'onPublisher'> {
  if (m === null) return {};
  let published = 0;
  return {
    onRow: (_row, result) => m.relayRows.inc({ result: result.kind, reason: reasonLabel(result) }),
    onBatch: (summary) => {
      if (summary.published > published) m.relayPublishes.inc(summary.published - published);
      published = summary.published;
    },
    onSettled: (batch) => {
      m.relayBatchDuration.observe((batch.settledAt - batch.claimedAt) / 1000);
      for (const o of batch.outcomes) if (o !== undefined) m.relayConfirms.inc({ outcome: confirmLabel(o) });
      for (const ms of confirmLatencies(batch)) m.relayCommitToConfirm.observe(ms / 1000);
    },
    onReconnect: (target) => m.reconnects.inc({ command: COMMAND, target }),
    onConnection: (target, up) => m.connectionUp.set({ command: COMMAND, target }, up ? 1 : 0),
    onPublisher: (p) => {
      m.inFlightSource = () => p?.pending ?? 0;
    },
  };
}

/** Milliseconds from a row's creation to its batch's confirms, for each acked row of a settled batch. */
function confirmLatencies(batch: Parameters<NonNullable<SendDeps['onSettled']>>[0]): number[] {
  const out: number[] = [];
  batch.outcomes.forEach((o, i) => {
    const age = Number(batch.rows[i]?.age_ms);
    if (o !== undefined && confirmLabel(o) === 'ack' && Number.isFinite(age))
      out.push(age + batch.settledAt - batch.claimedAt);
  });
  return out;
}

/**
 * The follow relay's status line (a terminal's view, the progress lines): state, rows/s over the
 * last beat, p99 commit-to-confirm over the last 1,000 rows, messages in flight, rows due.
 */
export function followStatus(
  svc: ServiceHandle,
): { status: () => Record<string, string | number> } & Required<Pick<SendDeps, 'onSettled'>> &
  Required<Pick<FollowEvents, 'onPublisher'>> {
  const latency = new LatencyWindow();
  let publisher: ConfirmPublisher | null = null;
  return {
    onSettled: (batch) => {
      for (const ms of confirmLatencies(batch)) latency.record(ms);
    },
    onPublisher: (p) => {
      publisher = p;
    },
    status: () => {
      const beat = svc.beat();
      const p99 = latency.quantile(0.99);
      return {
        state: svc.state(),
        'rows/s': Math.round(beat.rowsPerSecond * 10) / 10,
        'p99 ms': p99 === null ? '–' : Math.round(p99),
        'in flight': publisher?.pending ?? 0,
        due: beat.due ?? '–',
      };
    },
  };
}
