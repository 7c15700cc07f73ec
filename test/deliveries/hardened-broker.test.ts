import { afterAll, afterEach, describe, expect } from 'vitest';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import {
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  batchesOfRepeats,
  repeatedIds,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { amqpUrlFor, EXCHANGE, hardenedBroker, type HardenedBroker, mqCtl } from '../helpers/broker.js';
import { openBroker } from '../../src/lib/amqp/connect.js';
import { openDb } from '../../src/lib/db/connect.js';
import { DEFAULT_RETRY_POLICY } from '../../src/lib/deliveries/retry.js';
import { runSend } from '../../src/lib/deliveries/send/run.js';
import { servicesTest } from '../helpers/services.js';

/**
 * `deliveries send` against a broker hardened as seed 000 §6 / seed 004 B-03 ask: its own vhost, a
 * publisher with write on the delivery exchange only and a topic permission, policies set by the
 * test itself. A refusal of one message never takes its batch-mates down; returns are proven on the
 * real exchange before anything is claimed.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const test = servicesTest({ prefix: 'hard', init: 'fc' });
const PROBE_KEY = 'fcctl-return-probe';
let dbs: TestDatabases;
const keys = { a: uniqueConsumerKey('ka'), b: uniqueConsumerKey('kb'), outside: uniqueConsumerKey('kx') };
let broker: HardenedBroker;

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  await insertRegistry(dbs.admin, dbs.fcName);
  for (const key of Object.values(keys))
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  // The publisher may write the keys of consumers a and b (and the return probe's), not `outside`.
  broker = await hardenedBroker(`^fc\\.snapshot\\.v2\\.(${keys.a}|${keys.b}|${PROBE_KEY})\\.`);
});
afterAll(async () => {
  await broker?.drop();
});
// `send` relays every due row of the database: what a test leaves due must not reach the next.
afterEach(async () => {
  await dbs.admin.query(
    `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', claim_owner = NULL WHERE state IN ('PENDING', 'FAILED')`,
  );
});

const envFor = (amqpUrl: string, extra: Record<string, string> = {}) =>
  dbs.env({ FCCTL_AMQP_URL: amqpUrl, FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode, ...extra });
const send = (args: string[] = [], env = envFor(broker.publisherUrl)) =>
  runCli(['--json', 'deliveries', 'send', ...args], { env });
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

type Row = {
  event_id: string;
  consumer_app_key: string;
  state: string;
  retry_count: number;
  last_error: string | null;
  claim_owner: string | null;
};
async function rows(where = '1 = 1', params: unknown[] = []): Promise<Row[]> {
  const [r] = await dbs.admin.query(
    `SELECT event_id, consumer_app_key, state, retry_count, last_error, claim_owner FROM \`${dbs.fcName}\`.answer_delivery WHERE ${where} ORDER BY id`,
    params,
  );
  return (r as Row[]).map((x) => ({ ...x, retry_count: Number(x.retry_count) }));
}

describe('a message the broker refuses is not an outage', () => {
  test("401 due rows, one outside the publisher's topic permission mid-batch: 400 accepted with retry_count 0 and each message delivered (a duplicate only for a suspect), the culprit FAILED ACCESS_REFUSED alone", async () => {
    const qa = await broker.bindConsumer(keys.a);
    const qb = await broker.bindConsumer(keys.b);
    const qx = await broker.bindConsumer(keys.outside);
    const a = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a }, 200);
    const [culprit] = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.outside }, 1);
    const b = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.b }, 200);

    const r = await send(['--batch-size', '100']);
    expect(r.code, r.stderr).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 401,
      accepted: 400,
      failed: 1,
      dead: 0,
      failedByReason: { ACCESS_REFUSED: 1 },
      brokerRefusals: 1,
    });
    const all = await rows();
    const accepted = all.filter((x) => x.state === 'BROKER_ACCEPTED');
    expect(accepted).toHaveLength(400);
    expect(accepted.every((x) => x.retry_count === 0 && x.claim_owner === null)).toBe(true);
    const failed = all.find((x) => x.event_id === culprit)!;
    expect(failed).toMatchObject({ state: 'FAILED', retry_count: 1, claim_owner: null });
    expect(failed.last_error).toMatch(/^ACCESS_REFUSED: ACCESS_REFUSED - .*fc\.snapshot\.v2\.kx[0-9a-f]+\.5/);

    // At-least-once (issue 16): every innocent message arrives, none is lost. A duplicate is only a
    // suspect whose confirm the closed channel lost: with --pipeline 2, a row of the one other batch
    // in flight beside the culprit's (its own batch-mates were discarded with the channel), and never
    // more than twice.
    const [ma, mb, mx] = [await qa.drain(), await qb.drain(), await qx.drain()];
    expect(new Set(ma.map((m) => m.properties.messageId))).toEqual(new Set(a));
    expect(new Set(mb.map((m) => m.properties.messageId))).toEqual(new Set(b));
    const repeated = repeatedIds([...ma, ...mb].map((m) => m.properties.messageId));
    const batches = batchesOfRepeats([...a, culprit!, ...b], repeated, 100);
    expect(batches.size).toBeLessThanOrEqual(1);
    expect(batches.has(Math.floor(a.length / 100))).toBe(false);
    expect([...repeated.values()].every((n) => n === 2)).toBe(true);
    expect(mx).toHaveLength(0);

    // The next runs charge only the culprit: DEAD after the usual budget, nobody else touched.
    for (let attempt = 2; attempt <= 8; attempt++) {
      await dbs.admin.query(
        `UPDATE \`${dbs.fcName}\`.answer_delivery SET next_retry_at = NOW() - INTERVAL 1 SECOND WHERE state = 'FAILED'`,
      );
      const again = await send(['--batch-size', '100']);
      expect(again.code).toBe(1);
    }
    expect((await rows('event_id = ?', [culprit]))[0]).toMatchObject({ state: 'DEAD', retry_count: 8 });
    expect((await rows("state = 'BROKER_ACCEPTED'")).length).toBe(400);
  });

  test('several rows of one refused consumer among many: each refused row FAILED ACCESS_REFUSED, every other row accepted uncharged, none lost', async () => {
    const qa = await broker.bindConsumer(keys.a);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(...(await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a }, 60)));
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.outside }, 2);
    }
    const r = await send(['--batch-size', '50', '--window', '32']);
    expect(r.code, r.stderr).toBe(1);
    // One refusal by the broker: the other rows of that routing key are refused without a channel each.
    expect(summaryOf(r.stdout)).toMatchObject({
      accepted: 300,
      failed: 10,
      failedByReason: { ACCESS_REFUSED: 10 },
      brokerRefusals: 1,
    });
    expect(
      (await rows('consumer_app_key = ? AND state = ?', [keys.a, 'BROKER_ACCEPTED'])).every((x) => x.retry_count === 0),
    ).toBe(true);
    expect((await rows('consumer_app_key = ? AND state = ?', [keys.outside, 'FAILED'])).length).toBe(10);
    expect(new Set((await qa.drain()).map((m) => m.properties.messageId))).toEqual(new Set(ids));
  });
});

describe('refusals with a window of 1 and two batches in flight', () => {
  test('a routing key refused from memory wakes the other batch: the run ends (it hung for good), every row adjudicated', async () => {
    const qa = await broker.bindConsumer(keys.a);
    const qb = await broker.bindConsumer(keys.b);
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.outside }, 1);
    const a = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a }, 48);
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.outside }, 1);
    const b = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.b }, 50);
    const r = await spawnCli(
      ['--json', 'deliveries', 'send', '--batch-size', '50', '--window', '1', '--pipeline', '2'],
      { env: envFor(broker.publisherUrl), timeoutMs: 60_000 },
    );
    expect(r.code, r.stderr).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({
      claimed: 100,
      accepted: 98,
      failed: 2,
      failedByReason: { ACCESS_REFUSED: 2 },
    });
    expect((await rows('claim_owner IS NOT NULL')).length).toBe(0);
    expect(new Set((await qa.drain()).map((m) => m.properties.messageId))).toEqual(new Set(a));
    expect(new Set((await qb.drain()).map((m) => m.properties.messageId))).toEqual(new Set(b));
  });
});

describe('returns are proven on the real exchange', () => {
  test('an alternate-exchange policy on the delivery exchange: 0 rows accepted, exit 3, the cause named; nothing claimed', async () => {
    // An alternate exchange with a queue: unroutable messages are acked without a return.
    const conn = await (await import('amqplib')).default.connect(broker.adminUrl);
    const ch = await conn.createChannel();
    await ch.assertExchange('fc.unrouted', 'fanout', { durable: false });
    await ch.assertQueue('fc.unrouted.q', { durable: false });
    await ch.bindQueue('fc.unrouted.q', 'fc.unrouted', '');
    await mqCtl(
      'set_policy',
      '-p',
      broker.vhost,
      'ae',
      '^fc\\.answer\\.delivery\\.v2$',
      '{"alternate-exchange":"fc.unrouted"}',
      '--apply-to',
      'exchanges',
    );
    try {
      // Rows for a consumer with no binding: without the probe they would be BROKER_ACCEPTED.
      const lonely = uniqueConsumerKey('lonely');
      await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: lonely });
      await mqCtl(
        'set_topic_permissions',
        '-p',
        broker.vhost,
        broker.publisher.name,
        EXCHANGE,
        `^fc\\.snapshot\\.v2\\.(${lonely}|${PROBE_KEY})\\.`,
        '^$',
      );
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: lonely }, 5);
      const r = await send();
      expect(r.code).toBe(3);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^fcctl: return probe failed: .*acked without a return: an alternate exchange/);
      expect(
        (await rows('consumer_app_key = ?', [lonely])).map((x) => [x.state, x.retry_count, x.claim_owner]),
      ).toEqual(Array(5).fill(['PENDING', 0, null]));
      // The probe was plainly not an envelope: its own type.
      const m = await ch.get('fc.unrouted.q', { noAck: true });
      expect(m === false ? false : m.properties.type).toBe('fcctl.return-probe');
    } finally {
      await mqCtl('clear_policy', '-p', broker.vhost, 'ae');
      await mqCtl(
        'set_topic_permissions',
        '-p',
        broker.vhost,
        broker.publisher.name,
        EXCHANGE,
        `^fc\\.snapshot\\.v2\\.(${keys.a}|${keys.b}|${PROBE_KEY})\\.`,
        '^$',
      );
      await ch.deleteQueue('fc.unrouted.q');
      await ch.deleteExchange('fc.unrouted');
      await conn.close();
    }
  });

  test('a queue bound with # catches the probe: exit 3, nothing claimed; without it the run goes on', async () => {
    const greedy = await broker.bindConsumer('greedy', '#');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a }, 3);
    const r = await send();
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/acked without a return: .*a binding that catches every consumer key \(#/);
    expect((await rows("consumer_app_key = ? AND state = 'PENDING'", [keys.a])).length).toBe(3);
    const probes = await greedy.drain();
    expect(probes.map((m) => [m.fields.routingKey, m.properties.type])).toEqual([
      ['fc.snapshot.v2.fcctl-return-probe.0', 'fcctl.return-probe'],
    ]);
    const conn = await (await import('amqplib')).default.connect(broker.adminUrl);
    await (await conn.createChannel()).deleteQueue(greedy.queue);
    await conn.close();
    const ok = await send();
    expect(ok.code, ok.stderr).toBe(0);
    expect(summaryOf(ok.stdout)).toMatchObject({ accepted: 3 });
  });

  test('doctor --probe passes with the least-privilege publisher (write on the exchange only)', async () => {
    const r = await runCli(['--json', 'doctor', '--probe'], { env: envFor(broker.publisherUrl) });
    const probe = jsonLines(r.stdout).find((l) => l['check'] === 'mandatory return probe');
    expect(probe).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/through fc\.answer\.delivery\.v2 .* came back as a return before its ack/),
    });
    // A topic permission that does not allow the probe's key: named, exit 3.
    await mqCtl(
      'set_topic_permissions',
      '-p',
      broker.vhost,
      broker.publisher.name,
      EXCHANGE,
      `^fc\\.snapshot\\.v2\\.${keys.a}\\.`,
      '^$',
    );
    try {
      const refused = await runCli(['--json', 'doctor', '--probe'], { env: envFor(broker.publisherUrl) });
      expect(refused.code).toBe(3);
      expect(jsonLines(refused.stdout).find((l) => l['check'] === 'mandatory return probe')).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(
          /refused .*403 .*topic permission that allows fc\.snapshot\.v2\.fcctl-return-probe\.0/,
        ),
      });
    } finally {
      await mqCtl(
        'set_topic_permissions',
        '-p',
        broker.vhost,
        broker.publisher.name,
        EXCHANGE,
        `^fc\\.snapshot\\.v2\\.(${keys.a}|${keys.b}|${PROBE_KEY})\\.`,
        '^$',
      );
    }
  });
});

describe('isolation and misconfiguration stop the run before any claim', () => {
  test('the default vhost "/" is refused (exit 3, one line) unless --allow-default-vhost', async () => {
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a }, 2);
    const onDefault = envFor(amqpUrlFor('/'));
    const r = await send([], onDefault);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^fcctl: amqpUrl names the default vhost "\/": .*--allow-default-vhost\n$/);
    expect((await rows("consumer_app_key = ? AND state = 'PENDING' AND claim_owner IS NULL", [keys.a])).length).toBe(2);
    // Allowed explicitly: it runs (on "/" there is no binding for the key: NO_ROUTE, which proves it published).
    const conn = await (await import('amqplib')).default.connect(amqpUrlFor('/'));
    await (await conn.createChannel()).assertExchange(EXCHANGE, 'topic', { durable: true });
    await conn.close();
    const allowed = await send(['--allow-default-vhost'], onDefault);
    expect(summaryOf(allowed.stdout)).toMatchObject({ claimed: 2, failedByReason: { NO_ROUTE: 2 } });
  });

  test('a wrong FCCTL_APP_KEY or FCCTL_APP_CODE, or an unreadable registry: exit 3 naming the setting, no row claimed, every retry_count unchanged', async () => {
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a }, 4);
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a, state: 'FAILED', retryCount: 3 }, 2);
    const before = JSON.stringify(await rows("state IN ('PENDING', 'FAILED')"));
    for (const [extra, says] of [
      [{ FCCTL_APP_KEY: '999999' }, /FCCTL_APP_KEY \("999999"\)/],
      [{ FCCTL_APP_CODE: 'no-such-app' }, /no registry row for app code no-such-app: check FCCTL_APP_CODE/],
    ] as const) {
      for (const mode of [[], ['--dry-run']]) {
        const r = await send(mode, envFor(broker.publisherUrl, extra));
        expect(r.code, r.stderr).toBe(3);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).toMatch(says);
        expect(r.stderr).toMatch(/no row was claimed/);
        expect(JSON.stringify(await rows("state IN ('PENDING', 'FAILED')"))).toBe(before);
      }
    }
    await dbs.admin.query(`RENAME TABLE \`${dbs.fcName}\`.application_info TO \`${dbs.fcName}\`.application_info_gone`);
    try {
      const r = await send();
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/app registry \(application_info\) could not be read/);
      expect(JSON.stringify(await rows("state IN ('PENDING', 'FAILED')"))).toBe(before);
    } finally {
      await dbs.admin.query(
        `RENAME TABLE \`${dbs.fcName}\`.application_info_gone TO \`${dbs.fcName}\`.application_info`,
      );
    }
  });

  test('the registry changed mid-run: the run stops claiming, finishes what is in flight, prints its summary, exit 3; nothing left claimed or charged', async () => {
    // School 6: rows of this test only.
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 6, consumerKey: keys.a });
    await broker.bindConsumer(keys.a);
    const ids = new Set(await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: keys.a, schoolId: 6 }, 20_000));
    const run = runCli(['--json', 'deliveries', 'send', '--batch-size', '500', '--window', '64'], {
      env: envFor(broker.publisherUrl),
    });
    // Once rows are being accepted, the registry says another key.
    for (let i = 0; i < 400; i++) {
      if ((await rows("state = 'BROKER_ACCEPTED' AND consumer_school_id = 6")).length > 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.application_info SET app_key = 'moved' WHERE app_code = ?`, [
      PUBLISHER.appCode,
    ]);
    try {
      const r = await run;
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(
        /^fcctl: publisher identity: .*FCCTL_APP_KEY.*; claimed no more rows; what was in flight was finished\n$/,
      );
      const summary = summaryOf(r.stdout);
      expect(summary).toMatchObject({ stoppedBy: 'publisher-identity', exitCode: 3, failed: 0, dead: 0 });
      const all = (await rows('consumer_app_key = ?', [keys.a])).filter((x) => ids.has(x.event_id));
      expect(all.filter((x) => x.claim_owner !== null)).toHaveLength(0);
      expect(all.every((x) => x.retry_count === 0 && (x.state === 'BROKER_ACCEPTED' || x.state === 'PENDING'))).toBe(
        true,
      );
      const accepted = all.filter((x) => x.state === 'BROKER_ACCEPTED');
      expect(accepted.length).toBe(summary['accepted']);
      expect(accepted.length).toBeLessThan(20_000);
      expect(accepted.length).toBeGreaterThan(0);
    } finally {
      await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.application_info SET app_key = ? WHERE app_code = ?`, [
        PUBLISHER.appKey,
        PUBLISHER.appCode,
      ]);
    }
  });

  test('FAILED rows at or over --max-retries go DEAD without being published; their last error kept', async () => {
    const q = await broker.bindConsumer(keys.a);
    const spent = await insertDeliveries(
      dbs.admin,
      dbs.fcName,
      { consumerKey: keys.a, state: 'FAILED', retryCount: 5 },
      3,
    );
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET last_error = 'NO_ROUTE' WHERE event_id IN (?)`,
      [spent],
    );
    const fine = await insertDeliveries(
      dbs.admin,
      dbs.fcName,
      { consumerKey: keys.a, state: 'FAILED', retryCount: 4 },
      1,
    );
    const r = await send(['--max-retries', '5']);
    expect(r.code).toBe(1);
    expect(summaryOf(r.stdout)).toMatchObject({ dead: 3, accepted: 1, failedByReason: { RETRY_BUDGET_SPENT: 3 } });
    expect((await rows('event_id IN (?)', [spent])).map((x) => [x.state, x.retry_count, x.last_error])).toEqual(
      Array(3).fill(['DEAD', 5, 'NO_ROUTE']),
    );
    expect((await q.drain()).map((m) => m.properties.messageId)).toEqual(fine);
  });
});

describe('the grant is read again at the moment of publishing', () => {
  test('a grant revoked while a batch waits on back-pressure: the rows not yet published become GRANT_REVOKED, none is sent after it', async () => {
    const key = uniqueConsumerKey('late');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    await mqCtl(
      'set_topic_permissions',
      '-p',
      broker.vhost,
      broker.publisher.name,
      EXCHANGE,
      '^fc\\.snapshot\\.v2\\.',
      '^$',
    );
    const q = await broker.bindConsumer(key);
    const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 3000);
    const db = await openDb('FC database', dbs.fcUrl);
    const amqp = await openBroker(broker.publisherUrl);
    // Revoke as soon as the consumer sees the first message: the batch (all 3000 rows, claimed and
    // checked at once) is still being published one confirm at a time (window 1).
    const consumer = await (await import('amqplib')).default.connect(broker.adminUrl);
    const ch = await consumer.createChannel();
    let revoked: Promise<unknown> | undefined;
    const received: string[] = [];
    await ch.consume(
      q.queue,
      (m) => {
        if (m) received.push(m.properties.messageId as string);
        revoked ??= dbs.admin.query(
          `UPDATE \`${dbs.fcName}\`.form_consumer_grant SET revoked = 1 WHERE consumer_app_key = ?`,
          [key],
        );
      },
      { noAck: true },
    );
    try {
      const summary = await runSend(
        {
          batchSize: 5000,
          window: 1,
          maxRows: 1e9,
          maxSeconds: 600,
          leaseSeconds: 120,
          confirmTimeoutMs: 15000,
          holdRecheckSeconds: 600,
          retry: DEFAULT_RETRY_POLICY,
          dryRun: false,
          pipeline: 1,
          serviceTimeZone: 'UTC',
          grantMaxAgeMs: 0,
        },
        {
          db,
          broker: amqp,
          publisher: { appKey: PUBLISHER.appKey, appCode: PUBLISHER.appCode },
          signal: new AbortController().signal,
          clock: Date.now,
        },
      );
      await revoked;
      expect(summary.claimed).toBe(3000);
      expect(summary.revoked).toBeGreaterThan(0);
      expect(summary.accepted + summary.revoked).toBe(3000);
      const states = await rows('consumer_app_key = ?', [key]);
      expect(states.filter((x) => x.state === 'GRANT_REVOKED')).toHaveLength(summary.revoked);
      // What was accepted is exactly what was published: no revoked row has a message.
      await new Promise((r) => setTimeout(r, 200));
      expect(new Set(received)).toEqual(
        new Set(states.filter((x) => x.state === 'BROKER_ACCEPTED').map((x) => x.event_id)),
      );
      expect(received.length).toBe(summary.accepted);
      expect(new Set(states.map((x) => x.event_id))).toEqual(new Set(ids));
    } finally {
      await consumer.close();
      await amqp.close();
      await db.close();
      await mqCtl(
        'set_topic_permissions',
        '-p',
        broker.vhost,
        broker.publisher.name,
        EXCHANGE,
        `^fc\\.snapshot\\.v2\\.(${keys.a}|${keys.b}|${PROBE_KEY})\\.`,
        '^$',
      );
    }
  });
});
