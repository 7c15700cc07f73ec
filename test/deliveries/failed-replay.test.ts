/**
 * Issue 19 §6, incident commands that compose: `deliveries failed --format csv|jsonl` is a
 * `deliveries replay --from` file as it stands, `--after` pages stay put while page 1 is replayed,
 * and `deliveries replay --failed --operation-prefix P` run twice changes nothing the second time.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { opDigest } from '../../src/lib/deliveries/replay/decide.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertGrant, PUBLISHER, snapshotOf, uniqueConsumerKey } from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const test = servicesTest({ prefix: 'frepl', init: 'fc' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let tmp: string;

test.beforeAll(async ({ dbs: d, tmp: dir }) => {
  dbs = d;
  env = dbs.env();
  tmp = dir;
});

/** Inserts one outbox row of `key`, school 5, revision 1 of a new answer unless told; returns its event id. */
async function insert(
  key: string,
  state: string,
  lastError: string,
  school = 5,
  answer: { uuid: string; revision: number } = { uuid: randomUUID(), revision: 1 },
): Promise<string> {
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, next_retry_at, last_error, create_time, update_time)
     VALUES (?, 'created', ?, ?, ?, 1, ?, 3, ?, ?, 0, ?, '2026-10-21 10:05:00', ?, ?, ?, ?, ?, '2026-10-21 10:00:00', NOW())`,
    [
      eventId,
      PUBLISHER.appKey,
      key,
      school,
      FORM,
      answer.uuid,
      answer.revision,
      'a'.repeat(64),
      snapshotOf(school),
      state,
      state === 'DEAD' ? 8 : 2,
      state === 'FAILED' ? '2030-01-01 00:00:00' : null,
      lastError,
    ],
  );
  return eventId;
}

async function consumer(prefix: string): Promise<string> {
  const key = uniqueConsumerKey(prefix);
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: key });
  return key;
}

async function rowOf(eventId: string): Promise<Record<string, unknown>> {
  const [rows] = await dbs.admin.query(
    `SELECT state, retry_count, replay_op_digest FROM \`${dbs.fcName}\`.answer_delivery WHERE event_id = ?`,
    [eventId],
  );
  return (rows as Array<Record<string, unknown>>)[0]!;
}

async function answerOf(eventId: string): Promise<{ answer_uuid: string }> {
  const [rows] = await dbs.admin.query(`SELECT answer_uuid FROM \`${dbs.fcName}\`.answer_delivery WHERE event_id = ?`, [
    eventId,
  ]);
  return (rows as Array<{ answer_uuid: string }>)[0]!;
}

const checksum = () => checksumTables(dbs.admin, dbs.fcName);
const failed = (key: string, args: string[]) =>
  runCli(['deliveries', 'failed', '--consumer', key, '--school', '5', ...args], { env });
const replay = (key: string, args: string[], stdin?: string) =>
  runCli(['--json', 'deliveries', 'replay', '--consumer', key, '--school', '5', ...args], {
    env,
    ...(stdin === undefined ? {} : { stdin }),
  });
const results = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'result');
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const listed = async (key: string, args: string[] = []) => jsonLines((await failed(key, ['--json', ...args])).stdout);

