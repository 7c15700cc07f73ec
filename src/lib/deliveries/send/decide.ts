/**
 * `deliveries send`, the decisions, pure: the pre-publish checks of SPEC §5, the adjudication of
 * a broker outcome, the writes a batch's results group into, and what a finished run comes to
 * (exit code, summary, error line). The runner (`run.ts`) collects the facts and applies these.
 */
import { pausedGauge } from '../../metrics/paused.js';
import { isPositiveIntegerText } from '../../ids.js';
import { checkSnapshot, routingKeyFor } from '../envelope.js';
import { afterFailure, type RetryPolicy } from '../retry.js';
import type { PublishOutcome } from '../../amqp/confirm-publisher.js';
import { DELIVERY_EXCHANGE, vhostOf } from '../../amqp/connect.js';
import { batchExitCode, EnvironmentError, type ExitCode, UsageError } from '../../cli/exit.js';
import { type Config, requireSetting } from '../../config/config.js';
import type { Gauge } from '../../metrics/textfile.js';
import { pauseFields } from '../../pause/decide.js';
import {
  type DeliveryRow,
  type FailReason,
  type Generation,
  generationOf,
  type GrantRow,
  type RegistryRow,
} from '../types.js';
import type { RowResult, SendOptions, SendSummary, Write } from './types.js';

/** What the pre-publish checks decided for one claimed row (SPEC §5, in order). */
export type PrePublishDecision =
  | { readonly kind: 'publish'; readonly routingKey: string }
  /** a FAILED row whose budget is already spent (at or over the retry limit): DEAD, never sent */
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'hold'; readonly reason: 'PUSH_DISABLED' }
  | {
      readonly kind: 'revoke';
      readonly reason: 'GRANT_MISSING' | 'GRANT_REVOKED' | 'GRANT_NOT_READABLE' | 'GRANT_VERSION_CHANGED';
    }
  | { readonly kind: 'fail'; readonly reason: FailReason; readonly detail: string };

/** The publisher's identity as configured and as the registry reports it (or why it could not). */
export interface PublisherFacts {
  readonly appKey: string;
  readonly appCode: string;
  readonly registry: RegistryRow | 'unreachable' | null;
}

const EVENT_TYPES = new Set(['created', 'updated', 'tombstoned']);
const VALID_DATETIME = /^(?!0000)\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[ T]([01]\d|2[0-3]):[0-5]\d:[0-5]\d/;

/** Publisher identity (SPEC §5 step 1), decided once per batch. */
export function checkPublisher(
  facts: PublisherFacts,
): { ok: true } | { ok: false; reason: FailReason; detail: string } {
  const r = facts.registry;
  if (r === 'unreachable')
    return { ok: false, reason: 'REGISTRY_UNREACHABLE', detail: 'app registry could not be read' };
  if (r === null)
    return { ok: false, reason: 'REGISTRY_MISMATCH', detail: `no registry row for app code ${facts.appCode}` };
  if (!isPositiveIntegerText(String(r.id)))
    return { ok: false, reason: 'REGISTRY_MISMATCH', detail: `registry id ${r.id} is not a positive integer` };
  if (r.app_code !== facts.appCode)
    return { ok: false, reason: 'REGISTRY_MISMATCH', detail: 'registry app code differs' };
  if (r.app_key !== facts.appKey)
    return { ok: false, reason: 'REGISTRY_MISMATCH', detail: 'registry app key differs from the configured key' };
  return { ok: true };
}

/**
 * The pre-publish checks of SPEC §5, in order, for one claimed row. Pure: the grant and the
 * publisher facts were read fresh by the caller.
 * @example prePublish(row, { publisher, grant })
 */
