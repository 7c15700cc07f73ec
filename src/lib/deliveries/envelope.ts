import { offsetAt } from '../time/zone.js';
import type { DeliveryRow } from './types.js';

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
