import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import {
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  batchesOfRepeats,
  repeatedIds,
  snapshotOf,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { hardenedBroker, type HardenedBroker, mqCtl } from '../helpers/broker.js';
import { recordTotals } from '../helpers/faults.js';

/**
 * A body over the broker's `max_message_size` (406 PRECONDITION_FAILED closes the channel): only
 * that message fails, MESSAGE_TOO_LARGE with the broker's text; its batch-mates are resent on a new
 * channel without a retry charged. `max_message_size` is node-wide, so this runs in the fault suite
 * (alone), and the limit is restored afterwards.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const LIMIT = 8192;
const DEFAULT_LIMIT = 134217728;
let dbs: TestDatabases;
let broker: HardenedBroker;
const key = uniqueConsumerKey('size');

async function setMaxMessageSize(bytes: number): Promise<void> {
  await mqCtl('eval', `application:set_env(rabbit, max_message_size, ${bytes}).`);
}

beforeAll(async () => {
  dbs = await freshDatabases('fsize');
  expect((await runCli(['db', 'init', '--side', 'fc'], { env: dbs.env() })).code).toBe(0);
  await insertRegistry(dbs.admin, dbs.fcName);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  broker = await hardenedBroker('^fc\\.snapshot\\.v2\\.');
  // Channels read the limit when they open: set before the run opens its channel.
  await setMaxMessageSize(LIMIT);
});
afterAll(async () => {
  await setMaxMessageSize(DEFAULT_LIMIT);
  await broker?.drop();
  await dbs?.drop();
});

describe('a message over max_message_size', () => {
  it('401 due rows, one oversized mid-batch: 400 accepted with retry_count 0 and each message delivered, the culprit FAILED MESSAGE_TOO_LARGE alone', async () => {
    const q = await broker.bindConsumer(key);
    const before = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 200);
    const big = snapshotOf(5, { values: { text: 'x'.repeat(LIMIT * 2) } });
    const [culprit] = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, snapshot: big }, 1);
    const after = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 200);
    const r = await runCli(['--json', 'deliveries', 'send', '--batch-size', '100'], {
      env: dbs.env({
        FCCTL_AMQP_URL: broker.publisherUrl,
        FCCTL_APP_KEY: PUBLISHER.appKey,
        FCCTL_APP_CODE: PUBLISHER.appCode,
      }),
    });
    expect(r.code, r.stderr).toBe(1);
    expect(jsonLines(r.stdout).find((l) => l['type'] === 'summary')).toMatchObject({
      claimed: 401,
      accepted: 400,
      failed: 1,
      failedByReason: { MESSAGE_TOO_LARGE: 1 },
      brokerRefusals: 1,
    });
    const [rows] = await dbs.admin.query(
      `SELECT event_id, state, retry_count, last_error FROM \`${dbs.fcName}\`.answer_delivery ORDER BY id`,
    );
    const all = rows as Array<{ event_id: string; state: string; retry_count: number; last_error: string | null }>;
    const accepted = all.filter((x) => x.state === 'BROKER_ACCEPTED');
    expect(accepted).toHaveLength(400);
    expect(accepted.every((x) => Number(x.retry_count) === 0)).toBe(true);
    const failed = all.find((x) => x.event_id === culprit)!;
    expect(failed).toMatchObject({ state: 'FAILED' });
    expect(Number(failed.retry_count)).toBe(1);
    expect(failed.last_error).toMatch(
      /^MESSAGE_TOO_LARGE: PRECONDITION_FAILED - message size \d+ is larger than configured max size 8192/,
    );
    const messages = await q.drain();
    // At-least-once: a duplicate is only a suspect whose confirm the closed channel lost: with
    // --pipeline 2, a row of the one other batch in flight beside the culprit's (its own batch-mates
    // were discarded with the channel), and never more than twice.
    expect(new Set(messages.map((m) => m.properties.messageId))).toEqual(new Set([...before, ...after]));
    const repeated = repeatedIds(messages.map((m) => m.properties.messageId));
    const batches = batchesOfRepeats([...before, culprit!, ...after], repeated, 100);
    expect(batches.size).toBeLessThanOrEqual(1);
    expect(batches.has(Math.floor(before.length / 100))).toBe(false);
    expect([...repeated.values()].every((n) => n === 2)).toBe(true);
    recordTotals('send: a message over max_message_size', {
      faultsInjected: 1,
      runs: 1,
      rowsChecked: 401,
      rowsLost: 0,
      wronglyAccepted: 0,
      duplicates: messages.length - 400,
    });
  });
});
