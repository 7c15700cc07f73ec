import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Broker } from '../amqp/connect.js';
import { DELIVERY_EXCHANGE } from '../amqp/connect.js';
import { ConfirmPublisher, type PublishOutcome } from '../amqp/confirm-publisher.js';
import { returnProbeMessage, sendReturnProbe } from '../amqp/probe.js';
import { InFlight } from '../batch/in-flight.js';
import { EnvironmentError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { adjudicate, afterFailure, checkPublisher, prePublish, type PrePublishDecision, type PublisherFacts, type RetryPolicy } from './decide.js';
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
  /** the zone of the service's DATETIMEs, for occurredAt's offset: an IANA name or `±HH:MM` */
  readonly serviceTimeZone: string;
  /** a grant check older than this when its row is published is read again (back-pressure can delay a publish) */
  readonly grantMaxAgeMs?: number;
}

/** How old a batch's grant check may be at the moment one of its rows is published. */
export const GRANT_MAX_AGE_MS = 5000;

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
  /** messages the broker refused alone (a channel exception each, found by resending the suspects one at a time) */
  brokerRefusals: number;
  stoppedBy: 'drained' | 'max-rows' | 'max-seconds' | 'signal' | 'broker-lost' | 'broker-refusing' | 'broker-blocked' | 'publisher-identity';
  /** why the broker went away mid-run (or refuses every message: `broker-refusing`); the command then exits 3 after its summary */
  brokerLost?: string;
  /** why the publisher identity failed mid-run (the registry changed); the command exits 3 after its summary */
  publisherIdentity?: string;
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
  return { claimed: 0, published: 0, accepted: 0, failed: 0, dead: 0, revoked: 0, held: 0, skipped: 0, wouldPublish: 0, failedByReason: {}, stale: 0, brokerRefusals: 0, stoppedBy: 'drained' };
}

/** Groups per-row decisions into one write per distinct transition (batched, SPEC §2). */
export function planWrites(
  items: ReadonlyArray<{ row: DeliveryRow; decision: PrePublishDecision; outcome?: PublishOutcome }>,
  policy: RetryPolicy,
  holdRecheckSeconds: number,
): { writes: Write[]; results: Array<{ row: DeliveryRow; result: RowResult }> } {
  const accept: Generation[] = [];
  const release: Generation[] = [];
  const bury: Generation[] = [];
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
      case 'exhausted':
        bury.push(gen);
        results.push({ row, result: { kind: 'failed', reason: 'RETRY_BUDGET_SPENT', dead: true } });
        break;
      case 'publish': {
        const t = adjudicate(outcome ?? { kind: 'unsent' });
        if (t.kind === 'accept') {
          accept.push(gen);
          results.push({ row, result: { kind: 'accepted' } });
        } else if (t.kind === 'release') {
          release.push(gen);
          results.push({ row, result: { kind: 'skipped', reason: t.reason } });
        } else addFail(row, t.reason, t.detail);
        break;
      }
    }
  }
  const writes: Write[] = [];
  if (accept.length) writes.push({ kind: 'accept', gens: accept });
  for (const g of fail.values()) writes.push({ kind: 'fail', ...g });
  for (const [reason, gens] of revoke) writes.push({ kind: 'revoke', gens, lastError: reason });
  if (hold.length) writes.push({ kind: 'hold', gens: hold, recheckSeconds: holdRecheckSeconds });
  if (bury.length) writes.push({ kind: 'bury', gens: bury });
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

/**
 * The publisher identity of SPEC §5 step 1, checked before any row is claimed: a wrong
 * FCCTL_APP_KEY or FCCTL_APP_CODE is the run's problem, not each row's (one wrong key would
 * otherwise spend every row's budget and turn the outbox DEAD). Exit 3, naming the setting.
 */
export async function verifiedPublisher(db: Db, publisher: SendDeps['publisher'], consequence = 'no row was claimed'): Promise<PublisherFacts> {
  const facts = await publisherFacts(db, publisher);
  const check = checkPublisher(facts);
  if (check.ok) return facts;
  const setting =
    check.reason === 'REGISTRY_UNREACHABLE'
      ? 'the app registry (application_info) could not be read'
      : `${check.detail}: check FCCTL_APP_CODE (${JSON.stringify(publisher.appCode)}) and FCCTL_APP_KEY (${JSON.stringify(publisher.appKey)}) against application_info`;
  throw new PublisherIdentityError(`publisher identity: ${setting}; ${consequence}`);
}

/** The publisher identity failed (exit 3): a misconfiguration, never charged to rows. */
export class PublisherIdentityError extends EnvironmentError {}

