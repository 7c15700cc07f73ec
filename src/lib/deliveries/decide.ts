import { canonicalize } from '../canon/index.js';
import { isPositiveIntegerText, isRoutingSafe } from '../ids.js';
import type { DeliveryRow, GrantRow, RegistryRow } from './types.js';

/** Failure reasons fcctl writes to `last_error` (stable codes; the text after ':' is detail). */
export type FailReason =
  | 'NO_ROUTE'
  | 'NACK'
  | 'CONFIRM_TIMEOUT'
  | 'CHANNEL_CLOSED'
  | 'PUBLISH_ERROR'
  /** the broker closed the channel over this message alone (a channel exception), by reply code */
  | 'ACCESS_REFUSED'
  | 'MESSAGE_TOO_LARGE'
  | 'PRECONDITION_FAILED'
  | 'NOT_FOUND'
  | 'RESOURCE_LOCKED'
  | 'BROKER_REFUSED'
  /** a FAILED row already at or over the retry budget (the budget was lowered): DEAD, not sent */
  | 'RETRY_BUDGET_SPENT'
  | 'SOURCE_MISMATCH'
  | 'REGISTRY_MISMATCH'
  | 'REGISTRY_UNREACHABLE'
  | 'INVALID_ROUTING_KEY'
  | 'INVALID_EVENT'
  | 'SNAPSHOT_INVALID'
  | 'SNAPSHOT_HASH_MISMATCH';

/** What the pre-publish checks decided for one claimed row (SPEC §5, in order). */
export type PrePublishDecision =
  | { readonly kind: 'publish'; readonly routingKey: string }
  /** a FAILED row whose budget is already spent (at or over the retry limit): DEAD, never sent */
  | { readonly kind: 'exhausted' }
  | { readonly kind: 'hold'; readonly reason: 'PUSH_DISABLED' }
  | { readonly kind: 'revoke'; readonly reason: 'GRANT_MISSING' | 'GRANT_REVOKED' | 'GRANT_NOT_READABLE' | 'GRANT_VERSION_CHANGED' }
  | { readonly kind: 'fail'; readonly reason: FailReason; readonly detail: string };

/** The publisher's identity as configured and as the registry reports it (or why it could not). */
export interface PublisherFacts {
  readonly appKey: string;
  readonly appCode: string;
  readonly registry: RegistryRow | 'unreachable' | null;
}

const SNAPSHOT_MEMBERS = ['answerNo', 'appCode', 'code', 'createTime', 'schId', 'status', 'subjectId', 'submitterId', 'updateTime', 'values'];
const EVENT_TYPES = new Set(['created', 'updated', 'tombstoned']);
const VALID_DATETIME = /^(?!0000)\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[ T]([01]\d|2[0-3]):[0-5]\d:[0-5]\d/;

/**
 * The routing key `fc.snapshot.v2.<consumerAppKey>.<consumerSchoolId>`, or why it cannot be made:
 * the key must be non-empty without `.`, `*`, `#` or whitespace (they would widen a topic match),
 * the school a positive integer (SPEC §4).
 * @example routingKeyFor('100018', '5') // { ok: true, routingKey: 'fc.snapshot.v2.100018.5' }
 */
export function routingKeyFor(appKey: string, schoolId: string | number): { ok: true; routingKey: string } | { ok: false; detail: string } {
  if (!isRoutingSafe(appKey)) return { ok: false, detail: `consumer app key ${JSON.stringify(appKey)} is empty or holds . * # or whitespace` };
  if (appKey.length > 200) return { ok: false, detail: 'consumer app key too long' };
  const school = String(schoolId);
  if (!isPositiveIntegerText(school)) return { ok: false, detail: `consumer school id ${JSON.stringify(school)} is not a positive integer` };
  const routingKey = `fc.snapshot.v2.${appKey}.${school}`;
  // An AMQP short string: over 255 bytes it cannot be encoded (60 emoji fit a VARCHAR(64) key).
  if (Buffer.byteLength(routingKey, 'utf8') > 255) return { ok: false, detail: 'routing key is over 255 bytes (AMQP limit)' };
  return { ok: true, routingKey };
}

