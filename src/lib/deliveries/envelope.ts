import { canonicalize } from '../canon/index.js';
import { isPositiveIntegerText, isRoutingSafe } from '../ids.js';
import { offsetAt } from '../time/zone.js';
import type { DeliveryRow, FailReason } from './types.js';

export const PROTOCOL_VERSION = 'fc.answer.snapshot.v2';

/**
 * A local DATETIME string as ISO-8601 with the offset that wall-clock time has in the service's
 * zone (SPEC §1, §10): an IANA name (DST-aware) or `±HH:MM`, never this process's `TZ`. The fields
 * are kept as stored; parsed field by field, never through `Date.parse` of the text.
 * @example occurredAtIso('2026-10-21 10:05:00', 'Asia/Shanghai') // '2026-10-21T10:05:00+08:00'
 */
export function occurredAtIso(local: string, zone: string): string {
  // offsetAt checks the text is a DATETIME first
  const offset = offsetAt(local, zone);
  return `${local.slice(0, 10)}T${local.slice(11, 19)}${offset}`;
}

/** Decimal digits of a BIGINT column (mysql2 gives strings for them). */
function int(value: string | number): string {
  const text = String(value);
  if (!/^-?\d+$/.test(text)) throw new Error(`not an integer: ${text}`);
  return text;
}

/**
 * The v2 envelope body: exactly the 15 members of SPEC §4, with the stored snapshot embedded byte
 * for byte (it is immutable; numbers inside it never pass through a JS number).
 * `zone` is the service's time zone, for `occurredAt`'s offset ({@link occurredAtIso}).
 * @example buildEnvelope(row, 'Asia/Shanghai').toString('utf8').startsWith('{"protocolVersion":')
 */
export function buildEnvelope(row: DeliveryRow, zone: string): Buffer {
  const s = JSON.stringify;
  const text =
    `{"protocolVersion":${s(PROTOCOL_VERSION)},"eventId":${s(row.event_id)},"eventType":${s(row.event_type)},` +
    `"sourceAppKey":${s(row.source_app_key)},"consumerAppKey":${s(row.consumer_app_key)},` +
    `"consumerSchoolId":${int(row.consumer_school_id)},"grantVersion":${int(row.grant_version)},` +
    `"formUuid":${s(row.form_uuid)},"formVersion":${int(row.form_version)},"answerUuid":${s(row.answer_uuid)},` +
    `"answerRevision":${int(row.answer_revision)},"isDeleted":${Number(row.is_deleted) === 1},` +
    `"contentHash":${s(row.content_hash)},"occurredAt":${s(occurredAtIso(row.occurred_at, zone))},` +
    `"snapshot":${row.snapshot_json}}`;
  return Buffer.from(text, 'utf8');
}

/** The AMQP properties of a delivery message (SPEC §4). */
export function messageOptions(row: DeliveryRow) {
  return {
    mandatory: true,
    persistent: true,
    messageId: row.event_id,
    contentType: 'application/json',
    contentEncoding: 'utf-8',
    appId: row.source_app_key,
    type: row.event_type,
  } as const;
}

const SNAPSHOT_MEMBERS = ['answerNo', 'appCode', 'code', 'createTime', 'schId', 'status', 'subjectId', 'submitterId', 'updateTime', 'values'];

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
