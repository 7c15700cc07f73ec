import { randomBytes, randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import type mysql from 'mysql2/promise';
import { canonicalize } from '../../src/lib/canon/index.js';
import { testAmqpUrl } from './db.js';

export const PUBLISHER = { id: 42, appCode: 'demo-publisher', appKey: '100021' };

/** A fresh consumer app key nobody else binds, so tests sharing the broker never see each other. */
export function uniqueConsumerKey(prefix = 'c'): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

export function snapshotOf(schId: number, extra: Record<string, unknown> = {}): string {
  const snapshot = {
    schId,
    appCode: 'demo',
    code: 'honor_apply',
    submitterId: 1001,
    subjectId: 7,
    status: 'processed',
    values: { name: '张三', score: 12.5, items: [1, 2, 3] },
    answerNo: null,
    createTime: '2026-10-21T10:00:00',
    updateTime: null,
    ...extra,
  };
  return JSON.stringify(snapshot);
}

export interface DeliverySpec {
  consumerKey: string;
  schoolId?: number | string;
  formUuid?: string;
  grantVersion?: number;
  snapshot?: string;
  contentHash?: string;
  sourceAppKey?: string;
  retryCount?: number;
  state?: string;
  eventId?: string;
}

/** Inserts the publisher registry row once per database. */
export async function insertRegistry(admin: mysql.Connection, fcName: string, row = PUBLISHER): Promise<void> {
  await admin.query(
    `INSERT IGNORE INTO \`${fcName}\`.application_info (id, app_code, app_key, status) VALUES (?, ?, ?, 1)`,
    [row.id, row.appCode, row.appKey],
  );
}

export async function insertGrant(
  admin: mysql.Connection,
  fcName: string,
  g: {
    formUuid: string;
    schoolId: number | string;
    consumerKey: string;
    grantVersion?: number;
    push?: number;
    revoked?: number;
    read?: number;
    subscribe?: number;
  },
): Promise<void> {
  await admin.query(
    `INSERT INTO \`${fcName}\`.form_consumer_grant (form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked, create_time)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, NOW())
     ON DUPLICATE KEY UPDATE grant_version = VALUES(grant_version), push_allowed = VALUES(push_allowed), revoked = VALUES(revoked), read_allowed = VALUES(read_allowed), subscribe_allowed = VALUES(subscribe_allowed)`,
    [
      g.formUuid,
      g.schoolId,
      g.consumerKey,
      g.grantVersion ?? 1,
      g.read ?? 1,
      g.subscribe ?? 1,
      g.push ?? 1,
      g.revoked ?? 0,
    ],
  );
}

/** Inserts `count` PENDING rows (one answer each) for one consumer and school; returns their event ids. */
export async function insertDeliveries(
  admin: mysql.Connection,
  fcName: string,
  spec: DeliverySpec,
  count = 1,
): Promise<string[]> {
  const schoolId = spec.schoolId ?? 5;
  const formUuid = spec.formUuid ?? '0f0e0d0c-0000-4000-8000-000000000001';
  const snapshot = spec.snapshot ?? snapshotOf(Number(schoolId) || 1);
  const canon = canonicalize(snapshot);
  if (!canon.ok) throw new Error(`bad test snapshot: ${canon.error.message}`);
  const ids: string[] = [];
  const values: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const eventId = spec.eventId && count === 1 ? spec.eventId : randomUUID();
    ids.push(eventId);
    values.push([
      eventId,
      'created',
      spec.sourceAppKey ?? PUBLISHER.appKey,
      spec.consumerKey,
      schoolId,
      spec.grantVersion ?? 1,
      formUuid,
      3,
      randomUUID(),
      1,
      0,
      spec.contentHash ?? canon.hash,
      '2026-10-21 10:05:00',
      snapshot,
      spec.state ?? 'PENDING',
      spec.retryCount ?? 0,
    ]);
  }
  for (let i = 0; i < values.length; i += 1000) {
    await admin.query(
      `INSERT INTO \`${fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
        answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, create_time) VALUES ?`,
      [values.slice(i, i + 1000).map((v) => [...(v as unknown[]), '2026-10-21 10:05:00'])],
    );
  }
  return ids;
}

/**
 * A queue bound to every school of one consumer key, for reading back what was published.
 * `durable` keeps the queue (and its persistent messages) through a broker restart (fault suite).
 */
export async function bindQueue(
  consumerKey: string,
  options: { durable?: boolean } = {},
): Promise<{ queue: string; drain: () => Promise<amqp.GetMessage[]>; close: () => Promise<void> }> {
  const conn = await amqp.connect(testAmqpUrl());
  // A broker restart closes this connection with an error: unheard, it would crash the test process.
  conn.on('error', () => undefined);
  const ch = await conn.createChannel();
  await ch.assertExchange('fc.answer.delivery.v2', 'topic', { durable: true });
  const queue = `test.${consumerKey}`;
  await ch.assertQueue(queue, { durable: options.durable ?? false, autoDelete: false });
  await ch.bindQueue(queue, 'fc.answer.delivery.v2', `fc.snapshot.v2.${consumerKey}.*`);
  return {
    queue,
    drain: () => drainQueue(ch, queue),
    close: async () => {
      await ch.deleteQueue(queue).catch(() => undefined);
      await conn.close().catch(() => undefined);
    },
  };
}

/** Every message waiting in `queue`, taken off it. */
export async function drainQueue(ch: amqp.Channel, queue: string): Promise<amqp.GetMessage[]> {
  const out: amqp.GetMessage[] = [];
  for (;;) {
    const m = await ch.get(queue, { noAck: true });
    if (m === false) return out;
    out.push(m);
  }
}

/** Makes sure the delivery exchange exists (tests run `send` without --declare). */
export async function ensureExchange(): Promise<void> {
  const conn = await amqp.connect(testAmqpUrl());
  const ch = await conn.createChannel();
  await ch.assertExchange('fc.answer.delivery.v2', 'topic', { durable: true });
  await conn.close();
}

/**
 * The message ids delivered more than once, with how often. At-least-once after a channel
 * exception (issue 16): only a suspect the broker had routed before the culprit closed the channel
 * — its confirm lost with the channel — is resent and arrives twice; never a third time.
 */
export function repeatedIds(messageIds: readonly unknown[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of messageIds) counts.set(String(id), (counts.get(String(id)) ?? 0) + 1);
  return new Map([...counts].filter(([, n]) => n > 1));
}

/**
 * The batches (by position in claim order, `batchSize` rows each) holding a repeated id. With
 * `--pipeline 2`, a channel exception leaves unconfirmed at most the culprit's batch and one other
 * batch in flight, and the culprit's own batch-mates after it were discarded by the closed channel:
 * the repeats lie in one batch at most, never the culprit's.
 */
export function batchesOfRepeats(
  claimOrder: readonly string[],
  repeated: ReadonlyMap<string, number>,
  batchSize: number,
): Set<number> {
  return new Set(claimOrder.flatMap((id, i) => (repeated.has(id) ? [Math.floor(i / batchSize)] : [])));
}