export function prePublish(
  row: DeliveryRow,
  facts: { publisher: PublisherFacts; grant: GrantRow | undefined; maxRetries: number },
): PrePublishDecision {
  // 1. publisher identity
  if (row.source_app_key !== facts.publisher.appKey) {
    return {
      kind: 'fail',
      reason: 'SOURCE_MISMATCH',
      detail: `row source ${row.source_app_key} is not the configured app key`,
    };
  }
  const publisher = checkPublisher(facts.publisher);
  if (!publisher.ok) return { kind: 'fail', reason: publisher.reason, detail: publisher.detail };
  // 2. grant, read fresh
  const g = facts.grant;
  if (!g) return { kind: 'revoke', reason: 'GRANT_MISSING' };
  if (Number(g.revoked) !== 0) return { kind: 'revoke', reason: 'GRANT_REVOKED' };
  if (Number(g.read_allowed) !== 1 || Number(g.subscribe_allowed) !== 1)
    return { kind: 'revoke', reason: 'GRANT_NOT_READABLE' };
  if (String(g.grant_version) !== String(row.grant_version)) return { kind: 'revoke', reason: 'GRANT_VERSION_CHANGED' };
  if (Number(g.push_allowed) !== 1) return { kind: 'hold', reason: 'PUSH_DISABLED' };
  // The budget: a lowered --max-retries must not buy a FAILED row one more try (after the grant:
  // a revoked row is GRANT_REVOKED, a held one stays held).
  if (row.state === 'FAILED' && Number(row.retry_count) >= facts.maxRetries) return { kind: 'exhausted' };
  // 3. routing key, event, snapshot
  const rk = routingKeyFor(row.consumer_app_key, row.consumer_school_id);
  if (!rk.ok) return { kind: 'fail', reason: 'INVALID_ROUTING_KEY', detail: rk.detail };
  if (row.event_id.length === 0 || row.event_id.length > 36)
    return { kind: 'fail', reason: 'INVALID_EVENT', detail: 'event id must be 1–36 characters' };
  if (!EVENT_TYPES.has(row.event_type))
    return {
      kind: 'fail',
      reason: 'INVALID_EVENT',
      detail: `event type ${JSON.stringify(row.event_type)} is not created, updated or tombstoned`,
    };
  // occurredAt is built from it: a zero or impossible DATETIME (a lax sql_mode allows them) has no offset.
  if (!VALID_DATETIME.test(String(row.occurred_at)))
    return {
      kind: 'fail',
      reason: 'INVALID_EVENT',
      detail: `occurred_at ${JSON.stringify(String(row.occurred_at))} is not a valid DATETIME`,
    };
  const snap = checkSnapshot(row.snapshot_json, row.content_hash, {
    appKey: row.consumer_app_key,
    schoolId: String(row.consumer_school_id),
  });
  if (!snap.ok) return { kind: 'fail', reason: snap.reason, detail: snap.detail };
  return { kind: 'publish', routingKey: rk.routingKey };
}

/** What the broker said about one published message, as the relay observed it (the publisher's outcome). */
export type BrokerOutcome = PublishOutcome;

/** What to write for an outcome. Staleness (DEAD, GRANT_REVOKED, other generation) is the guard's job in SQL. */
export type Transition =
  | { readonly kind: 'accept' }
  | { readonly kind: 'fail'; readonly reason: FailReason; readonly detail: string }
  /** claim dropped, nothing charged: the row is due again at once */
  | { readonly kind: 'release'; readonly reason: 'NOT_SENT' | 'OUTCOME_UNKNOWN' };

/**
 * The stable code of a broker refusal (an AMQP channel exception) of one message.
 * @example refusalReason(406, 'PRECONDITION_FAILED - message size 2000 is larger than configured max size 1024') // 'MESSAGE_TOO_LARGE'
 */
export function refusalReason(code: number, text: string): FailReason {
  switch (code) {
    case 403:
      return 'ACCESS_REFUSED';
    case 406:
      return /message size|max(imum)? size|too large/i.test(text) ? 'MESSAGE_TOO_LARGE' : 'PRECONDITION_FAILED';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'RESOURCE_LOCKED';
    default:
      return 'BROKER_REFUSED';
  }
}

/**
 * The adjudication table of SPEC §5 / seed 004: only an ack of a message that was not returned
 * is acceptance; a returned message is NO_ROUTE even when acked. A message whose confirm was lost
 * to another message's refusal is released, not charged (at-least-once: a duplicate is allowed, a
 * false DEAD is not).
 * @example adjudicate({ kind: 'ack', returned: true }) // { kind: 'fail', reason: 'NO_ROUTE', detail: '' }
 */
export function adjudicate(outcome: BrokerOutcome): Transition {
  switch (outcome.kind) {
    case 'ack':
      return outcome.returned ? { kind: 'fail', reason: 'NO_ROUTE', detail: '' } : { kind: 'accept' };
    case 'nack':
      return { kind: 'fail', reason: 'NACK', detail: '' };
    case 'timeout':
      return { kind: 'fail', reason: 'CONFIRM_TIMEOUT', detail: '' };
    case 'closed':
      return { kind: 'fail', reason: 'CHANNEL_CLOSED', detail: '' };
    case 'error':
      return { kind: 'fail', reason: 'PUBLISH_ERROR', detail: outcome.detail };
    case 'refused':
      return { kind: 'fail', reason: refusalReason(outcome.code, outcome.text), detail: outcome.text };
    case 'unknown':
      return { kind: 'release', reason: 'OUTCOME_UNKNOWN' };
    case 'unsent':
      return { kind: 'release', reason: 'NOT_SENT' };
  }
}

/** A run that has done nothing yet. */
export function emptySummary(): SendSummary {
  return {
    claimed: 0,
    published: 0,
    accepted: 0,
    failed: 0,
    dead: 0,
    revoked: 0,
    held: 0,
    skipped: 0,
    wouldPublish: 0,
    failedByReason: {},
    released: 0,
    releasedByReason: {},
    stale: 0,
    brokerRefusals: 0,
    stoppedBy: 'drained',
  };
}

