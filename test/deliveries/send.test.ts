import { afterEach, describe, expect } from 'vitest';
import { canonicalize } from '../../src/lib/canon/index.js';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { waitFor } from '../helpers/wait.js';
import { servicesTest } from '../helpers/services.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const test = servicesTest({ prefix: 'send', init: 'fc' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  env = dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode });
  await insertRegistry(dbs.admin, dbs.fcName);
  await ensureExchange();
});
// `send` relays every due row of the database: rows a test leaves FAILED or held would come due
// again (20 s backoff) in a later test on a slow machine and change its counts.
afterEach(async () => {
  await dbs.admin.query(
    `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', claim_owner = NULL WHERE state IN ('PENDING', 'FAILED')`,
  );
});

type Row = {
  event_id: string;
  state: string;
  retry_count: number;
  last_error: string | null;
  broker_accepted_at: string | null;
  backoff: number | null;
  claim_owner: string | null;
};
async function rowsOf(consumerKey: string): Promise<Row[]> {
  const [rows] = await dbs.admin.query(
    `SELECT event_id, state, retry_count, last_error, broker_accepted_at, claim_owner, TIMESTAMPDIFF(SECOND, update_time, next_retry_at) AS backoff
     FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? ORDER BY id`,
    [consumerKey],
  );
  return rows as Row[];
}
async function acceptedCount(consumerKey: string): Promise<number> {
  const [rows] = await dbs.admin.query(
    `SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ? AND state = 'BROKER_ACCEPTED'`,
    [consumerKey],
  );
  return Number((rows as Array<{ n: number }>)[0]!.n);
}
/** A consumer of its own: a unique key, a queue bound to its routing key, a grant on FORM at school 5. */
async function consumer(prefix: string) {
  const key = uniqueConsumerKey(prefix);
  const q = await bindQueue(key);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  return { key, q };
}
const send = (args: string[] = []) => runCli(['--json', 'deliveries', 'send', ...args], { env });
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

/** Every message verified as a consumer would: 15 members, routing, properties, hash. */
function verifyMessages(
  messages: Awaited<ReturnType<Awaited<ReturnType<typeof bindQueue>>['drain']>>,
  consumerKey: string,
) {
  for (const m of messages) {
    const body = JSON.parse(m.content.toString('utf8')) as Record<string, unknown>;
    expect(Object.keys(body)).toHaveLength(15);
    expect(m.properties.messageId).toBe(body['eventId']);
    expect(m.properties.deliveryMode).toBe(2);
    expect(m.properties.contentType).toBe('application/json');
    expect(m.fields.routingKey).toBe(`fc.snapshot.v2.${consumerKey}.${body['consumerSchoolId']}`);
    const raw = m.content.toString('utf8');
    const snapshotText = raw.slice(raw.indexOf('"snapshot":') + '"snapshot":'.length, -1);
    const recomputed = canonicalize(snapshotText);
    expect(recomputed.ok && recomputed.hash).toBe(body['contentHash']);
  }
}

