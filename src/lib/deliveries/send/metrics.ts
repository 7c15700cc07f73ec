/**
 * What a follow relay reports to its `/metrics` (src/lib/service/metrics.ts), as the hooks of
 * `followSend`: rows by result and reason code, publishes, confirms by outcome, claim-to-confirm,
 * created-to-confirm and batch durations, connection states (and reconnects), the in-flight gauge. Without `--listen`
 * (no metrics) every hook is left out.
 */
import type { ConfirmPublisher } from '../../amqp/confirm-publisher.js';
import { LatencyWindow, reasonLabel, resultLabel } from '../../service/decide.js';
import { connectionReporter, type ServiceMetrics } from '../../service/metrics.js';
import type { ServiceHandle } from '../../service/run.js';
import type { FollowEvents } from './follow.js';
import type { SendDeps } from './types.js';

const COMMAND = 'deliveries send';

export { reasonLabel } from '../../service/decide.js';

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
): Pick<SendDeps, 'onRow' | 'onBatch' | 'onSettled'> & Pick<FollowEvents, 'onConnection' | 'onPublisher'> {
  if (m === null) return {};
  let published = 0;
  return {
    onRow: (_row, result) => {
      const label = resultLabel(result);
      if (label !== null) m.relayRows.inc({ result: label, reason: reasonLabel(result) });
    },
    onBatch: (summary) => {
      if (summary.published > published) m.relayPublishes.inc(summary.published - published);
      published = summary.published;
    },
    onSettled: (batch) => {
      m.relayBatchDuration.observe((batch.settledAt - batch.claimedAt) / 1000);
      for (const o of batch.outcomes) if (o !== undefined) m.relayConfirms.inc({ outcome: confirmLabel(o) });
      for (const ms of claimToConfirm(batch)) m.relayClaimToConfirm.observe(ms / 1000);
      for (const ms of createdToConfirm(batch)) m.relayCreatedToConfirm.observe(ms / 1000);
    },
    onConnection: connectionReporter(m, COMMAND),
    onPublisher: (p) => {
      m.inFlightSource = () => p?.pending ?? 0;
    },
  };
}

type SettledBatch = Parameters<NonNullable<SendDeps['onSettled']>>[0];

/**
 * Milliseconds from a batch's claim commit to each of its rows' confirms (every attempt, acked or
 * nacked). A confirm that never came (timeout, channel closed, not sent) has no confirm time: it is
 * counted in `fcctl_relay_confirms_total` only, never as a latency.
 */
function claimToConfirm(batch: SettledBatch): number[] {
  const out: number[] = [];
  batch.confirmMs.forEach((ms, i) => {
    const o = batch.outcomes[i];
    if (ms !== undefined && o !== undefined && isConfirm(o)) out.push(Math.max(ms, 0));
  });
  return out;
}

/** Whether an outcome is the broker's publisher confirm: an ack (returned or not) or a nack. */
export function isConfirm(o: { kind: string }): boolean {
  return o.kind === 'ack' || o.kind === 'nack';
}

/**
 * Milliseconds from a row's creation (whole seconds) to its confirm, for each acked row of a
 * settled batch on its first attempt (`age_ms` is read only for those: sql.ts).
 */
function createdToConfirm(batch: SettledBatch): number[] {
  const out: number[] = [];
  batch.outcomes.forEach((o, i) => {
    const age = batch.rows[i]?.age_ms;
    if (
      o !== undefined &&
      confirmLabel(o) === 'ack' &&
      age !== null &&
      age !== undefined &&
      Number.isFinite(Number(age))
    )
      out.push(Number(age) + (batch.confirmMs[i] ?? batch.settledAt - batch.claimedAt));
  });
  return out;
}

/**
 * The follow relay's status line (a terminal's view, the progress lines): state, rows/s over the
 * last beat, p99 claim-to-confirm over the last 1,000 rows (as `/metrics`' histogram), messages in flight, rows due.
 */
export function followStatus(
  svc: ServiceHandle,
): { status: () => Record<string, string | number> } & Required<Pick<SendDeps, 'onSettled'>> &
  Required<Pick<FollowEvents, 'onPublisher'>> {
  const latency = new LatencyWindow();
  let publisher: ConfirmPublisher | null = null;
  return {
    onSettled: (batch) => {
      for (const ms of claimToConfirm(batch)) latency.record(ms);
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
