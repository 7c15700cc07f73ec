import { hashWithMembers } from '../canon/index.js';
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

/** Decimal digits of an integer column (mysql2 gives a number, or a string past 2^53). */
function int(value: string | number): string {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return `${value}`;
  const text = String(value);
  if (!/^-?\d+$/.test(text)) throw new Error(`not an integer: ${text}`);
  return text;
}

// JSON texts of the values most rows of a batch share (event type, app keys, form): made once.
const quotedValues = new Map<string, string>();
function quoted(value: string): string {
  let text = quotedValues.get(value);
  if (text === undefined) {
    if (quotedValues.size >= 1024) quotedValues.clear();
    quotedValues.set(value, (text = JSON.stringify(value)));
  }
  return text;
}

/**
 * The v2 envelope body: exactly the 15 members of SPEC §4, with the stored snapshot embedded byte
 * for byte (it is immutable; numbers inside it never pass through a JS number). The snapshot is
 * copied as the bytes read from the database (a Buffer), never decoded and encoded again.
 * `zone` is the service's time zone, for `occurredAt`'s offset ({@link occurredAtIso}).
 * @example buildEnvelope(row, 'Asia/Shanghai').toString('utf8').startsWith('{"protocolVersion":')
 */
export function buildEnvelope(row: DeliveryRow, zone: string): Buffer {
  const s = JSON.stringify;
  const head =
    `{"protocolVersion":${s(PROTOCOL_VERSION)},"eventId":${s(row.event_id)},"eventType":${quoted(row.event_type)},` +
    `"sourceAppKey":${quoted(row.source_app_key)},"consumerAppKey":${quoted(row.consumer_app_key)},` +
    `"consumerSchoolId":${int(row.consumer_school_id)},"grantVersion":${int(row.grant_version)},` +
    `"formUuid":${quoted(row.form_uuid)},"formVersion":${int(row.form_version)},"answerUuid":${s(row.answer_uuid)},` +
    `"answerRevision":${int(row.answer_revision)},"isDeleted":${Number(row.is_deleted) === 1},` +
    `"contentHash":${s(row.content_hash)},"occurredAt":${s(occurredAtIso(row.occurred_at, zone))},"snapshot":`;
  const snapshot = row.snapshot_json;
  if (typeof snapshot === 'string') return Buffer.from(`${head}${snapshot}}`, 'utf8');
  const headBytes = Buffer.byteLength(head, 'utf8');
  const body = Buffer.allocUnsafe(headBytes + snapshot.length + 1);
  body.write(head, 0, 'utf8');
  body.set(snapshot, headBytes);
  body[body.length - 1] = 0x7d; // }
  return body;
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

const SNAPSHOT_MEMBERS = [
  'answerNo',
  'appCode',
  'code',
  'createTime',
  'schId',
  'status',
  'subjectId',
  'submitterId',
  'updateTime',
  'values',
];
const SNAPSHOT_MEMBER_SET: ReadonlySet<string> = new Set(SNAPSHOT_MEMBERS);

/**
 * Whether the root's member names, `intent` aside, are exactly the closed set of ten. Counting
 * is enough: fc.canon.v1 has refused a duplicate name already. (No sorted copy per row: the
 * check runs on every row a relay sends.)
 */
function isClosedSet(members: readonly string[]): boolean {
  let n = 0;
  for (const k of members) {
    if (k === 'intent') continue;
    if (!SNAPSHOT_MEMBER_SET.has(k)) return false;
    n += 1;
  }
  return n === SNAPSHOT_MEMBERS.length;
}

/**
 * The routing key `fc.snapshot.v2.<consumerAppKey>.<consumerSchoolId>`, or why it cannot be made:
 * the key must be non-empty without `.`, `*`, `#` or whitespace (they would widen a topic match),
 * the school a positive integer (SPEC §4).
 * @example routingKeyFor('100018', '5') // { ok: true, routingKey: 'fc.snapshot.v2.100018.5' }
 */
export function routingKeyFor(
  appKey: string,
  schoolId: string | number,
): { ok: true; routingKey: string } | { ok: false; detail: string } {
  if (!isRoutingSafe(appKey))
    return { ok: false, detail: `consumer app key ${JSON.stringify(appKey)} is empty or holds . * # or whitespace` };
  if (appKey.length > 200) return { ok: false, detail: 'consumer app key too long' };
  const school = String(schoolId);
  if (!isPositiveIntegerText(school))
    return { ok: false, detail: `consumer school id ${JSON.stringify(school)} is not a positive integer` };
  const routingKey = `fc.snapshot.v2.${appKey}.${school}`;
  // An AMQP short string: over 255 bytes it cannot be encoded (60 emoji fit a VARCHAR(64) key).
  if (Buffer.byteLength(routingKey, 'utf8') > 255)
    return { ok: false, detail: 'routing key is over 255 bytes (AMQP limit)' };
  return { ok: true, routingKey };
}

/**
 * Checks the stored snapshot: ten members (plus `intent`), parses, and its hash is the row's.
 * With `consumer`, an `intent` must be that consumer's (SPEC §4: for the target consumer only).
 * One pass of the canonicalizer over the stored bytes gives both the hash and the root's member
 * names; only a snapshot that holds an `intent` is parsed again, to read it.
 */
export function checkSnapshot(
  snapshotJson: Uint8Array | string,
  contentHash: string,
  consumer?: { appKey: string; schoolId: string },
): { ok: true } | { ok: false; reason: FailReason; detail: string } {
  // text goes through the canonicalizer's own encoding (an unpaired surrogate is refused, not U+FFFD)
  const result = hashWithMembers(snapshotJson);
  if (!result.ok)
    return { ok: false, reason: 'SNAPSHOT_INVALID', detail: `${result.error.code}: ${result.error.message}` };
  if (result.hash !== contentHash)
    return { ok: false, reason: 'SNAPSHOT_HASH_MISMATCH', detail: `recomputed ${result.hash}` };
  // A byte order mark is skipped by fc.canon.v1 but would break the envelope it is embedded in.
  if (result.members === null || startsWithBom(snapshotJson))
    return { ok: false, reason: 'SNAPSHOT_INVALID', detail: 'snapshot is not a JSON object' };
  if (consumer && result.members.includes('intent') && !intentIsFor(snapshotJson, consumer)) {
    return { ok: false, reason: 'SNAPSHOT_INVALID', detail: 'snapshot intent is not for this consumer and school' };
  }
  if (!isClosedSet(result.members)) {
    const members = result.members.filter((k) => k !== 'intent').sort();
    return {
      ok: false,
      reason: 'SNAPSHOT_INVALID',
      detail: `snapshot members are not the closed set of ten: ${JSON.stringify(members)}`,
    };
  }
  return { ok: true };
}

function startsWithBom(snapshot: Uint8Array | string): boolean {
  if (typeof snapshot === 'string') return snapshot.charCodeAt(0) === 0xfeff;
  return snapshot.length >= 3 && snapshot[0] === 0xef && snapshot[1] === 0xbb && snapshot[2] === 0xbf;
}

/**
 * Whether the snapshot's `intent` names this consumer and school. Parsed again (only such rows
 * are): the values were validated exactly, but a school id past 2^53 cannot be compared exactly
 * after `JSON.parse`, so it is refused rather than taken for its neighbour.
 */
function intentIsFor(snapshot: Uint8Array | string, consumer: { appKey: string; schoolId: string }): boolean {
  let i: unknown;
  try {
    const text =
      typeof snapshot === 'string'
        ? snapshot
        : Buffer.from(snapshot.buffer, snapshot.byteOffset, snapshot.length).toString('utf8');
    i = (JSON.parse(text) as Record<string, unknown>)['intent'];
  } catch {
    return false;
  }
  if (i === null || typeof i !== 'object') return false;
  const { consumerAppKey, consumerSchoolId } = i as Record<string, unknown>;
  const school =
    typeof consumerSchoolId === 'number'
      ? Number.isSafeInteger(consumerSchoolId)
        ? String(consumerSchoolId)
        : null
      : typeof consumerSchoolId === 'string'
        ? consumerSchoolId
        : null;
  return consumerAppKey === consumer.appKey && school === consumer.schoolId;
}
