import type { DeliveryRow } from './types.js';

export const PROTOCOL_VERSION = 'fc.answer.snapshot.v2';

const pad = (n: number) => String(Math.abs(n)).padStart(2, '0');

/**
 * A local DATETIME string as ISO-8601 with the offset of this process's zone at that time, the
 * service's local zone (SPEC §1). Parsed field by field: never through `Date.parse` of the text.
 * @example occurredAtIso('2026-10-21 10:05:00') // '2026-10-21T10:05:00+08:00' in Asia/Shanghai
 */
export function occurredAtIso(local: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(local);
  if (!m) throw new Error(`not a DATETIME: ${local}`);
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const offsetMinutes = -new Date(y, mo - 1, d, h, mi, s).getTimezoneOffset();
  const sign = offsetMinutes < 0 ? '-' : '+';
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${sign}${pad(Math.trunc(offsetMinutes / 60))}:${pad(offsetMinutes % 60)}`;
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
 * @example buildEnvelope(row).toString('utf8').startsWith('{"protocolVersion":')
 */
export function buildEnvelope(row: DeliveryRow): Buffer {
  const s = JSON.stringify;
  const text =
    `{"protocolVersion":${s(PROTOCOL_VERSION)},"eventId":${s(row.event_id)},"eventType":${s(row.event_type)},` +
    `"sourceAppKey":${s(row.source_app_key)},"consumerAppKey":${s(row.consumer_app_key)},` +
    `"consumerSchoolId":${int(row.consumer_school_id)},"grantVersion":${int(row.grant_version)},` +
    `"formUuid":${s(row.form_uuid)},"formVersion":${int(row.form_version)},"answerUuid":${s(row.answer_uuid)},` +
    `"answerRevision":${int(row.answer_revision)},"isDeleted":${Number(row.is_deleted) === 1},` +
    `"contentHash":${s(row.content_hash)},"occurredAt":${s(occurredAtIso(row.occurred_at))},` +
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