/** Publisher identity (SPEC §5 step 1), decided once per batch. */
export function checkPublisher(facts: PublisherFacts): { ok: true } | { ok: false; reason: FailReason; detail: string } {
  const r = facts.registry;
  if (r === 'unreachable') return { ok: false, reason: 'REGISTRY_UNREACHABLE', detail: 'app registry could not be read' };
  if (r === null) return { ok: false, reason: 'REGISTRY_MISMATCH', detail: `no registry row for app code ${facts.appCode}` };
  if (!isPositiveIntegerText(String(r.id))) return { ok: false, reason: 'REGISTRY_MISMATCH', detail: `registry id ${r.id} is not a positive integer` };
  if (r.app_code !== facts.appCode) return { ok: false, reason: 'REGISTRY_MISMATCH', detail: 'registry app code differs' };
  if (r.app_key !== facts.appKey) return { ok: false, reason: 'REGISTRY_MISMATCH', detail: 'registry app key differs from the configured key' };
  return { ok: true };
}

/**
 * Checks the stored snapshot: ten members (plus `intent`), parses, and its hash is the row's.
 * With `consumer`, an `intent` must be that consumer's (SPEC §4: for the target consumer only).
 */
export function checkSnapshot(
  snapshotJson: string,
  contentHash: string,
  consumer?: { appKey: string; schoolId: string },
): { ok: true } | { ok: false; reason: FailReason; detail: string } {
  const result = canonicalize(snapshotJson);
  if (!result.ok) return { ok: false, reason: 'SNAPSHOT_INVALID', detail: `${result.error.code}: ${result.error.message}` };
  if (result.hash !== contentHash) return { ok: false, reason: 'SNAPSHOT_HASH_MISMATCH', detail: `recomputed ${result.hash}` };
  let members: string[];
  try {
    // Member names only; values were validated exactly above, so a lossy parse is harmless here.
    const parsed = JSON.parse(snapshotJson) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    members = Object.keys(parsed).filter((k) => k !== 'intent').sort();
    const intent = (parsed as Record<string, unknown>)['intent'];
    if (consumer && intent !== undefined) {
      const i = intent as Record<string, unknown> | null;
      if (i === null || typeof i !== 'object' || i['consumerAppKey'] !== consumer.appKey || String(i['consumerSchoolId']) !== consumer.schoolId) {
        return { ok: false, reason: 'SNAPSHOT_INVALID', detail: 'snapshot intent is not for this consumer and school' };
      }
    }
  } catch {
    return { ok: false, reason: 'SNAPSHOT_INVALID', detail: 'snapshot is not a JSON object' };
  }
  if (members.join(',') !== SNAPSHOT_MEMBERS.join(',')) {
    return { ok: false, reason: 'SNAPSHOT_INVALID', detail: `snapshot members are not the closed set of ten: ${members.join(',')}` };
  }
  return { ok: true };
}

/**
 * The pre-publish checks of SPEC §5, in order, for one claimed row. Pure: the grant and the
 * publisher facts were read fresh by the caller.
 * @example prePublish(row, { publisher, grant })
 */