/** The pre-publish decisions of `rows`, with their grants read now. */
async function decideRows(db: Db, rows: readonly DeliveryRow[], facts: PublisherFacts, maxRetries: number) {
  const grants = await grantsFor(db, rows);
  return rows.map((row) => ({
    row,
    decision: prePublish(row, { publisher: facts, grant: grants.get(grantKey(row.form_uuid, row.consumer_school_id, row.consumer_app_key)), maxRetries }),
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

  const maxRetries = options.retry.maxRetries;
  if (options.dryRun) {
    let afterId = '0';
    for (;;) {
      const stop = stopReason();
      if (stop) {
        summary.stoppedBy = stop;
        break;
      }
      const facts = await verifiedPublisher(deps.db, deps.publisher);
      const rows = await peekDue(deps.db, afterId, Math.min(options.batchSize, options.maxRows - summary.claimed));
      if (rows.length === 0) break;
      afterId = String(rows[rows.length - 1]!.id);
      summary.claimed += rows.length;
      const decided = await decideRows(deps.db, rows, facts, maxRetries);
      const { results } = planWrites(decided.map((d) => (d.decision.kind === 'publish' ? { ...d, outcome: { kind: 'ack', returned: false } as const } : d)), options.retry, options.holdRecheckSeconds);
      report(results.map((r) => (r.result.kind === 'accepted' ? { row: r.row, result: { kind: 'would-publish' } as const } : r)));
    }
    return summary;
  }

  if (!deps.broker) throw new Error('runSend needs a broker unless dryRun');
  const broker = deps.broker;
  const owner = newClaimOwner();
  let facts = await verifiedPublisher(deps.db, deps.publisher);
  let channel;
  try {
    channel = await broker.confirmChannel();
  } catch (err) {
    throw new EnvironmentError(`cannot open a confirm channel: ${(err as Error).message}`, { cause: err });
  }
  const publisher = new ConfirmPublisher(channel, options.window, options.confirmTimeoutMs, { reopen: () => broker.confirmChannel(), probe: returnProbeMessage });
  // Seed 004: without observable returns no scan-send. Proven where the rows go, before any claim.
  const probe = await sendReturnProbe(publisher, options.confirmTimeoutMs);
  if (!probe.ok) {
    await publisher.close();
    // A broker under a resource alarm confirms nothing: that, not the exchange, is the cause.
    if (broker.blocked !== null) throw new EnvironmentError(`the broker is blocking publishes (${broker.blocked}: a resource alarm); nothing was claimed or sent`);
    throw new EnvironmentError(`return probe failed: ${probe.detail}; nothing was claimed or sent`);
  }
  const inFlight = new InFlight();
  let fatal: unknown = null;
  const grantMaxAgeMs = options.grantMaxAgeMs ?? GRANT_MAX_AGE_MS;

  const processBatch = async (rows: DeliveryRow[], claimedAt: number, batchFacts: PublisherFacts) => {
    // A confirm must arrive while the claim is still ours; keep a second of margin for the write.
    const notAfter = claimedAt + options.leaseSeconds * 1000 - 1000;
    const decided: Array<{ row: DeliveryRow; decision: PrePublishDecision; outcome?: Promise<PublishOutcome> }> = await decideRows(deps.db, rows, batchFacts, maxRetries);
    let checkedAt = deps.clock();
    for (let i = 0; i < decided.length; i++) {
      if (decided[i]!.decision.kind !== 'publish') continue;
      // Under back-pressure a publish can come long after its batch's grant check: look again,
      // after every wait (with --pipeline another batch may take the slot meanwhile).
      for (;;) {
        if (publisher.busy) await publisher.slot();
        if (deps.clock() - checkedAt <= grantMaxAgeMs) break;
        const again = await decideRows(deps.db, decided.slice(i).map((d) => d.row), batchFacts, maxRetries);
        again.forEach((d, k) => (decided[i + k] = d));
        checkedAt = deps.clock();
        if (decided[i]!.decision.kind !== 'publish') break;
      }
      if (decided[i]!.decision.kind !== 'publish') continue;
      const d = decided[i]!;
      const routingKey = (d.decision as { routingKey: string }).routingKey;
      d.outcome = publisher.publish({ exchange: DELIVERY_EXCHANGE, routingKey, body: buildEnvelope(d.row, options.serviceTimeZone), options: messageOptions(d.row) }, notAfter);
    }
    const outcomes = await Promise.all(
      decided.map(async ({ row, decision, outcome }) => {
        if (!outcome) return { row, decision };
        const o = await outcome;
        if (o.kind !== 'unsent' && !(o.kind === 'refused' && o.sent === false)) summary.published += 1;
        return { row, decision, outcome: o };
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
    let rows: DeliveryRow[];
    try {
      // Identity again before each claim: a registry changed mid-run stops the run, charging nobody.
      facts = await verifiedPublisher(deps.db, deps.publisher, 'claimed no more rows; what was in flight was finished');
      rows = await claimDue(deps.db, owner, limit, options.leaseSeconds);
    } catch (err) {
      // Stop claiming, but finish (or release) what is in flight before giving up.
      if (err instanceof PublisherIdentityError) {
        summary.stoppedBy = 'publisher-identity';
        summary.publisherIdentity = err.message;
      } else fatal ??= err;
      break;
    }
    if (rows.length === 0) {
      if (inFlight.size === 0) break;
      // Rows may come back due (held elsewhere, released) only later; finish what is in flight.
      await inFlight.next();
      continue;
    }
    summary.claimed += rows.length;
    inFlight.add(
      processBatch(rows, claimedAt, facts).catch((err: unknown) => {
        fatal ??= err;
      }),
    );
  }
  await inFlight.all();
  summary.brokerRefusals = publisher.refusals;
  const lost = publisher.lost;
  await publisher.close();
  if (fatal) throw fatal;
  if (summary.publisherIdentity) return summary;
  if (lost) {
    summary.stoppedBy = publisher.refusing ? 'broker-refusing' : 'broker-lost';
    summary.brokerLost = lost;
  } else if (broker.blocked !== null) {
    summary.stoppedBy = 'broker-blocked';
    summary.brokerBlocked = broker.blocked;
  }
  return summary;
}
