import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Broker } from '../amqp/connect.js';
import { DELIVERY_EXCHANGE } from '../amqp/connect.js';
import { ConfirmPublisher, type PublishOutcome } from '../amqp/confirm-publisher.js';
import { InFlight } from '../batch/in-flight.js';
import { EnvironmentError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { adjudicate, afterFailure, prePublish, type PrePublishDecision, type PublisherFacts, type RetryPolicy } from './decide.js';
import { buildEnvelope, messageOptions } from './envelope.js';
import { applyWritesReportingStale, claimDue, grantsFor, peekDue, registryByCode, type Write } from './sql.js';
import { type DeliveryRow, type Generation, generationOf, grantKey } from './types.js';

export interface SendOptions {
  readonly batchSize: number;
  readonly window: number;
  readonly maxRows: number;
  readonly maxSeconds: number;
  readonly leaseSeconds: number;
  readonly confirmTimeoutMs: number;
  readonly holdRecheckSeconds: number;
  readonly retry: RetryPolicy;
  readonly dryRun: boolean;
  /** batches claimed ahead while earlier ones are still being confirmed */
  readonly pipeline: number;
}

/** The result of one row, as reported in events and counted in the summary. */
export type RowResult =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'failed'; readonly reason: string; readonly dead: boolean }
  | { readonly kind: 'revoked'; readonly reason: string }
  | { readonly kind: 'held' }
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'would-publish' };

export interface SendSummary {
  claimed: number;
  published: number;
  accepted: number;
  failed: number;
  dead: number;
  revoked: number;
  held: number;
  skipped: number;
  wouldPublish: number;
  failedByReason: Record<string, number>;
  /** adjudications the generation guard turned away (a replay or another worker got there first) */
  stale: number;
  stoppedBy: 'drained' | 'max-rows' | 'max-seconds' | 'signal' | 'broker-lost' | 'broker-blocked';
  /** why the broker went away mid-run; the command then exits 3 after its summary */
  brokerLost?: string;
  /** why the broker blocked publishing (a resource alarm); the run stopped claiming, exit 3 */
  brokerBlocked?: string;
}

export interface SendDeps {
  readonly db: Db;
  readonly broker: Broker | null;
  readonly publisher: { readonly appKey: string; readonly appCode: string };
  readonly signal: AbortSignal;
  readonly clock: () => number;
  readonly onRow?: (row: DeliveryRow, result: RowResult) => void;
  readonly onBatch?: (summary: Readonly<SendSummary>) => void;
}

/** A claim owner unique to this process run: host, pid and a random suffix. */
export function newClaimOwner(): string {
  return `${hostname().slice(0, 60)}:${process.pid}:${randomBytes(6).toString('hex')}`;
}

function emptySummary(): SendSummary {
  return { claimed: 0, published: 0, accepted: 0, failed: 0, dead: 0, revoked: 0, held: 0, skipped: 0, wouldPublish: 0, failedByReason: {}, stale: 0, stoppedBy: 'drained' };
}