/** Groups per-row decisions into one write per distinct transition (batched, SPEC §2). */
export function planWrites(
  items: ReadonlyArray<{ row: DeliveryRow; decision: PrePublishDecision; outcome?: BrokerOutcome }>,
  policy: RetryPolicy,
  holdRecheckSeconds: number,
): { writes: Write[]; results: Array<{ row: DeliveryRow; result: RowResult }> } {
  const accept: Generation[] = [];
  const release: Generation[] = [];
  const bury: Generation[] = [];
  const hold: Generation[] = [];
  const revoke = new Map<string, Generation[]>();
  const fail = new Map<
    string,
    {
      gens: Generation[];
      state: 'FAILED' | 'DEAD';
      retryCount: number;
      backoffSeconds: number | null;
      lastError: string;
    }
  >();
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

/** Whether a re-read row shows the transition `w` (used only when a guarded write matched fewer rows). */
export function writeReached(w: Write, row: { state: string; retry_count: number | string }): boolean {
  switch (w.kind) {
    case 'accept':
      return row.state === 'BROKER_ACCEPTED';
    case 'fail':
      return row.state === w.state && Number(row.retry_count) === w.retryCount;
    case 'revoke':
      return row.state === 'GRANT_REVOKED';
    case 'bury':
      return row.state === 'DEAD';
    case 'hold':
    case 'release':
      return true;
  }
}

/** The summary counter of each result kind but `failed` (failed or dead, and counted by reason) and `released` (by reason). */
const COUNTER = {
  accepted: 'accepted',
  revoked: 'revoked',
  held: 'held',
  skipped: 'skipped',
  'would-publish': 'wouldPublish',
} as const;

/** Counts one row's result into the summary. */
export function countResult(summary: SendSummary, result: RowResult): void {
  if (result.kind === 'released') {
    summary.released += 1;
    summary.releasedByReason[result.reason] = (summary.releasedByReason[result.reason] ?? 0) + 1;
    return;
  }
  if (result.kind !== 'failed') {
    summary[COUNTER[result.kind]] += 1;
    return;
  }
  if (result.dead) summary.dead += 1;
  else summary.failed += 1;
  summary.failedByReason[result.reason] = (summary.failedByReason[result.reason] ?? 0) + 1;
}

// ── the run's outcome: exit code, summary, error line ──

/**
 * The exit code of a finished send (SPEC §2): 3 when the broker or the publisher identity stopped
 * it, 1 when a row failed or went DEAD or a signal ended it early, 0 otherwise.
 * @example sendExitCode({ ...emptySummary(), dead: 1 }) // 1
 */
export function sendExitCode(summary: SendSummary): ExitCode {
  return batchExitCode({
    environment: Boolean(summary.brokerLost || summary.brokerBlocked || summary.publisherIdentity),
    failed: summary.failed + summary.dead,
    interrupted: summary.stoppedBy === 'signal',
  });
}

/** The members `keys` of `summary`, in that order. */
function pick<K extends keyof SendSummary>(summary: SendSummary, keys: readonly K[]): Pick<SendSummary, K> {
  return Object.fromEntries(keys.map((k) => [k, summary[k]])) as Pick<SendSummary, K>;
}

/**
 * The summary `deliveries send` prints, in this key order; `wouldPublish` only on a dry run.
 * `seconds` is the unrounded run time: the rate is computed from it.
 * @example summarizeSend(summary, { dryRun: false }, 2.04, 'Asia/Shanghai').seconds // 2
 */
export function summarizeSend(
  summary: SendSummary,
  options: Pick<SendOptions, 'dryRun'>,
  seconds: number,
  serviceTimeZone: string,
) {
  return {
    command: 'deliveries send',
    exitCode: sendExitCode(summary),
    dryRun: options.dryRun,
    ...pick(summary, ['claimed', 'published', 'accepted', 'failed', 'dead', 'revoked', 'held', 'skipped']),
    ...(options.dryRun ? { wouldPublish: summary.wouldPublish } : {}),
    ...pick(summary, ['stale', 'brokerRefusals', 'failedByReason', 'released', 'releasedByReason', 'stoppedBy']),
    ...(summary.paused ? { paused: pauseFields(summary.paused) } : {}),
    serviceTimeZone,
    seconds: Math.round(seconds * 10) / 10,
    // from the unrounded time: the rate cron dashboards and the benchmark read
    rowsPerSecond: seconds > 0 ? Math.round(summary.claimed / seconds) : 0,
    throttledSeconds: summary.throttledSeconds ?? 0,
  };
}

/**
 * The one error line a run that the environment stopped ends with (exit 3, after its summary), or
 * null when it ended by itself.
 * @example sendStopError({ ...emptySummary(), brokerLost: 'ECONNRESET' }) // 'broker connection lost during the run (ECONNRESET); …'
 */
export function sendStopError(summary: SendSummary): string | null {
  if (summary.publisherIdentity) return summary.publisherIdentity;
  if (summary.stoppedBy === 'broker-refusing') {
    return `the broker takes no message on ${DELIVERY_EXCHANGE} any more (${summary.brokerLost}); unconfirmed rows were released without a retry charged`;
  }
  if (summary.brokerLost)
    return `broker connection lost during the run (${summary.brokerLost}); unconfirmed rows were marked FAILED and will be resent`;
  if (summary.brokerBlocked) {
    return `the broker is blocking publishes (${summary.brokerBlocked}: a resource alarm); stopped claiming, unconfirmed rows were marked FAILED and will be resent`;
  }
  return null;
}

/**
 * The rows by result a run's metrics file counts, whether it ended early (a signal, or the pause
 * switch: neither advances the last-success time) and the `fcctl_paused` gauge.
 */
export function sendRunOutcome(summary: SendSummary): {
  exitCode: ExitCode;
  rowsByResult: Record<string, number>;
  interrupted: boolean;
  extraGauges: Gauge[];
} {
  const { accepted, failed, dead, revoked, held, skipped } = summary;
  const paused = summary.stoppedBy === 'paused';
  return {
    exitCode: sendExitCode(summary),
    // the one vocabulary of results (issue 36 §3: src/lib/service/decide.ts resultLabel)
    // skipped counts the STALE rows too (another worker moved them on): those are `stale`, not released
    rowsByResult: {
      done: accepted,
      retry: failed,
      dead,
      revoked,
      held,
      released: skipped - summary.stale + summary.released,
      stale: summary.stale,
    },
    interrupted: summary.stoppedBy === 'signal' || paused,
    extraGauges: [pausedGauge('deliveries send', paused)],
  };
}

/**
 * The `row` event of one result, or null for the results that are counted, not logged: accepted,
 * and held and released (their state did not change: thousands a run otherwise).
 */
export function rowEvent(row: DeliveryRow, result: RowResult): Record<string, unknown> | null {
  if (result.kind === 'accepted' || result.kind === 'held' || result.kind === 'released') return null;
  return {
    eventId: row.event_id,
    answerUuid: row.answer_uuid,
    consumerAppKey: row.consumer_app_key,
    consumerSchoolId: String(row.consumer_school_id),
    ...result,
  };
}

/** The progress failure reason of a result (failed and revoked rows), else undefined. */
export function progressReason(result: RowResult): string | undefined {
  return result.kind === 'failed' || result.kind === 'revoked' ? result.reason : undefined;
}

/** Why these options cannot run (exit 2), or null: a lease must outlive the confirms it waits for. */
export function leaseProblem(options: Pick<SendOptions, 'leaseSeconds' | 'confirmTimeoutMs'>): string | null {
  return options.leaseSeconds * 1000 < options.confirmTimeoutMs * 2
    ? '--lease-seconds must be at least twice --confirm-timeout: a lease must outlive the confirms it waits for'
    : null;
}

/**
 * Why `amqpUrl` may not be published on (exit 3), or null. Seed 000 §6: full snapshots are never
 * published on a vhost shared with other systems; a dry run publishes nothing.
 */
export function vhostProblem(
  amqpUrl: string,
  options: { readonly dryRun: boolean; readonly allowDefaultVhost: boolean },
): string | null {
  if (options.dryRun || options.allowDefaultVhost || vhostOf(amqpUrl) !== '/') return null;
  return 'amqpUrl names the default vhost "/": full snapshots are not published on a shared vhost (seed 000 §6); use fcctl\'s own vhost, or pass --allow-default-vhost';
}

/**
 * The publisher identity configured, once the lease and the vhost are checked: exit 2 for a lease
 * too short for the confirm timeout, exit 3 for the default vhost (batch runs and --follow alike).
 * @example const publisher = checkedPublisher(options, ctx.config)
 */
export function checkedPublisher(
  options: Pick<SendOptions, 'leaseSeconds' | 'confirmTimeoutMs' | 'dryRun'> & { readonly allowDefaultVhost: boolean },
  config: Config,
): { appKey: string; appCode: string } {
  const publisher = { appKey: requireSetting(config, 'appKey'), appCode: requireSetting(config, 'appCode') };
  const lease = leaseProblem(options);
  if (lease) throw new UsageError(lease);
  const vhost = vhostProblem(requireSetting(config, 'amqpUrl'), options);
  if (vhost) throw new EnvironmentError(vhost);
  return publisher;
}
