import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import type mysql from 'mysql2/promise';
import { beforeAll, describe, expect } from 'vitest';
import { canonicalize } from '../../src/lib/canon/index.js';
import { openDb } from '../../src/lib/db/connect.js';
import { buildEnvelope, messageOptions } from '../../src/lib/deliveries/envelope.js';
import { opDigest } from '../../src/lib/deliveries/replay/decide.js';
import { applyWrites } from '../../src/lib/deliveries/send/store.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  bindQueue,
  ensureExchange,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  snapshotOf,
  uniqueConsumerKey,
} from '../helpers/deliveries.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { waitFor } from '../helpers/wait.js';
import { servicesTest } from '../helpers/services.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
type State = 'PENDING' | 'FAILED' | 'DEAD' | 'BROKER_ACCEPTED' | 'GRANT_REVOKED';

interface RowSpec {
  consumerKey: string;
  answerUuid?: string;
  revision?: number;
  state?: State;
  retryCount?: number;
  lastError?: string | null;
  brokerAccepted?: boolean;
  applied?: boolean;
  /** the receipt's outcome when `applied` (APPLIED by default) */
  outcome?: string;
  grantVersion?: number;
  claimed?: boolean;
}

/** Inserts one outbox row with a valid snapshot, as form-center would have written it. */
async function insertRow(
  admin: mysql.Connection,
  fcName: string,
  s: RowSpec,
): Promise<{ id: string; eventId: string; answerUuid: string }> {
  const snapshot = snapshotOf(5, { code: `c-${randomUUID().slice(0, 8)}` });
  const canon = canonicalize(snapshot);
  if (!canon.ok) throw new Error('bad snapshot');
  const eventId = randomUUID();
  const answerUuid = s.answerUuid ?? randomUUID();
  const state = s.state ?? 'PENDING';
  const [res] = await admin.query(
    `INSERT INTO \`${fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, next_retry_at, last_error, broker_accepted_at,
      consumer_applied_at, consumer_outcome, claim_owner, claim_expires_at, create_time, update_time)
     VALUES (?, 'created', ?, ?, 5, ?, ?, 3, ?, ?, 0, ?, '2026-10-21 10:05:00', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '2026-10-21 10:05:00', NOW())`,
    [
      eventId,
      PUBLISHER.appKey,
      s.consumerKey,
      s.grantVersion ?? 1,
      FORM,
      answerUuid,
      s.revision ?? 1,
      canon.hash,
      snapshot,
      state,
      s.retryCount ?? { PENDING: 0, FAILED: 2, DEAD: 8, BROKER_ACCEPTED: 0, GRANT_REVOKED: 0 }[state],
      state === 'FAILED' ? '2030-01-01 00:00:00' : null,
      s.lastError !== undefined
        ? s.lastError
        : { PENDING: null, FAILED: 'NACK', DEAD: 'NO_ROUTE', BROKER_ACCEPTED: null, GRANT_REVOKED: 'GRANT_REVOKED' }[
            state
          ],
      s.brokerAccepted || state === 'BROKER_ACCEPTED' ? '2026-10-21 10:05:01' : null,
      s.applied ? '2026-10-21 10:06:00' : null,
      s.applied ? (s.outcome ?? 'APPLIED') : null,
      s.claimed ? 'someone:1:abc' : null,
      s.claimed ? '2030-01-01 00:00:00' : null,
    ],
  );
  return { id: String((res as mysql.ResultSetHeader).insertId), eventId, answerUuid };
}

beforeAll(async () => {
  await ensureExchange();
});

// Databases of their own for each part: `send` relays every due row of its database, and one part
// drops a table.
const codesTest = servicesTest({ prefix: 'replay', init: 'fc' });
const batchTest = servicesTest({ prefix: 'rbatch', init: 'fc' });
const noTableTest = servicesTest({ prefix: 'rnotable', init: 'fc' });
const raceTest = servicesTest({ prefix: 'rrace', init: 'fc' });

async function setup(dbs: TestDatabases) {
  const env = dbs.env({
    FCCTL_AMQP_URL: testAmqpUrl(),
    FCCTL_APP_KEY: PUBLISHER.appKey,
    FCCTL_APP_CODE: PUBLISHER.appCode,
  });
  await insertRegistry(dbs.admin, dbs.fcName);
  const fullRow = async (id: string) => {
    const [rows] = await dbs.admin.query(`SELECT * FROM \`${dbs.fcName}\`.answer_delivery WHERE id = ?`, [id]);
    return (rows as Array<Record<string, unknown>>)[0]!;
  };
  const opRows = async (op: string) => {
    const [rows] = await dbs.admin.query(`SELECT * FROM \`${dbs.fcName}\`.fcctl_replay_operation WHERE op_digest = ?`, [
      opDigest(op),
    ]);
    return rows as Array<Record<string, unknown>>;
  };
  const checksum = () => checksumTables(dbs.admin, dbs.fcName);
  return { dbs, env, fullRow, opRows, checksum };
}

