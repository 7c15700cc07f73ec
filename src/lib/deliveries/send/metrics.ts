/**
 * What a follow relay reports to its `/metrics` (src/lib/service/metrics.ts), as the hooks of
 * `followSend`: rows by result and reason code, publishes, confirms by outcome, commit-to-confirm
 * and batch durations, reconnects, connection states, the in-flight gauge. Without `--listen`
 * (no metrics) every hook is left out.
 */
import type { ServiceMetrics } from '../../service/metrics.js';
import type { FollowEvents } from './follow.js';
import type { SendDeps } from './types.js';

const COMMAND = 'deliveries send';

/** A reason as a label: its code only (the part before any `:` detail), bounded in length. */
export function reasonLabel(result: { kind: string; reason?: string }): string {
  return result.reason === undefined ? '' : result.reason.split(':')[0]!.slice(0, 40);
}

/** How a publish outcome is counted: ack, returned (acked but unroutable), nack, timeout, or lost (channel gone, refused, unsent). */
export function confirmLabel(o: { kind: string; returned?: boolean }): 'ack' | 'returned' | 'nack' | 'timeout' | 'lost' {
  if (o.kind === 'ack') return o.returned ? 'returned' : 'ack';
  if (o.kind === 'nack' || o.kind === 'timeout') return o.kind;
  return 'lost';
}

/**
 * The hooks that feed the metrics.
 * @example followSend(options, { ...deps, ...relayMetrics(svc.metrics) })
 */
export function relayMetrics(m: ServiceMetrics | null): Pick<SendDeps, 'onRow' | 'onBatch' | 'onSettled'> & Pick<FollowEvents, 'onReconnect' | 'onConnection' | 'onPublisher'> {
  if (m === null) return {};
  let published = 0;
  return {
    onRow: (_row, result) => m.relayRows.inc({ result: result.kind, reason: reasonLabel(result) }),
    onBatch: (summary) => {
      if (summary.published > published) m.relayPublishes.inc(summary.published - published);
      published = summary.published;
    },
    onSettled: ({ rows, outcomes, claimedAt, settledAt }) => {
      m.relayBatchDuration.observe((settledAt - claimedAt) / 1000);
      outcomes.forEach((o, i) => {
        if (o === undefined) return;
        const label = confirmLabel(o);
        m.relayConfirms.inc({ outcome: label });
        const age = Number(rows[i]?.age_ms);
        if (label === 'ack' && Number.isFinite(age)) m.relayCommitToConfirm.observe((age + settledAt - claimedAt) / 1000);
      });
    },
    onReconnect: (target) => m.reconnects.inc({ command: COMMAND, target }),
    onConnection: (target, up) => m.connectionUp.set({ command: COMMAND, target }, up ? 1 : 0),
    onPublisher: (p) => {
      m.inFlightSource = () => p?.pending ?? 0;
    },
  };
}