/** Groups per-row decisions into one write per distinct transition (batched, SPEC §2). */
export function planWrites(
  items: ReadonlyArray<{ row: DeliveryRow; decision: PrePublishDecision; outcome?: PublishOutcome }>,
  policy: RetryPolicy,
  holdRecheckSeconds: number,
): { writes: Write[]; results: Array<{ row: DeliveryRow; result: RowResult }> } {
  const accept: Generation[] = [];
  const release: Generation[] = [];
  const hold: Generation[] = [];
  const revoke = new Map<string, Generation[]>();
  const fail = new Map<string, { gens: Generation[]; state: 'FAILED' | 'DEAD'; retryCount: number; backoffSeconds: number | null; lastError: string }>();
  const results: Array<{ row: DeliveryRow; result: RowResult }> = [];
  const addFail = (row: DeliveryRow, reason: string, detail: string) => {
    const next = afterFailure(Number(row.retry_count), policy);
    const lastError = detail ? `${reason}: ${detail}` : reason;
    const key = `${next.state}|${next.retryCount}|${next.backoffSeconds}|${lastError}`;
    const group = fail.get(key) ?? { gens: [], ...next, lastError };
    group.gens.push(generationOf(row));
    fail.set(key, group);
    results.push({ row, result: { kind: 'failed', reason, dead: next.state === 'DEAD' } });
  };
  for (const { row, decision, outcome } of items) {
    const gen = generationOf(row);
    switch (decision.kind) {
      case 'hold':
        hold.push(gen);
        results.push({ row, result: { kind: 'held' } });
        break;
      case 'revoke': {
        const list = revoke.get(decision.reason) ?? [];
        list.push(gen);
        revoke.set(decision.reason, list);
        results.push({ row, result: { kind: 'revoked', reason: decision.reason } });
        break;
      }
      case 'fail':
        addFail(row, decision.reason, decision.detail);
        break;
      case 'publish': {
        if (!outcome || outcome.kind === 'unsent') {
          release.push(gen);
          results.push({ row, result: { kind: 'skipped', reason: 'NOT_SENT' } });
          break;
        }
        const t = adjudicate(outcome);
        if (t.kind === 'accept') {
          accept.push(gen);
          results.push({ row, result: { kind: 'accepted' } });
        } else addFail(row, t.reason, '');
        break;
      }
    }
  }
  const writes: Write[] = [];
  if (accept.length) writes.push({ kind: 'accept', gens: accept });
  for (const g of fail.values()) writes.push({ kind: 'fail', ...g });
  for (const [reason, gens] of revoke) writes.push({ kind: 'revoke', gens, lastError: reason });
  if (hold.length) writes.push({ kind: 'hold', gens: hold, recheckSeconds: holdRecheckSeconds });
  if (release.length) writes.push({ kind: 'release', gens: release });
  return { writes, results };
}

async function publisherFacts(db: Db, publisher: SendDeps['publisher']): Promise<PublisherFacts> {
  let registry: PublisherFacts['registry'];
  try {
    registry = await registryByCode(db, publisher.appCode);
  } catch {
    registry = 'unreachable';
  }
  return { appKey: publisher.appKey, appCode: publisher.appCode, registry };
}

async function decideBatch(db: Db, rows: readonly DeliveryRow[], publisher: SendDeps['publisher']) {
  const facts = await publisherFacts(db, publisher);
  const grants = await grantsFor(db, rows);
  return rows.map((row) => ({
    row,
    decision: prePublish(row, { publisher: facts, grant: grants.get(grantKey(row.form_uuid, row.consumer_school_id, row.consumer_app_key)) }),
  }));
}

function count(summary: SendSummary, result: RowResult): void {
  switch (result.kind) {
    case 'accepted':
      summary.accepted += 1;
      break;
    case 'failed':
      if (result.dead) summary.dead += 1;
      else summary.failed += 1;
      summary.failedByReason[result.reason] = (summary.failedByReason[result.reason] ?? 0) + 1;
      break;
    case 'revoked':
      summary.revoked += 1;
      break;
    case 'held':
      summary.held += 1;
      break;
    case 'skipped':
      summary.skipped += 1;
      break;
    case 'would-publish':
      summary.wouldPublish += 1;
      break;
  }
}

/**
 * The v2 outbox relay (SPEC §5): claim due rows with a lease, check each before publishing,
 * publish with confirms and mandatory returns in a bounded window, and adjudicate every outcome
 * with writes guarded by claim and generation. No transaction is held across broker I/O: the
 * claim commits before publishing, the adjudication is a separate short write.
 */