/** The result line, without its time stamp (`ts`, which differs from run to run). */
const resultOf = (stdout: string) => {
  const { ts: _ts, ...result } = jsonLines(stdout).find((l) => l['type'] === 'result')!;
  return result;
};
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

describe('deliveries replay: every code from every starting state (real MariaDB)', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  codesTest.beforeAll(async ({ dbs }) => {
    t = await setup(dbs);
  });
  const replay = (key: string, answer: string, rev: string | number, op: string, execute: boolean) =>
    runCli(
      [
        '--json',
        'deliveries',
        'replay',
        '--consumer',
        key,
        '--school',
        '5',
        '--answer',
        answer,
        '--expected-revision',
        String(rev),
        '--operation-id',
        op,
        ...(execute ? ['--execute'] : []),
      ],
      { env: t.env },
    );

  // 'deferred receipt': the consumer reported DEFERRED (not taken in): replayable like 'plain'
  type Scenario = 'plain' | 'receipt' | 'deferred receipt' | 'grant revoked' | 'grant advanced' | 'other revision';
  const STATES: State[] = ['PENDING', 'FAILED', 'DEAD', 'BROKER_ACCEPTED', 'GRANT_REVOKED'];
  const SCENARIOS: Scenario[] = [
    'plain',
    'receipt',
    'deferred receipt',
    'grant revoked',
    'grant advanced',
    'other revision',
  ];
  const expectedCode = (state: State, scenario: Scenario): string => {
    if (scenario === 'other revision') return 'REVISION_MISMATCH';
    if (scenario === 'receipt') return 'ALREADY_DELIVERED';
    if ((scenario !== 'plain' && scenario !== 'deferred receipt') || state === 'GRANT_REVOKED') return 'GRANT_REVOKED';
    return 'QUEUED';
  };
  const cases: Array<[State | 'no row', Scenario, string]> = [
    ...STATES.flatMap((s) => SCENARIOS.map((sc) => [s, sc, expectedCode(s, sc)] as [State, Scenario, string])),
    ['no row', 'plain', 'NO_DELIVERY_ROW'],
  ];

  for (const [state, scenario, code] of cases) {
    codesTest(
      `${state}, ${scenario} → ${code}; dry run writes nothing; the same operation again answers the same and writes nothing`,
      async () => {
        const key = uniqueConsumerKey('r');
        await insertGrant(t.dbs.admin, t.dbs.fcName, {
          formUuid: FORM,
          schoolId: 5,
          consumerKey: key,
          revoked: scenario === 'grant revoked' ? 1 : 0,
          grantVersion: scenario === 'grant advanced' ? 2 : 1,
        });
        let answer: string = randomUUID();
        let id: string | null = null;
        let eventId: string | null = null;
        // the row the answer names: the newest row of the answer/consumer/school
        let answeredAbout: { id: string | null; eventId: string | null } | null = null;
        const expectedRevision = 1;
        if (state !== 'no row') {
          const r = await insertRow(t.dbs.admin, t.dbs.fcName, {
            consumerKey: key,
            state,
            applied: scenario === 'receipt' || scenario === 'deferred receipt',
            outcome: scenario === 'deferred receipt' ? 'DEFERRED' : undefined,
            claimed: state === 'PENDING',
          });
          ({ id, eventId, answerUuid: answer } = r);
          if (scenario === 'other revision') {
            // the answer moved on: a newer row (revision 2) exists, the responder expected 1
            const newer = await insertRow(t.dbs.admin, t.dbs.fcName, {
              consumerKey: key,
              answerUuid: answer,
              revision: 2,
              state: 'BROKER_ACCEPTED',
            });
            answeredAbout = { id: newer.id, eventId: newer.eventId };
          }
        } else {
          // a row of another school for the same answer is not this school's row
          await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: `${key}x`, answerUuid: answer });
        }
        answeredAbout ??= { id, eventId };
        const before = id ? await t.fullRow(id) : null;
        const op = `inc-${randomUUID()}`;
        const exit = ['QUEUED', 'ALREADY_DELIVERED'].includes(code) ? 0 : 1;

        const sum0 = await t.checksum();
        const dry = await replay(key, answer, expectedRevision, op, false);
        expect(dry.stderr).toBe('');
        expect(dry.code).toBe(exit);
        expect(resultOf(dry.stdout)).toMatchObject({ code, dryRun: true, repeated: false });
        expect(summaryOf(dry.stdout)).toMatchObject({ dryRun: true, items: 1, byCode: { [code]: 1 }, refused: exit });
        expect(await t.checksum()).toBe(sum0);

        const first = await replay(key, answer, expectedRevision, op, true);
        expect(first.stderr).toBe('');
        expect(first.code).toBe(exit);
        const a1 = resultOf(first.stdout);
        expect(a1).toMatchObject({
          type: 'result',
          code,
          dryRun: false,
          repeated: false,
          eventId: answeredAbout.eventId,
          operationId: op,
          answerUuid: answer,
          expectedRevision: '1',
        });
        expect(a1['reason']).toBe(resultOf(dry.stdout)['reason']);

        // the answer is recorded under the operation's digest
        expect(
          (await t.opRows(op)).map((o) => [
            o['code'],
            o['reason'],
            o['delivery_id'] === null ? null : String(o['delivery_id']),
          ]),
        ).toEqual([[code, a1['reason'], answeredAbout.id]]);
        // the row, as each code leaves it
        if (id) {
          const after = await t.fullRow(id);
          const unchangedButFor = (cols: Record<string, unknown>) => {
            const { update_time: _u1, ...b } = before!;
            const { update_time: _u2, ...a } = after;
            expect(a).toEqual({ ...b, ...cols });
          };
          if (code === 'QUEUED') {
            unchangedButFor({
              state: 'PENDING',
              retry_count: 0,
              replay_op_digest: opDigest(op),
              last_error: null,
              next_retry_at: null,
              broker_accepted_at: null,
              claim_owner: null,
              claim_expires_at: null,
            });
          } else if (code === 'GRANT_REVOKED' && (state === 'PENDING' || state === 'FAILED' || state === 'DEAD')) {
            unchangedButFor({
              state: 'GRANT_REVOKED',
              last_error: scenario === 'grant revoked' ? 'GRANT_REVOKED' : 'GRANT_VERSION_CHANGED',
              next_retry_at: null,
              claim_owner: null,
              claim_expires_at: null,
            });
          } else {
            expect(after).toEqual(before);
          }
        }

        // the same operation id again: the first answer, nothing written
        const sum1 = await t.checksum();
        const again = await replay(key, answer, expectedRevision, op, true);
        expect(again.code).toBe(exit);
        const a2 = resultOf(again.stdout);
        expect({ ...a2, repeated: false }).toEqual(a1);
        expect(a2['repeated']).toBe(true);
        expect(summaryOf(again.stdout)).toMatchObject({ repeated: 1 });
        expect(await t.checksum()).toBe(sum1);
        // and a dry run of it reports the recorded answer
        expect(resultOf((await replay(key, answer, expectedRevision, op, false)).stdout)).toMatchObject({
          code,
          reason: a1['reason'],
          repeated: true,
        });
      },
    );
  }

  codesTest(
    'a QUEUED row is never revived once the grant is revoked later, and a new operation on it answers GRANT_REVOKED',
    async () => {
      const key = uniqueConsumerKey('rv');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { id, answerUuid } = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'DEAD' });
      expect(resultOf((await replay(key, answerUuid, 1, 'op-a', true)).stdout)['code']).toBe('QUEUED');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key, grantVersion: 2 });
      const r = await replay(key, answerUuid, 1, 'op-b', true);
      expect(r.code).toBe(1);
      expect(resultOf(r.stdout)).toMatchObject({ code: 'GRANT_REVOKED' });
      expect(await t.fullRow(id)).toMatchObject({ state: 'GRANT_REVOKED', last_error: 'GRANT_VERSION_CHANGED' });
      // grant back to version 1: the row stays revoked
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key, grantVersion: 1 });
      expect(resultOf((await replay(key, answerUuid, 1, 'op-c', true)).stdout)).toMatchObject({
        code: 'GRANT_REVOKED',
      });
      expect((await t.fullRow(id))['state']).toBe('GRANT_REVOKED');
    },
  );

  codesTest(
    'a long last error: the reason is cut at 512 characters and the repeat returns exactly that text',
    async () => {
      const key = uniqueConsumerKey('lg');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { answerUuid } = await insertRow(t.dbs.admin, t.dbs.fcName, {
        consumerKey: key,
        state: 'FAILED',
        lastError: `NACK: ${'债'.repeat(500)}`,
      });
      const a = resultOf((await replay(key, answerUuid, 1, 'long-1', true)).stdout);
      const b = resultOf((await replay(key, answerUuid, 1, 'long-1', true)).stdout);
      expect([...String(a['reason'])]).toHaveLength(512);
      expect(b).toMatchObject({ reason: a['reason'], repeated: true });
    },
  );

  codesTest(
    'an operation id reused for other parameters → OPERATION_CONFLICT, exit 1, nothing written or recorded',
    async () => {
      const key = uniqueConsumerKey('oc');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const a = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'FAILED' });
      const b = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'FAILED' });
      expect((await replay(key, a.answerUuid, 1, 'op-shared', true)).code).toBe(0);
      const sum = await t.checksum();
      for (const [answer, rev] of [
        [b.answerUuid, 1],
        [a.answerUuid, 2],
      ] as const) {
        const r = await replay(key, answer, rev, 'op-shared', true);
        expect(r.code).toBe(1);
        expect(resultOf(r.stdout)).toMatchObject({ code: 'OPERATION_CONFLICT', repeated: false });
        expect(String(resultOf(r.stdout)['reason'])).toContain(`already used for answer ${a.answerUuid} revision 1`);
      }
      expect(await t.checksum()).toBe(sum);
      expect((await t.fullRow(b.id))['state']).toBe('FAILED');
    },
  );

  codesTest(
    'a concurrent call waits on the operation row: the first commits → the recorded answer; the first rolls back → it decides itself',
    async () => {
      const { replayOne } = await import('../../src/lib/deliveries/replay/store.js');
      const mysql2 = (await import('mysql2/promise')).default;
      const key = uniqueConsumerKey('lk');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { id, answerUuid } = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'DEAD' });
      const db = await openDb('FC database', t.dbs.fcUrl);
      const other = await mysql2.createConnection({ uri: t.dbs.fcUrl });
      try {
        for (const outcome of ['COMMIT', 'ROLLBACK'] as const) {
          const op = `lock-${outcome}`;
          const request = {
            answerUuid,
            consumerAppKey: key,
            consumerSchoolId: '5',
            expectedRevision: '1',
            opDigest: opDigest(op),
          };
          // another process is inside its replay transaction for the same operation
          await other.query('BEGIN');
          await other.query(
            "INSERT INTO fcctl_replay_operation (op_digest, answer_uuid, consumer_app_key, consumer_school_id, expected_revision, code, reason, delivery_id, create_time) VALUES (?, ?, ?, 5, 1, 'QUEUED', 'answered by the other process', ?, NOW())",
            [opDigest(op), answerUuid, key, id],
          );
          const started = Date.now();
          const pending = replayOne(db, request, true);
          await new Promise((r) => setTimeout(r, 400));
          await other.query(outcome);
          const d = await pending;
          expect(Date.now() - started).toBeGreaterThanOrEqual(400);
          if (outcome === 'COMMIT') {
            expect(d).toMatchObject({ code: 'QUEUED', reason: 'answered by the other process', repeated: true });
            expect((await t.fullRow(id))['state']).toBe('DEAD');
          } else {
            expect(d).toMatchObject({ code: 'QUEUED', repeated: false });
            expect(d.reason).toMatch(/^reset to PENDING from DEAD/);
            expect(await t.fullRow(id)).toMatchObject({ state: 'PENDING', replay_op_digest: opDigest(op) });
          }
        }
      } finally {
        await other.end();
        await db.close();
      }
    },
  );

  codesTest('the same operation from two processes at once → one reset, two identical answers', async () => {
    for (let round = 0; round < 3; round++) {
      const key = uniqueConsumerKey('cc');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { id, answerUuid, eventId } = await insertRow(t.dbs.admin, t.dbs.fcName, {
        consumerKey: key,
        state: 'DEAD',
      });
      const op = `race-${round}-${randomUUID()}`;
      const args = [
        '--json',
        'deliveries',
        'replay',
        '--consumer',
        key,
        '--school',
        '5',
        '--answer',
        answerUuid,
        '--expected-revision',
        '1',
        '--operation-id',
        op,
        '--execute',
      ];
      const [p, q] = await Promise.all([spawnCli(args, { env: t.env }), spawnCli(args, { env: t.env })]);
      expect([p.code, q.code, p.stderr, q.stderr]).toEqual([0, 0, '', '']);
      const [ap, aq] = [resultOf(p.stdout), resultOf(q.stdout)];
      const strip = (a: Record<string, unknown>) => ({ ...a, repeated: null });
      expect(strip(ap)).toEqual(strip(aq));
      expect(ap).toMatchObject({ code: 'QUEUED', eventId });
      expect([ap['repeated'], aq['repeated']].sort()).toEqual([false, true]);
      expect(await t.opRows(op)).toHaveLength(1);
      expect(await t.fullRow(id)).toMatchObject({ state: 'PENDING', retry_count: 0, replay_op_digest: opDigest(op) });
    }
  });
});