describe('deliveries failed → deliveries replay --from (real MariaDB)', () => {
  test('failed --format csv --operation-prefix P > file; replay --from file: a dry run, then --execute replays every row under P:<eventId>', async () => {
    const key = await consumer('fc');
    const events: string[] = [];
    for (let i = 0; i < 12; i++)
      events.push(await insert(key, i % 2 ? 'DEAD' : 'FAILED', i % 2 ? 'NO_ROUTE' : 'NACK: 406'));
    const csv = await failed(key, ['--format', 'csv', '--size', '200', '--operation-prefix', 'INC-1']);
    expect([csv.code, csv.stderr]).toEqual([0, '']);
    const file = join(tmp, 'inc-1.csv');
    writeFileSync(file, csv.stdout);

    const sum0 = await checksum();
    const dry = await replay(key, ['--from', file]);
    expect(dry.code).toBe(0);
    expect(results(dry.stdout).map((r) => r['code'])).toEqual(Array(12).fill('QUEUED'));
    expect(await checksum()).toBe(sum0);

    const run = await replay(key, ['--from', file, '--execute']);
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(summaryOf(run.stdout)).toMatchObject({ items: 12, byCode: { QUEUED: 12 }, refused: 0, repeated: 0 });
    expect(
      results(run.stdout)
        .map((r) => r['operationId'])
        .sort(),
    ).toEqual(events.map((e) => `INC-1:${e}`).sort());
    for (const e of events)
      expect(await rowOf(e)).toMatchObject({
        state: 'PENDING',
        retry_count: 0,
        replay_op_digest: opDigest(`INC-1:${e}`),
      });
    expect(jsonLines((await failed(key, ['--json'])).stdout).at(-1)).toMatchObject({ total: 0 });

    // the rows fail again: replay --failed under the same prefix finds the answers recorded, writes
    // nothing, and says so: still failed, exit 1
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'FAILED', retry_count = 1 WHERE consumer_app_key = ?`,
      [key],
    );
    const sum1 = await checksum();
    const again = await replay(key, ['--failed', '--operation-prefix', 'INC-1', '--execute']);
    expect(again.code).toBe(1);
    expect(summaryOf(again.stdout)).toMatchObject({
      items: 12,
      repeated: 12,
      repeatedStillFailed: 12,
      operationPrefix: 'INC-1',
      more: false,
    });
    expect(await checksum()).toBe(sum1);
  });

  test("formula-like cells (CSV injection): marked with ' in the csv, read back exactly by replay --from (the same operation ids replay --failed uses)", async () => {
    const prefixes = ['=HYPERLINK("http://evil.example","x")', '-1', '@SUM(1)'];
    for (const prefix of prefixes) {
      const key = await consumer('fx');
      const events = [await insert(key, 'DEAD', "=cmd|' /C calc'!A0"), await insert(key, 'FAILED', '-1')];
      const csv = await failed(key, ['--format', 'csv', '--operation-prefix', prefix]);
      expect([csv.code, csv.stderr]).toEqual([0, '']);
      // no cell of the file starts a formula
      for (const line of csv.stdout.trimEnd().split('\n').slice(1))
        for (const cell of line.split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/))
          expect(cell.replace(/^"/, '')).not.toMatch(/^[=+@\t\r]|^-(?!\d+$)/);
      expect(csv.stdout).toContain(`'=cmd|`);
      const file = join(tmp, 'formula.csv');
      writeFileSync(file, csv.stdout);
      const run = await replay(key, ['--from', file, '--execute']);
      expect(run.code).toBe(0);
      expect(results(run.stdout).map((r) => r['operationId'])).toEqual(
        [...events].reverse().map((e) => `${prefix}:${e}`),
      );
      await dbs.admin.query(
        `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'FAILED', retry_count = 1 WHERE consumer_app_key = ?`,
        [key],
      );
      const again = await replay(key, ['--failed', '--operation-prefix', prefix, '--execute']);
      expect(summaryOf(again.stdout)).toMatchObject({ items: 2, repeated: 2 });
    }
  });

  test('failed --format jsonl piped into replay --from -; without --operation-prefix the file lacks operationId and replay refuses it (exit 2)', async () => {
    const key = await consumer('fj');
    const events = [await insert(key, 'DEAD', 'NO_ROUTE'), await insert(key, 'FAILED', 'CONFIRM_TIMEOUT')];
    const jsonl = await failed(key, ['--format', 'jsonl', '--operation-prefix', 'INC-2']);
    const run = await replay(key, ['--from', '-', '--execute'], jsonl.stdout);
    expect(run.code).toBe(0);
    expect(results(run.stdout).map((r) => [r['operationId'], r['code']])).toEqual(
      [...events].reverse().map((e) => [`INC-2:${e}`, 'QUEUED']),
    );

    const key2 = await consumer('fn');
    await insert(key2, 'DEAD', 'NO_ROUTE');
    const bare = join(tmp, 'bare.csv');
    writeFileSync(bare, (await failed(key2, ['--format', 'csv'])).stdout);
    const sum = await checksum();
    const refused = await replay(key2, ['--from', bare, '--execute']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^fcctl: --from .*line 1: the header lacks operationId/);
    expect(await checksum()).toBe(sum);
  });

  test('--after pages stay put while page 1 is replayed (--page shifts)', async () => {
    const key = await consumer('fa');
    for (let i = 0; i < 30; i++) await insert(key, 'FAILED', 'NACK');
    const all = (await listed(key, ['--size', '200']))
      .filter((l) => l['type'] === 'row')
      .map((l) => String(l['eventId']));
    expect(all).toHaveLength(30);

    const page1 = await failed(key, ['--format', 'csv', '--size', '10', '--operation-prefix', 'INC-3']);
    const cursor = /^next page: --after (\d+)\n$/.exec(page1.stderr)![1]!;
    const file = join(tmp, 'page1.csv');
    writeFileSync(file, page1.stdout);
    expect((await replay(key, ['--from', file, '--execute'])).code).toBe(0);

    const page2 = await listed(key, ['--after', cursor, '--size', '10']);
    expect(page2.filter((l) => l['type'] === 'row').map((l) => l['eventId'])).toEqual(all.slice(10, 20));
    const next = String(page2.at(-1)!['nextCursor']);
    const page3 = await listed(key, ['--after', next, '--size', '10']);
    expect(page3.filter((l) => l['type'] === 'row').map((l) => l['eventId'])).toEqual(all.slice(20, 30));
    expect(page3.at(-1)).toMatchObject({ hasMore: false, nextCursor: null, total: 20 });
    // offset paging moved on under the replay: its page 2 is what was page 3
    const offset2 = await listed(key, ['--page', '2', '--size', '10']);
    expect(offset2.filter((l) => l['type'] === 'row').map((l) => l['eventId'])).toEqual(all.slice(20, 30));
  });
});