describe('deliveries send against the real broker and database', () => {
  test('10,000 PENDING rows → all BROKER_ACCEPTED, exactly one verified message per event id', async () => {
    const keys = [uniqueConsumerKey(), uniqueConsumerKey()];
    const queues = await Promise.all(keys.map((k) => bindQueue(k)));
    const ids = new Map<string, string[]>();
    for (const [i, key] of keys.entries()) {
      await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5 + i, consumerKey: key });
      ids.set(key, await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 + i }, 5000));
    }
    const r = await send();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ accepted: 10000, failed: 0, dead: 0, published: 10000 });
    for (const [i, key] of keys.entries()) {
      const rows = await rowsOf(key);
      expect(
        rows.every((x) => x.state === 'BROKER_ACCEPTED' && x.broker_accepted_at !== null && x.claim_owner === null),
      ).toBe(true);
      const messages = await queues[i]!.drain();
      expect(messages).toHaveLength(5000);
      expect(new Set(messages.map((m) => m.properties.messageId))).toEqual(new Set(ids.get(key)));
      verifyMessages(messages, key);
      await queues[i]!.close();
    }
    // Nothing left: a second run claims nothing and exits 0.
    const again = await send();
    expect(summaryOf(again.stdout)).toMatchObject({ claimed: 0, accepted: 0 });
  });

  test('no binding → FAILED NO_ROUTE with 20 s × 2^n backoff, DEAD after the 8th, never accepted', async () => {
    const key = uniqueConsumerKey('noroute');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 3);
    const backoffs: number[] = [];
    for (let attempt = 1; attempt <= 8; attempt++) {
      const r = await send();
      expect(r.code).toBe(1);
      const rows = await rowsOf(key);
      expect(rows.every((x) => x.retry_count === attempt && x.broker_accepted_at === null)).toBe(true);
      expect(rows.every((x) => x.last_error === 'NO_ROUTE')).toBe(true);
      if (attempt < 8) {
        expect(rows.every((x) => x.state === 'FAILED')).toBe(true);
        backoffs.push(Number(rows[0]!.backoff));
        // Make them due again without waiting.
        await dbs.admin.query(
          `UPDATE \`${dbs.fcName}\`.answer_delivery SET next_retry_at = NOW() - INTERVAL 1 SECOND WHERE consumer_app_key = ?`,
          [key],
        );
      } else {
        expect(rows.every((x) => x.state === 'DEAD')).toBe(true);
        expect(summaryOf(r.stdout)).toMatchObject({ dead: 3, failedByReason: { NO_ROUTE: 3 } });
      }
    }
    expect(backoffs).toEqual([20, 40, 80, 160, 320, 640, 1280]);
    // DEAD is terminal: another run does not touch them.
    await send();
    expect((await rowsOf(key)).every((x) => x.state === 'DEAD' && x.retry_count === 8)).toBe(true);
  });

  test('revoked or advanced grant → GRANT_REVOKED; push disabled → held, retry budget untouched; nothing published', async () => {
    const revoked = uniqueConsumerKey('rev');
    const advanced = uniqueConsumerKey('adv');
    const held = uniqueConsumerKey('held');
    const queues = await Promise.all([revoked, advanced, held].map((k) => bindQueue(k)));
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: revoked, revoked: 1 });
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: advanced, grantVersion: 2 });
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: held, push: 0 });
    for (const k of [revoked, advanced, held])
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: k, grantVersion: 1 }, 2);
    const r = await send();
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ revoked: 4, held: 2, accepted: 0, published: 0 });
    expect((await rowsOf(revoked)).map((x) => [x.state, x.last_error])).toEqual([
      ['GRANT_REVOKED', 'GRANT_REVOKED'],
      ['GRANT_REVOKED', 'GRANT_REVOKED'],
    ]);
    expect((await rowsOf(advanced)).map((x) => [x.state, x.last_error])).toEqual([
      ['GRANT_REVOKED', 'GRANT_VERSION_CHANGED'],
      ['GRANT_REVOKED', 'GRANT_VERSION_CHANGED'],
    ]);
    expect((await rowsOf(held)).map((x) => [x.state, x.retry_count, x.claim_owner])).toEqual([
      ['PENDING', 0, null],
      ['PENDING', 0, null],
    ]);
    // Held rows are counted, not logged (their state did not change), and looked at again only
    // after --hold-recheck (default 10 minutes): the next run does not claim them.
    expect(jsonLines(r.stdout).filter((l) => l['type'] === 'row' && l['kind'] === 'held')).toEqual([]);
    const [recheck] = await dbs.admin.query(
      `SELECT TIMESTAMPDIFF(SECOND, NOW(), next_retry_at) AS s FROM \`${dbs.fcName}\`.answer_delivery WHERE consumer_app_key = ?`,
      [held],
    );
    for (const { s } of recheck as Array<{ s: number }>) expect(Number(s)).toBeGreaterThanOrEqual(595);
    expect(summaryOf((await send()).stdout)).toMatchObject({ claimed: 0, held: 0 });
    for (const q of queues) {
      expect(await q.drain()).toHaveLength(0);
      await q.close();
    }
  });

  test('registry mismatch, tampered snapshot, dotted or wildcard key, school 0 → FAILED with the reason, nothing published', async () => {
    const { key, q } = await consumer('bad');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, contentHash: 'f'.repeat(64) });
    for (const k of [`${key}.x`, `${key}*`, `${key}#`]) {
      await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: k });
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: k });
    }
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 0, consumerKey: key });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 0 });
    const r = await send();
    expect(r.code).toBe(1);
    const s = summaryOf(r.stdout);
    expect(s).toMatchObject({
      failed: 5,
      accepted: 0,
      published: 0,
      failedByReason: { SNAPSHOT_HASH_MISMATCH: 1, INVALID_ROUTING_KEY: 4 },
    });
    expect(await q.drain()).toHaveLength(0);

    // Registry mismatch: the configured key is not the registry's. The run's problem, not the
    // row's: exit 3 before any claim, the row untouched (test/deliveries/misconfigured.test.ts).
    const other = uniqueConsumerKey('reg');
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: other });
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: other, sourceAppKey: '999999' });
    const mismatch = await runCli(['--json', 'deliveries', 'send'], { env: { ...env, FCCTL_APP_KEY: '999999' } });
    expect(mismatch.code).toBe(3);
    expect(mismatch.stderr).toMatch(/FCCTL_APP_KEY/);
    expect((await rowsOf(other)).map((x) => [x.state, x.retry_count, x.claim_owner])).toEqual([['PENDING', 0, null]]);
    await q.close();
  });

  test('a claim with an owner but no expiry (written by hand or another tool) counts as expired: the row is sent, and scan counts it as due', async () => {
    const { key, q } = await consumer('noexp');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 2);
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET claim_owner = 'gone:1:x', claim_expires_at = NULL WHERE consumer_app_key = ?`,
      [key],
    );
    // scan's due count is send's claim rule exactly
    const scan = await runCli(['--json', 'deliveries', 'scan'], { env });
    expect(summaryOf(scan.stdout)).toMatchObject({ due: 2, stuckClaims: 2 });
    const r = await send();
    expect(r.code).toBe(0);
    expect((await rowsOf(key)).map((x) => [x.state, x.claim_owner])).toEqual([
      ['BROKER_ACCEPTED', null],
      ['BROKER_ACCEPTED', null],
    ]);
    expect(await q.drain()).toHaveLength(2);
    await q.close();
  });

  test('--dry-run runs the checks and writes and publishes nothing', async () => {
    const { key, q } = await consumer('dry');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 3);
    const [[before]] = (await dbs.admin.query(`CHECKSUM TABLE \`${dbs.fcName}\`.answer_delivery`)) as unknown as [
      [{ Checksum: string }],
    ];
    const r = await send(['--dry-run']);
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ dryRun: true, wouldPublish: 3, published: 0, accepted: 0 });
    const [[after]] = (await dbs.admin.query(`CHECKSUM TABLE \`${dbs.fcName}\`.answer_delivery`)) as unknown as [
      [{ Checksum: string }],
    ];
    expect(after.Checksum).toBe(before.Checksum);
    expect(await q.drain()).toHaveLength(0);
    // clean up for later tests: send them for real
    expect((await send()).code).toBe(0);
    expect(await q.drain()).toHaveLength(3);
    await q.close();
  });

  test('a write for another generation or another claim changes nothing', async () => {
    const key = uniqueConsumerKey('gen');
    const [id] = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key });
    const { applyWrites } = await import('../../src/lib/deliveries/send/store.js');
    const { openDb } = await import('../../src/lib/db/connect.js');
    const db = await openDb('FC database', dbs.fcUrl);
    try {
      await dbs.admin.query(
        `UPDATE \`${dbs.fcName}\`.answer_delivery SET claim_owner = 'me', claim_expires_at = NOW() + INTERVAL 60 SECOND WHERE event_id = ?`,
        [id],
      );
      const [[{ dbid }]] = (await dbs.admin.query(
        `SELECT id AS dbid FROM \`${dbs.fcName}\`.answer_delivery WHERE event_id = ?`,
        [id],
      )) as unknown as [[{ dbid: string }]];
      // wrong retry count, wrong replay digest, wrong owner: all turned away
      expect(
        await applyWrites(db, 'me', [{ kind: 'accept', gens: [{ id: dbid, retryCount: 1, replayOpDigest: null }] }]),
      ).toBe(0);
      expect(
        await applyWrites(db, 'me', [
          { kind: 'accept', gens: [{ id: dbid, retryCount: 0, replayOpDigest: 'x'.repeat(64) }] },
        ]),
      ).toBe(0);
      expect(
        await applyWrites(db, 'someone-else', [
          { kind: 'accept', gens: [{ id: dbid, retryCount: 0, replayOpDigest: null }] },
        ]),
      ).toBe(0);
      expect((await rowsOf(key))[0]!.state).toBe('PENDING');
      // the right generation is accepted once; a duplicate ack rewrites nothing
      expect(
        await applyWrites(db, 'me', [{ kind: 'accept', gens: [{ id: dbid, retryCount: 0, replayOpDigest: null }] }]),
      ).toBe(1);
      const first = (await rowsOf(key))[0]!;
      expect(first.state).toBe('BROKER_ACCEPTED');
      expect(
        await applyWrites(db, 'me', [{ kind: 'accept', gens: [{ id: dbid, retryCount: 0, replayOpDigest: null }] }]),
      ).toBe(0);
      // a late nack for an accepted row is ignored too
      expect(
        await applyWrites(db, 'me', [
          {
            kind: 'fail',
            gens: [{ id: dbid, retryCount: 0, replayOpDigest: null }],
            state: 'FAILED',
            retryCount: 1,
            backoffSeconds: 20,
            lastError: 'NACK',
          },
        ]),
      ).toBe(0);
      expect((await rowsOf(key))[0]).toEqual(first);
    } finally {
      await db.close();
    }
  });

  test('two send processes over 20,000 rows: every row accepted, every event id in the queue exactly once', async () => {
    const { key, q } = await consumer('two');
    const ids = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 20000);
    const [a, b] = await Promise.all([
      spawnCli(['--json', 'deliveries', 'send'], { env }),
      spawnCli(['--json', 'deliveries', 'send'], { env }),
    ]);
    expect(a.code).toBe(0);
    expect(b.code).toBe(0);
    const acceptedA = summaryOf(a.stdout)['accepted'] as number;
    const acceptedB = summaryOf(b.stdout)['accepted'] as number;
    expect(acceptedA + acceptedB).toBe(20000);
    expect(acceptedA).toBeGreaterThan(0);
    expect(acceptedB).toBeGreaterThan(0);
    expect((await rowsOf(key)).every((x) => x.state === 'BROKER_ACCEPTED')).toBe(true);
    const messages = await q.drain();
    expect(messages).toHaveLength(20000);
    expect(new Set(messages.map((m) => m.properties.messageId))).toEqual(new Set(ids));
    await q.close();
  }, 180_000);

  test('broker connection cut mid-run: nothing accepted without a confirm; later runs accept everything', async () => {
    const { key, q } = await consumer('cut');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 20000);
    const amqpUrl = new URL(testAmqpUrl());
    const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
    const port = await proxy.start();
    const proxyEnv = { ...env, FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), port) };
    // Slow every chunk a little so the cut lands mid-run.
    proxy.delayMs = 2;
    const running = runCli(
      ['--json', 'deliveries', 'send', '--batch-size', '200', '--lease-seconds', '10', '--confirm-timeout', '2'],
      { env: proxyEnv },
    );
    await waitFor('1000 rows accepted', async () => (await acceptedCount(key)) > 1000);
    proxy.cut();
    proxy.refuse(true);
    const r = await running;
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^fcctl: broker connection lost/);
    const rows = await rowsOf(key);
    const accepted = rows.filter((x) => x.state === 'BROKER_ACCEPTED');
    expect(accepted.length).toBeGreaterThan(0);
    expect(accepted.length).toBeLessThan(20000);
    // every accepted row's message is in the queue
    const first = await q.drain();
    const inQueue = new Set(first.map((m) => m.properties.messageId));
    for (const row of accepted) expect(inQueue.has(row.event_id)).toBe(true);
    // broker back: make everything due and run until drained
    proxy.refuse(false);
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET next_retry_at = NULL, claim_expires_at = NOW() - INTERVAL 1 SECOND WHERE consumer_app_key = ? AND state IN ('PENDING','FAILED')`,
      [key],
    );
    const after = await runCli(['--json', 'deliveries', 'send'], { env: proxyEnv });
    expect(after.code).toBe(0);
    expect((await rowsOf(key)).every((x) => x.state === 'BROKER_ACCEPTED')).toBe(true);
    const second = await q.drain();
    for (const m of second) inQueue.add(m.properties.messageId);
    expect(inQueue.size).toBe(20000);
    // at-least-once: duplicates possible only for rows whose confirm was lost
    expect(first.length + second.length).toBeGreaterThanOrEqual(20000);
    await proxy.stop();
    await q.close();
  }, 180_000);

  test('kill -9 mid-run: after the lease a new run accepts everything, each accepted row has its message', async () => {
    const { key, q } = await consumer('kill');
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key }, 20000);
    const { spawn } = await import('node:child_process');
    const { FCCTL_BIN } = await import('../helpers/cli.js');
    const child = spawn(
      process.execPath,
      [
        FCCTL_BIN,
        '--json',
        'deliveries',
        'send',
        '--batch-size',
        '300',
        '--lease-seconds',
        '600',
        '--confirm-timeout',
        '2',
      ],
      { env: env as NodeJS.ProcessEnv, stdio: 'ignore' },
    );
    await waitFor('2000 rows accepted', async () => (await acceptedCount(key)) > 2000);
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    // A statement the child sent just before dying may still commit on the server: let it land.
    await new Promise((r) => setTimeout(r, 1500));
    const claimed = (await rowsOf(key)).filter((x) => x.claim_owner !== null && x.state === 'PENDING').length;
    const acceptedBefore = (await rowsOf(key)).filter((x) => x.state === 'BROKER_ACCEPTED').map((x) => x.event_id);
    expect(acceptedBefore.length).toBeLessThan(20000);
    // A run inside the lease leaves the dead process's claims alone.
    if (claimed > 0) {
      const early = await send();
      const stillClaimed = (await rowsOf(key)).filter((x) => x.claim_owner !== null && x.state === 'PENDING').length;
      expect(stillClaimed).toBe(claimed);
      expect(summaryOf(early.stdout)['accepted']).toBe(20000 - acceptedBefore.length - claimed);
    }
    // The lease runs out (moved into the past rather than waited for).
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET claim_expires_at = NOW() - INTERVAL 1 SECOND WHERE consumer_app_key = ? AND claim_owner IS NOT NULL`,
      [key],
    );
    const r = await send();
    expect(r.code).toBe(0);
    const rows = await rowsOf(key);
    expect(rows.every((x) => x.state === 'BROKER_ACCEPTED' && x.claim_owner === null)).toBe(true);
    const messages = await q.drain();
    const ids = new Set(messages.map((m) => m.properties.messageId));
    for (const row of rows) expect(ids.has(row.event_id)).toBe(true);
    await q.close();
  }, 180_000);
});