describe('deliveries replay --from (batch)', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  let tmp: string;
  batchTest.beforeAll(async ({ dbs, tmp: dir }) => {
    t = await setup(dbs);
    tmp = dir;
  });

  batchTest(
    'reports without --execute, replays with it; one line per input in input order; summary by code; exit 1 when any is refused',
    async () => {
      const key = uniqueConsumerKey('b');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const rows = [];
      for (let i = 0; i < 30; i++)
        rows.push(await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: i % 2 ? 'DEAD' : 'FAILED' }));
      const delivered = await insertRow(t.dbs.admin, t.dbs.fcName, {
        consumerKey: key,
        state: 'BROKER_ACCEPTED',
        applied: true,
      });
      const missing = randomUUID();
      const lines = [
        'answerUuid,expectedRevision,operationId',
        ...rows.map((r, i) => `${r.answerUuid},1,batch-${i}`),
        `${delivered.answerUuid},1,batch-delivered`,
        `${missing},1,batch-missing`,
        `${rows[0]!.answerUuid},2,batch-rev`,
        `${rows[1]!.answerUuid},1,batch-1`, // the same operation again in the same file
      ];
      const file = join(tmp, 'batch.csv');
      writeFileSync(file, `${lines.join('\n')}\n`);
      const args = [
        '--json',
        'deliveries',
        'replay',
        '--consumer',
        key,
        '--school',
        '5',
        '--from',
        file,
        '--concurrency',
        '6',
      ];

      const sum0 = await t.checksum();
      const dry = await runCli(args, { env: t.env });
      expect(dry.code).toBe(1);
      expect(await t.checksum()).toBe(sum0);
      const dryResults = jsonLines(dry.stdout).filter((l) => l['type'] === 'result');
      expect(dryResults.map((r) => r['line'])).toEqual(Array.from({ length: 34 }, (_, i) => i + 2));
      expect(summaryOf(dry.stdout)).toMatchObject({
        dryRun: true,
        items: 34,
        byCode: { QUEUED: 31, ALREADY_DELIVERED: 1, NO_DELIVERY_ROW: 1, REVISION_MISMATCH: 1, GRANT_REVOKED: 0 },
        refused: 2,
      });

      const run = await runCli([...args, '--execute'], { env: t.env });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(1);
      const results = jsonLines(run.stdout).filter((l) => l['type'] === 'result');
      expect(results.map((r) => r['line'])).toEqual(Array.from({ length: 34 }, (_, i) => i + 2));
      expect(results.map((r) => r['code'])).toEqual(dryResults.map((r) => r['code']));
      expect(summaryOf(run.stdout)).toMatchObject({
        dryRun: false,
        items: 34,
        answered: 34,
        repeated: 1,
        refused: 2,
        notRun: 0,
        stoppedBy: 'done',
      });
      // the duplicate line got the first answer
      const dup = results.filter((r) => r['operationId'] === 'batch-1');
      expect(dup.map((r) => r['repeated']).sort()).toEqual([false, true]);
      expect(dup[0]!['reason']).toBe(dup[1]!['reason']);
      for (const [i, r] of rows.entries())
        expect(await t.fullRow(r.id)).toMatchObject({
          state: 'PENDING',
          retry_count: 0,
          replay_op_digest: opDigest(`batch-${i}`),
        });

      // the whole file again: every answer repeated, nothing written
      const sum1 = await t.checksum();
      const again = await runCli([...args, '--execute'], { env: t.env });
      expect(summaryOf(again.stdout)).toMatchObject({ repeated: 34, refused: 2 });
      expect(
        jsonLines(again.stdout)
          .filter((l) => l['type'] === 'result')
          .map((r) => [r['code'], r['reason']]),
      ).toEqual(results.map((r) => [r['code'], r['reason']]));
      expect(await t.checksum()).toBe(sum1);
    },
  );

  batchTest('reads JSON lines from stdin; a table on a terminal', async () => {
    const key = uniqueConsumerKey('j');
    await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    const r1 = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'DEAD' });
    const stdin = `${JSON.stringify({ answerUuid: r1.answerUuid, expectedRevision: 1, operationId: 'j-1' })}\n${JSON.stringify({ answerUuid: randomUUID(), expectedRevision: '1', operationId: 'j-2' })}\n`;
    const tty = await runCli(['deliveries', 'replay', '--consumer', key, '--school', '5', '--from', '-', '--execute'], {
      env: t.env,
      stdin,
      tty: true,
    });
    expect(tty.code).toBe(1);
    expect(tty.stdout).toMatch(/line\s+answer\s+rev\s+operation\s+code\s+reason/);
    expect(tty.stdout).toMatch(/QUEUED/);
    expect(tty.stdout).toMatch(/NO_DELIVERY_ROW/);
    expect(await t.fullRow(r1.id)).toMatchObject({ state: 'PENDING', replay_op_digest: opDigest('j-1') });
  });

  batchTest(
    'stopped before it starts (SIGINT) → no request run, summary with notRun, exit 1, nothing written',
    async () => {
      const key = uniqueConsumerKey('sig');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const r1 = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'DEAD' });
      const file = join(tmp, 'sig.csv');
      writeFileSync(
        file,
        `answerUuid,expectedRevision,operationId\n${r1.answerUuid},1,sig-1\n${randomUUID()},1,sig-2\n`,
      );
      const controller = new AbortController();
      controller.abort(new Error('stopped by SIGINT'));
      const sum = await t.checksum();
      const r = await runCli(
        ['--json', 'deliveries', 'replay', '--consumer', key, '--school', '5', '--from', file, '--execute'],
        { env: t.env, signal: controller.signal },
      );
      expect(r.code).toBe(1);
      expect(jsonLines(r.stdout).filter((l) => l['type'] === 'result')).toHaveLength(0);
      expect(summaryOf(r.stdout)).toMatchObject({ items: 2, answered: 0, notRun: 2, stoppedBy: 'signal' });
      expect(await t.checksum()).toBe(sum);
    },
  );

  batchTest(
    'a bad file or bad flags → exit 2, one line naming the problem (and the line), nothing written even with --execute',
    async () => {
      const key = uniqueConsumerKey('bad');
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const good = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'DEAD' });
      const H = 'answerUuid,expectedRevision,operationId';
      const ok = `${good.answerUuid},1,fine-op`;
      const files: Array<[string, string, RegExp]> = [
        ['unclosed quote', `${H}\n${ok}\n${good.answerUuid},1,"x\n`, /line 3: malformed CSV/],
        [
          'missing column',
          `answerUuid,operationId\n${good.answerUuid},x\n`,
          /line 1: the header lacks expectedRevision/,
        ],
        ['non-UUID', `${H}\n${ok}\nnope,1,y\n`, /line 3: answerUuid "nope" is not a UUID/],
        [
          'revision not an integer',
          `${H}\n${ok}\n${good.answerUuid},1.0,y\n`,
          /line 3: expectedRevision "1.0" is not a whole number/,
        ],
        ['empty op id', `${H}\n${ok}\n${good.answerUuid},1,\n`, /line 3: operationId is empty/],
        [
          'op id too long',
          `${H}\n${ok}\n${good.answerUuid},1,${'o'.repeat(129)}\n`,
          /line 3: operationId is longer than 128 characters/,
        ],
        [
          'malformed JSONL',
          `${JSON.stringify({ answerUuid: good.answerUuid, expectedRevision: 1, operationId: 'a' })}\n{oops}\n`,
          /line 2: malformed JSON/,
        ],
        [
          'JSONL missing member',
          `${JSON.stringify({ answerUuid: good.answerUuid, expectedRevision: 1 })}\n`,
          /line 1: operationId is missing/,
        ],
        ['not UTF-8', `${H}\n${ok}\n\xff`, /not UTF-8/],
      ];
      const sum = await t.checksum();
      for (const [name, text, expected] of files) {
        const file = join(tmp, `bad-${name.replaceAll(' ', '-')}`);
        writeFileSync(
          file,
          name === 'not UTF-8' ? Buffer.concat([Buffer.from(`${H}\n${ok}\n`), Buffer.from([0xff, 0xfe])]) : text,
        );
        const r = await runCli(
          ['--json', 'deliveries', 'replay', '--consumer', key, '--school', '5', '--from', file, '--execute'],
          { env: t.env },
        );
        expect(r.code, name).toBe(2);
        expect(r.stdout, name).toBe('');
        expect(r.stderr.trim().split('\n'), name).toHaveLength(1);
        expect(r.stderr, name).toMatch(expected);
        expect(r.stderr, name).toMatch(/^fcctl: --from /);
      }
      const base = ['--json', 'deliveries', 'replay', '--consumer', key, '--school', '5', '--execute'];
      const flags: Array<[string[], RegExp]> = [
        [['--from', join(tmp, 'does-not-exist.csv')], /cannot read: ENOENT/],
        [
          ['--answer', good.answerUuid, '--expected-revision', '1'],
          /give --answer, --expected-revision and --operation-id/,
        ],
        [['--answer', 'x', '--expected-revision', '1', '--operation-id', 'o'], /--answer "x" is not a UUID/],
        [
          ['--answer', good.answerUuid, '--expected-revision', 'one', '--operation-id', 'o'],
          /--expected-revision "one" is not a whole number/,
        ],
        [
          ['--answer', good.answerUuid, '--expected-revision', '1', '--operation-id', 'o'.repeat(129)],
          /--operation-id is longer than 128/,
        ],
        [
          ['--answer', good.answerUuid, '--expected-revision', '1', '--operation-id', 'o', '--from', 'f.csv'],
          /cannot be combined/,
        ],
      ];
      for (const [extra, expected] of flags) {
        const r = await runCli([...base, ...extra], { env: t.env });
        expect(r.code, extra.join(' ')).toBe(2);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr, extra.join(' ')).toMatch(expected);
      }
      for (const extra of [
        ['--school', '0'],
        ['--school', 'x'],
        ['--concurrency', '0'],
      ]) {
        const r = await runCli(
          ['deliveries', 'replay', '--consumer', key, '--school', '5', '--from', 'f.csv', ...extra],
          { env: t.env },
        );
        expect(r.code, extra.join(' ')).toBe(2);
      }
      expect((await runCli(['deliveries', 'replay', '--school', '5', '--from', 'f.csv'], { env: t.env })).code).toBe(2);
      expect(await t.checksum()).toBe(sum);
    },
  );
});