describe('deliveries replay --failed (real MariaDB)', () => {
  test('replays every matching row under P:<eventId>; --state and --reason narrow it; a second run changes nothing', async () => {
    const key = await consumer('rf');
    const failedNack = [];
    const deadRoute = [];
    const deadNack = [];
    for (let i = 0; i < 4; i++) failedNack.push(await insert(key, 'FAILED', 'NACK: 406'));
    for (let i = 0; i < 3; i++) deadRoute.push(await insert(key, 'DEAD', 'NO_ROUTE'));
    for (let i = 0; i < 2; i++) deadNack.push(await insert(key, 'DEAD', 'NACK'));
    const pending = await insert(key, 'PENDING', 'NACK');
    const otherSchool = await insert(key, 'DEAD', 'NO_ROUTE', 6);
    const sel = ['--failed', '--operation-prefix', 'INC-4'];

    const sum0 = await checksum();
    const dry = await replay(key, [...sel, '--state', 'DEAD']);
    expect(dry.code).toBe(0);
    expect(summaryOf(dry.stdout)).toMatchObject({ dryRun: true, items: 5, byCode: { QUEUED: 5 } });
    expect(results(dry.stdout).map((r) => r['operationId'])).toEqual(
      [...deadRoute, ...deadNack].reverse().map((e) => `INC-4:${e}`),
    );
    expect(await checksum()).toBe(sum0);

    const route = await replay(key, [...sel, '--state', 'DEAD', '--reason', 'NO_ROUTE', '--execute']);
    expect(summaryOf(route.stdout)).toMatchObject({
      dryRun: false,
      items: 3,
      byCode: { QUEUED: 3 },
      operationPrefix: 'INC-4',
    });
    for (const e of deadRoute)
      expect(await rowOf(e)).toMatchObject({ state: 'PENDING', replay_op_digest: opDigest(`INC-4:${e}`) });
    for (const e of [...failedNack, ...deadNack]) expect((await rowOf(e))['replay_op_digest']).toBeNull();

    const rest = await replay(key, [...sel, '--execute']);
    expect(rest.code).toBe(0);
    expect(summaryOf(rest.stdout)).toMatchObject({ items: 6, byCode: { QUEUED: 6 }, repeated: 0 });
    for (const e of [...failedNack, ...deadNack])
      expect(await rowOf(e)).toMatchObject({
        state: 'PENDING',
        retry_count: 0,
        replay_op_digest: opDigest(`INC-4:${e}`),
      });
    expect(await rowOf(pending)).toMatchObject({ state: 'PENDING', replay_op_digest: null });
    expect(await rowOf(otherSchool)).toMatchObject({ state: 'DEAD', replay_op_digest: null });

    // the same command again: nothing matches, nothing changes
    const sum1 = await checksum();
    const again = await replay(key, [...sel, '--execute']);
    expect(again.code).toBe(0);
    expect(summaryOf(again.stdout)).toMatchObject({ items: 0, answered: 0, exitCode: 0 });
    expect(await checksum()).toBe(sum1);

    // a replayed row that went DEAD again is answered from the record: not replayed twice under one incident
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', retry_count = 8 WHERE event_id = ?`,
      [deadRoute[0]],
    );
    const sum2 = await checksum();
    const third = await replay(key, [...sel, '--execute']);
    expect(third.code).toBe(1);
    expect(results(third.stdout)).toEqual([
      expect.objectContaining({
        operationId: `INC-4:${deadRoute[0]}`,
        code: 'QUEUED',
        repeated: true,
        stillFailed: true,
      }),
    ]);
    expect(await checksum()).toBe(sum2);
    expect(await rowOf(deadRoute[0]!)).toMatchObject({ state: 'DEAD' });
    // a new incident prefix replays it
    expect(
      summaryOf((await replay(key, ['--failed', '--operation-prefix', 'INC-5', '--execute'])).stdout),
    ).toMatchObject({ items: 1, repeated: 0, byCode: { QUEUED: 1 } });
  });

  // Issue 26 #10: a reused --operation-prefix answered "QUEUED (repeated)" with exit 0 for rows that
  // had failed again since, as if they were on their way.
  test('replay --failed under a reused prefix, rows FAILED or DEAD again since: the same answers, nothing written, counted as still failed, exit 1, a new prefix suggested', async () => {
    const key = await consumer('ra');
    const events = [
      await insert(key, 'FAILED', 'NACK'),
      await insert(key, 'DEAD', 'NO_ROUTE'),
      await insert(key, 'DEAD', 'NO_ROUTE'),
    ];
    const first = await replay(key, ['--failed', '--operation-prefix', 'INC-9', '--execute']);
    expect([first.code, first.stderr]).toEqual([0, '']);
    expect(summaryOf(first.stdout)).toMatchObject({
      items: 3,
      byCode: { QUEUED: 3 },
      repeated: 0,
      repeatedStillFailed: 0,
    });
    expect(results(first.stdout).every((r) => r['stillFailed'] === false)).toBe(true);
    // send failed them again: one FAILED, two DEAD
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'FAILED', retry_count = 1, last_error = 'CONFIRM_TIMEOUT' WHERE event_id = ?`,
      [events[0]],
    );
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', retry_count = 8, last_error = 'NO_ROUTE' WHERE event_id IN (?, ?)`,
      [events[1], events[2]],
    );

    const sum = await checksum();
    const again = await replay(key, ['--failed', '--operation-prefix', 'INC-9', '--execute']);
    expect([again.code, again.stderr]).toEqual([1, '']);
    expect(summaryOf(again.stdout)).toMatchObject({
      exitCode: 1,
      items: 3,
      byCode: { QUEUED: 3 },
      repeated: 3,
      repeatedStillFailed: 3,
      refused: 0,
    });
    const answered = results(again.stdout);
    expect(answered.map((r) => [r['operationId'], r['code'], r['repeated'], r['stillFailed']]).sort()).toEqual(
      events.map((e) => [`INC-9:${e}`, 'QUEUED', true, true]).sort(),
    );
    for (const r of answered)
      expect(r['note']).toMatch(
        /^event \S+ is (FAILED|DEAD) again \((CONFIRM_TIMEOUT|NO_ROUTE)\) since this operation id queued it; .*a new --operation-prefix/,
      );
    // the idempotency rule holds: the same operation ids changed nothing
    expect(await checksum()).toBe(sum);
    // a dry run says the same
    const dry = await replay(key, ['--failed', '--operation-prefix', 'INC-9']);
    expect(dry.code).toBe(1);
    expect(summaryOf(dry.stdout)).toMatchObject({ repeatedStillFailed: 3 });
    // on a terminal, the closing line names what to do
    const tty = await runCli(
      [
        'deliveries',
        'replay',
        '--consumer',
        key,
        '--school',
        '5',
        '--failed',
        '--operation-prefix',
        'INC-9',
        '--execute',
      ],
      { env, tty: true },
    );
    expect(tty.code).toBe(1);
    expect(tty.stdout).toContain(
      '3 rows replayed earlier under these operation ids are FAILED or DEAD again; the same ids change nothing: replay them with a new --operation-prefix than INC-9',
    );
    expect(await checksum()).toBe(sum);

    // a new prefix replays them: exit 0
    const fresh = await replay(key, ['--failed', '--operation-prefix', 'INC-10', '--execute']);
    expect(fresh.code).toBe(0);
    expect(summaryOf(fresh.stdout)).toMatchObject({
      items: 3,
      byCode: { QUEUED: 3 },
      repeated: 0,
      repeatedStillFailed: 0,
    });
    for (const e of events)
      expect(await rowOf(e)).toMatchObject({
        state: 'PENDING',
        retry_count: 0,
        replay_op_digest: opDigest(`INC-10:${e}`),
      });
    // a repeat while the row is on its way again (PENDING) is plain repeated: exit 0
    const pendingAgain = await replay(key, [
      '--answer',
      String((await answerOf(events[0]!)).answer_uuid),
      '--expected-revision',
      '1',
      '--operation-id',
      `INC-10:${events[0]}`,
      '--execute',
    ]);
    expect(pendingAgain.code).toBe(0);
    expect(results(pendingAgain.stdout)[0]).toMatchObject({ code: 'QUEUED', repeated: true, stillFailed: false });
  });

  test('a row superseded by a newer revision of its answer (same consumer and school) is not replayed: counted as superseded, exit 0; failed lists it flagged, its csv leaves it out', async () => {
    const key = await consumer('rs');
    const other = await consumer('ro');
    const [A, B, C] = [randomUUID(), randomUUID(), randomUUID()];
    const a1 = await insert(key, 'DEAD', 'NO_ROUTE', 5, { uuid: A, revision: 1 });
    const a2 = await insert(key, 'FAILED', 'NACK', 5, { uuid: A, revision: 2 });
    const b1 = await insert(key, 'DEAD', 'NO_ROUTE', 5, { uuid: B, revision: 1 });
    await insert(key, 'BROKER_ACCEPTED', '', 5, { uuid: B, revision: 2 });
    const c1 = await insert(key, 'FAILED', 'NACK', 5, { uuid: C, revision: 1 });
    // newer revisions for another consumer, or another school, supersede nothing here
    await insert(other, 'PENDING', '', 5, { uuid: C, revision: 3 });
    await insert(key, 'PENDING', '', 6, { uuid: C, revision: 4 });

    const list = await listed(key);
    const flags = Object.fromEntries(
      list.filter((l) => l['type'] === 'row').map((l) => [l['eventId'], l['superseded']]),
    );
    expect(flags).toEqual({ [a1]: true, [a2]: false, [b1]: true, [c1]: false });
    expect(list.at(-1)).toMatchObject({ total: 4, superseded: 2 });
    expect((await failed(key, [])).stdout).toMatch(/superseded/);

    const csv = await failed(key, ['--format', 'csv', '--operation-prefix', 'INC-8']);
    expect(csv.code).toBe(0);
    expect(csv.stderr).toBe(
      'left out: 2 superseded rows (a newer revision of the answer exists), as replay --failed does\n',
    );
    const file = join(tmp, 'superseded.csv');
    writeFileSync(file, csv.stdout);
    const fromFile = await replay(key, ['--from', file]);
    expect(fromFile.code).toBe(0);
    expect(results(fromFile.stdout).map((r) => [r['operationId'], r['code']])).toEqual(
      [c1, a2].map((e) => [`INC-8:${e}`, 'QUEUED']),
    );

    const sum = await checksum();
    const dry = await replay(key, ['--failed', '--operation-prefix', 'INC-7']);
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    expect(summaryOf(dry.stdout)).toMatchObject({ items: 2, byCode: { QUEUED: 2 }, refused: 0, superseded: 2 });
    expect(await checksum()).toBe(sum);
    const run = await replay(key, ['--failed', '--operation-prefix', 'INC-7', '--execute']);
    expect(run.code).toBe(0);
    expect(results(run.stdout).map((r) => r['operationId'])).toEqual([c1, a2].map((e) => `INC-7:${e}`));
    for (const e of [a1, b1]) expect(await rowOf(e)).toMatchObject({ state: 'DEAD', replay_op_digest: null });
    expect(await rowOf(a2)).toMatchObject({ state: 'PENDING', replay_op_digest: opDigest(`INC-7:${a2}`) });
  });

  test('on a terminal: a dry run lists what each row would answer, in a table', async () => {
    const key = await consumer('rt');
    const e = await insert(key, 'DEAD', 'NO_ROUTE');
    const sum = await checksum();
    const r = await runCli(
      ['deliveries', 'replay', '--consumer', key, '--school', '5', '--failed', '--operation-prefix', 'INC-6'],
      { env, tty: true },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/line\s+answer\s+rev\s+operation\s+code\s+reason/);
    expect(r.stdout).toContain(`INC-6:${e}`);
    expect(r.stdout).toContain('dry run: nothing was written or recorded');
    expect(await checksum()).toBe(sum);
  });

  test('bad combinations → exit 2, one line, nothing written', async () => {
    const key = await consumer('rb');
    await insert(key, 'DEAD', 'NO_ROUTE');
    const U = randomUUID();
    const cases: Array<[string[], RegExp]> = [
      [['--failed', '--operation-prefix', 'P', '--from', 'f.csv'], /--failed cannot be combined with --from, --answer/],
      [
        ['--failed', '--operation-prefix', 'P', '--answer', U, '--expected-revision', '1', '--operation-id', 'o'],
        /--failed cannot be combined/,
      ],
      [['--failed'], /--failed needs --operation-prefix P/],
      [['--failed', '--operation-prefix', 'P', '--state', 'PENDING'], /--state "PENDING" is not FAILED or DEAD/],
      [
        ['--failed', '--operation-prefix', 'P', '--reason', 'BOGUS'],
        /--reason "BOGUS" is not a reason code send writes/,
      ],
      [['--failed', '--operation-prefix', 'x'.repeat(92)], /--operation-prefix is longer than 91 characters/],
      [['--failed', '--operation-prefix', ''], /--operation-prefix is empty/],
      [
        ['--from', 'f.csv', '--operation-prefix', 'P'],
        /--operation-prefix, --state and --reason apply only with --failed/,
      ],
      [
        ['--answer', U, '--expected-revision', '1', '--operation-id', 'o', '--state', 'DEAD'],
        /apply only with --failed/,
      ],
      [['--from', 'f.csv', '--reason', 'NO_ROUTE'], /apply only with --failed/],
    ];
    const sum = await checksum();
    for (const [args, says] of cases) {
      const r = await replay(key, [...args, '--execute']);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(/^fcctl: /);
      expect(r.stderr, args.join(' ')).toMatch(says);
    }
    expect(await checksum()).toBe(sum);
  });
});