export async function runSend(options: SendOptions, deps: SendDeps): Promise<SendSummary> {
  const summary = emptySummary();
  const started = deps.clock();
  const deadline = started + options.maxSeconds * 1000;
  const report = (results: Array<{ row: DeliveryRow; result: RowResult }>) => {
    for (const { row, result } of results) {
      count(summary, result);
      deps.onRow?.(row, result);
    }
    deps.onBatch?.(summary);
  };
  const stopReason = (): SendSummary['stoppedBy'] | null => {
    if (deps.signal.aborted) return 'signal';
    if (summary.claimed >= options.maxRows) return 'max-rows';
    if (deps.clock() >= deadline) return 'max-seconds';
    return null;
  };

  if (options.dryRun) {
    let afterId = '0';
    for (;;) {
      const stop = stopReason();
      if (stop) {
        summary.stoppedBy = stop;
        break;
      }
      const rows = await peekDue(deps.db, afterId, Math.min(options.batchSize, options.maxRows - summary.claimed));
      if (rows.length === 0) break;
      afterId = String(rows[rows.length - 1]!.id);
      summary.claimed += rows.length;
      const decided = await decideBatch(deps.db, rows, deps.publisher);
      const { results } = planWrites(decided.map((d) => (d.decision.kind === 'publish' ? { ...d, outcome: { kind: 'ack', returned: false } as const } : d)), options.retry, options.holdRecheckSeconds);
      report(results.map((r) => (r.result.kind === 'accepted' ? { row: r.row, result: { kind: 'would-publish' } as const } : r)));
    }
    return summary;
  }

  if (!deps.broker) throw new Error('runSend needs a broker unless dryRun');
  const broker = deps.broker;
  const owner = newClaimOwner();
  let channel;
  try {
    channel = await broker.confirmChannel();
  } catch (err) {
    throw new EnvironmentError(`cannot open a confirm channel: ${(err as Error).message}`, { cause: err });
  }
  const publisher = new ConfirmPublisher(channel, options.window, options.confirmTimeoutMs);
  const inFlight = new InFlight();
  let fatal: unknown = null;

  const processBatch = async (rows: DeliveryRow[], claimedAt: number) => {
    // A confirm must arrive while the claim is still ours; keep a second of margin for the write.
    const notAfter = claimedAt + options.leaseSeconds * 1000 - 1000;
    const decided = await decideBatch(deps.db, rows, deps.publisher);
    const outcomes = await Promise.all(
      decided.map(async (d) => {
        if (d.decision.kind !== 'publish') return d;
        const outcome = await publisher.publish(DELIVERY_EXCHANGE, d.decision.routingKey, buildEnvelope(d.row), messageOptions(d.row), notAfter);
        if (outcome.kind !== 'unsent') summary.published += 1;
        return { ...d, outcome };
      }),
    );
    const { writes, results } = planWrites(outcomes, options.retry, options.holdRecheckSeconds);
    const stale = await applyWritesReportingStale(deps.db, owner, writes);
    summary.stale += stale.size;
    report(results.map((r) => (stale.has(String(r.row.id)) ? { row: r.row, result: { kind: 'skipped', reason: 'STALE' } as const } : r)));
  };

  for (;;) {
    // A blocking broker confirms nothing until its alarm clears: claim no more rows meanwhile
    // (each would only time out and spend a retry).
    const stop = stopReason() ?? (publisher.closed ? 'broker-lost' : null) ?? (fatal ? 'broker-lost' : null) ?? (broker.blocked !== null ? 'broker-blocked' : null);
    if (stop) {
      summary.stoppedBy = stop;
      break;
    }
    if (inFlight.size >= options.pipeline) {
      await inFlight.next();
      continue;
    }
    const limit = Math.min(options.batchSize, options.maxRows - summary.claimed);
    const claimedAt = deps.clock();
    const rows = await claimDue(deps.db, owner, limit, options.leaseSeconds);
    if (rows.length === 0) {
      if (inFlight.size === 0) break;
      // Rows may come back due (held elsewhere, released) only later; finish what is in flight.
      await inFlight.next();
      continue;
    }
    summary.claimed += rows.length;
    inFlight.add(
      processBatch(rows, claimedAt).catch((err: unknown) => {
        fatal ??= err;
      }),
    );
  }
  await inFlight.all();
  const lost = publisher.lost;
  await publisher.close();
  if (fatal) throw fatal;
  if (lost) {
    summary.stoppedBy = 'broker-lost';
    summary.brokerLost = lost;
  } else if (broker.blocked !== null) {
    summary.stoppedBy = 'broker-blocked';
    summary.brokerBlocked = broker.blocked;
  }
  return summary;
}