describe('deliveries replay without its table', () => {
  noTableTest('schema missing → exit 3 after the summary, one line naming db init', async ({ dbs }) => {
    const t = await setup(dbs);
    const key = uniqueConsumerKey('nt');
    await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
    const r1 = await insertRow(t.dbs.admin, t.dbs.fcName, { consumerKey: key, state: 'DEAD' });
    await t.dbs.admin.query(`DROP TABLE \`${t.dbs.fcName}\`.fcctl_replay_operation`);
    for (const execute of [[], ['--execute']]) {
      const r = await runCli(
        [
          '--json',
          'deliveries',
          'replay',
          '--consumer',
          key,
          '--school',
          '5',
          '--answer',
          r1.answerUuid,
          '--expected-revision',
          '1',
          '--operation-id',
          'x',
          ...execute,
        ],
        { env: t.env },
      );
      expect(r.code).toBe(3);
      expect(summaryOf(r.stdout)).toMatchObject({ exitCode: 3, stoppedBy: 'error', answered: 0 });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^fcctl: replay stopped by a database error: .*run `fcctl db init --side fc`/);
    }
    expect((await t.fullRow(r1.id))['state']).toBe('DEAD');
  });
});

describe('deliveries replay racing deliveries send (real broker)', () => {
  let t: Awaited<ReturnType<typeof setup>>;
  raceTest.beforeAll(async ({ dbs }) => {
    t = await setup(dbs);
  });
  const send = (env = t.env, extra: string[] = []) => runCli(['--json', 'deliveries', 'send', ...extra], { env });
  const deliveryRow = async (id: string): Promise<DeliveryRow> => {
    const [rows] = await t.dbs.admin.query(
      `SELECT id, event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision,
        is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, replay_op_digest FROM \`${t.dbs.fcName}\`.answer_delivery WHERE id = ?`,
      [id],
    );
    return (rows as DeliveryRow[])[0]!;
  };
  const replayArgs = (key: string, answer: string, op: string) => [
    '--json',
    'deliveries',
    'replay',
    '--consumer',
    key,
    '--school',
    '5',
    '--answer',
    answer,
    '--expected-revision',
    '1',
    '--operation-id',
    op,
    '--execute',
  ];

  raceTest(
    "replay while a relay holds the row in flight: the old generation's ack and nack change nothing, the row ends PENDING, the next send accepts it",
    async () => {
      const key = uniqueConsumerKey('fl');
      const q = await bindQueue(key);
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { id, answerUuid, eventId } = await insertRow(t.dbs.admin, t.dbs.fcName, {
        consumerKey: key,
        state: 'FAILED',
        retryCount: 3,
      });
      // A relay claims the row exactly as send does, and publishes it.
      await t.dbs.admin.query(
        `UPDATE \`${t.dbs.fcName}\`.answer_delivery SET claim_owner = 'old-relay', claim_expires_at = NOW() + INTERVAL 120 SECOND WHERE id = ?`,
        [id],
      );
      const old = await deliveryRow(id);
      const conn = await amqp.connect(testAmqpUrl());
      const ch = await conn.createConfirmChannel();
      ch.publish('fc.answer.delivery.v2', `fc.snapshot.v2.${key}.5`, buildEnvelope(old, 'UTC'), messageOptions(old));
      await ch.waitForConfirms();
      await conn.close();
      // The replay lands before the relay adjudicates.
      const r = await runCli(replayArgs(key, answerUuid, 'flight-1'), { env: t.env });
      expect(resultOf(r.stdout)).toMatchObject({ code: 'QUEUED' });
      const db = await openDb('FC database', t.dbs.fcUrl);
      try {
        const gen = { id, retryCount: 3, replayOpDigest: null };
        expect(await applyWrites(db, 'old-relay', [{ kind: 'accept', gens: [gen] }])).toBe(0);
        expect(
          await applyWrites(db, 'old-relay', [
            { kind: 'fail', gens: [gen], state: 'FAILED', retryCount: 4, backoffSeconds: 20, lastError: 'NACK' },
          ]),
        ).toBe(0);
      } finally {
        await db.close();
      }
      expect(await t.fullRow(id)).toMatchObject({
        state: 'PENDING',
        retry_count: 0,
        broker_accepted_at: null,
        claim_owner: null,
        replay_op_digest: opDigest('flight-1'),
      });
      const s = await send();
      expect(s.code).toBe(0);
      expect(summaryOf(s.stdout)).toMatchObject({ claimed: 1, accepted: 1 });
      expect(await t.fullRow(id)).toMatchObject({ state: 'BROKER_ACCEPTED', event_id: eventId });
      const messages = await q.drain();
      expect(messages.length).toBeGreaterThanOrEqual(1);
      expect(new Set(messages.map((m) => m.properties.messageId))).toEqual(new Set([eventId]));
      await q.close();
    },
  );

  raceTest(
    'a real send process with confirms held back by a slow link: replay mid-flight → stale ack ignored, row PENDING, next send accepts; the message is in the queue',
    async () => {
      const key = uniqueConsumerKey('px');
      const q = await bindQueue(key);
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { id, answerUuid, eventId } = await insertRow(t.dbs.admin, t.dbs.fcName, {
        consumerKey: key,
        state: 'DEAD',
      });
      // Make the DEAD row due as send would see a fresh PENDING one: replay it first (generation 1).
      expect(resultOf((await runCli(replayArgs(key, answerUuid, 'px-1'), { env: t.env })).stdout)['code']).toBe(
        'QUEUED',
      );
      const amqpUrl = new URL(testAmqpUrl());
      const proxy = new TcpProxy(amqpUrl.hostname, Number(amqpUrl.port || 5672));
      const port = await proxy.start();
      proxy.delayMs = 400;
      try {
        const sending = spawnCli(
          ['--json', 'deliveries', 'send', '--max-rows', '1', '--confirm-timeout', '30', '--lease-seconds', '120'],
          {
            env: { ...t.env, FCCTL_AMQP_URL: viaProxy(testAmqpUrl(), port) },
            timeoutMs: 90_000,
          },
        );
        await waitFor(
          'the relay to claim the row',
          async () => (await t.fullRow(id))['claim_owner'] !== null,
          60_000,
          5,
        );
        const r = await runCli(replayArgs(key, answerUuid, 'px-2'), { env: t.env });
        expect(resultOf(r.stdout)).toMatchObject({ code: 'QUEUED' });
        const s = await sending;
        expect(s.stderr).toBe('');
        expect(s.code).toBe(0);
        // the confirm came back for generation px-1: turned away by the guard, reported as stale
        expect(summaryOf(s.stdout)).toMatchObject({ claimed: 1, published: 1, accepted: 0, skipped: 1, stale: 1 });
        expect(await t.fullRow(id)).toMatchObject({
          state: 'PENDING',
          retry_count: 0,
          broker_accepted_at: null,
          claim_owner: null,
          replay_op_digest: opDigest('px-2'),
        });
      } finally {
        await proxy.stop();
      }
      const next = await send();
      expect(summaryOf(next.stdout)).toMatchObject({ claimed: 1, accepted: 1, stale: 0 });
      expect(await t.fullRow(id)).toMatchObject({ state: 'BROKER_ACCEPTED' });
      const messages = await q.drain();
      expect(messages).toHaveLength(2);
      expect(messages.every((m) => m.properties.messageId === eventId)).toBe(true);
      expect(messages[0]!.content.equals(messages[1]!.content)).toBe(true);
      await q.close();
    },
    120_000,
  );

  raceTest(
    'a DEAD row replayed and sent → BROKER_ACCEPTED with the same event id and the same snapshot bytes',
    async () => {
      const key = uniqueConsumerKey('dd');
      const q = await bindQueue(key);
      await insertGrant(t.dbs.admin, t.dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
      const { id, answerUuid, eventId } = await insertRow(t.dbs.admin, t.dbs.fcName, {
        consumerKey: key,
        state: 'DEAD',
      });
      const before = await t.fullRow(id);
      expect((await runCli(replayArgs(key, answerUuid, 'dead-1'), { env: t.env })).code).toBe(0);
      const s = await send();
      expect(summaryOf(s.stdout)).toMatchObject({ accepted: 1 });
      const after = await t.fullRow(id);
      expect(after).toMatchObject({
        state: 'BROKER_ACCEPTED',
        event_id: eventId,
        snapshot_json: before['snapshot_json'],
        content_hash: before['content_hash'],
      });
      const [m] = await q.drain();
      expect(m!.properties.messageId).toBe(eventId);
      const raw = m!.content.toString('utf8');
      expect(raw.slice(raw.indexOf('"snapshot":') + '"snapshot":'.length, -1)).toBe(before['snapshot_json']);
      await q.close();
    },
  );
});