export function prePublish(row: DeliveryRow, facts: { publisher: PublisherFacts; grant: GrantRow | undefined; maxRetries: number }): PrePublishDecision {
  // 1. publisher identity
  if (row.source_app_key !== facts.publisher.appKey) {
    return { kind: 'fail', reason: 'SOURCE_MISMATCH', detail: `row source ${row.source_app_key} is not the configured app key` };
  }
  const publisher = checkPublisher(facts.publisher);
  if (!publisher.ok) return { kind: 'fail', reason: publisher.reason, detail: publisher.detail };
  // 2. grant, read fresh
  const g = facts.grant;
  if (!g) return { kind: 'revoke', reason: 'GRANT_MISSING' };
  if (Number(g.revoked) !== 0) return { kind: 'revoke', reason: 'GRANT_REVOKED' };
  if (Number(g.read_allowed) !== 1 || Number(g.subscribe_allowed) !== 1) return { kind: 'revoke', reason: 'GRANT_NOT_READABLE' };
  if (String(g.grant_version) !== String(row.grant_version)) return { kind: 'revoke', reason: 'GRANT_VERSION_CHANGED' };
  if (Number(g.push_allowed) !== 1) return { kind: 'hold', reason: 'PUSH_DISABLED' };
  // The budget: a lowered --max-retries must not buy a FAILED row one more try (after the grant:
  // a revoked row is GRANT_REVOKED, a held one stays held).
  if (row.state === 'FAILED' && Number(row.retry_count) >= facts.maxRetries) return { kind: 'exhausted' };
  // 3. routing key, event, snapshot
  const rk = routingKeyFor(row.consumer_app_key, row.consumer_school_id);
  if (!rk.ok) return { kind: 'fail', reason: 'INVALID_ROUTING_KEY', detail: rk.detail };
  if (row.event_id.length === 0 || row.event_id.length > 36) return { kind: 'fail', reason: 'INVALID_EVENT', detail: 'event id must be 1–36 characters' };
  if (!EVENT_TYPES.has(row.event_type)) return { kind: 'fail', reason: 'INVALID_EVENT', detail: `event type ${JSON.stringify(row.event_type)} is not created, updated or tombstoned` };
  // occurredAt is built from it: a zero or impossible DATETIME (a lax sql_mode allows them) has no offset.
  if (!VALID_DATETIME.test(String(row.occurred_at))) return { kind: 'fail', reason: 'INVALID_EVENT', detail: `occurred_at ${JSON.stringify(String(row.occurred_at))} is not a valid DATETIME` };
  const snap = checkSnapshot(row.snapshot_json, row.content_hash, { appKey: row.consumer_app_key, schoolId: String(row.consumer_school_id) });
  if (!snap.ok) return { kind: 'fail', reason: snap.reason, detail: snap.detail };
  return { kind: 'publish', routingKey: rk.routingKey };
}

/** What the broker said about one published message, as the relay observed it. */
export type BrokerOutcome =
  | { readonly kind: 'ack'; readonly returned: boolean }
  | { readonly kind: 'nack' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'closed' }
  /** the client refused to send it (synchronous publish error other than a closed channel) */
  | { readonly kind: 'error'; readonly detail: string }
  /**
   * the broker closed the channel over this message, sent alone (AMQP reply code and text); or,
   * `sent: false`, not sent because the broker refused its routing key earlier in the run
   */
  | { readonly kind: 'refused'; readonly code: number; readonly text: string; readonly sent?: boolean }
  /** sent, but its confirm was lost when the broker refused another message: resent later */
  | { readonly kind: 'unknown' }
  /** never went out (the channel was gone first, or the lease too short to wait for a confirm) */
  | { readonly kind: 'unsent' };

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

/** Backoff and budget (SPEC §5): `base × 2^retryCount`, capped; DEAD once the count reaches max. */
export interface RetryPolicy {
  readonly baseSeconds: number;
  readonly capSeconds: number;
  readonly maxRetries: number;
}
export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseSeconds: 20, capSeconds: 3600, maxRetries: 8 };

/**
 * The failure of a row that had failed `retryCount` times before.
 * @example afterFailure(0, DEFAULT_RETRY_POLICY) // { state: 'FAILED', retryCount: 1, backoffSeconds: 20 }
 */
export function afterFailure(retryCount: number, policy: RetryPolicy): { state: 'FAILED' | 'DEAD'; retryCount: number; backoffSeconds: number | null } {
  const next = retryCount + 1;
  if (next >= policy.maxRetries) return { state: 'DEAD', retryCount: next, backoffSeconds: null };
  return { state: 'FAILED', retryCount: next, backoffSeconds: Math.min(policy.capSeconds, policy.baseSeconds * 2 ** retryCount) };
}
