import { randomUUID } from 'node:crypto';
import { parseCsv } from '../helpers/csv.js';
import { describe, expect } from 'vitest';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { PUBLISHER, snapshotOf } from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const KEY = '100100';
const test = servicesTest({ prefix: 'failed', init: 'fc' });
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
/** event ids of the FAILED/DEAD rows of KEY/school 5, newest first (row id descending) */
const expected: string[] = [];

async function insert(
  consumerKey: string,
  school: number,
  state: string,
  updateTime: string | null,
  extra: { retry?: number; lastError?: string; nextRetry?: string } = {},
): Promise<string> {
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, next_retry_at, last_error, create_time, update_time)
     VALUES (?, 'created', ?, ?, ?, 1, ?, 3, ?, 2, 0, ?, '2026-10-21 10:05:00', ?, ?, ?, ?, ?, '2026-10-21 10:00:00', ?)`,
    [
      eventId,
      PUBLISHER.appKey,
      consumerKey,
      school,
      FORM,
      randomUUID(),
      'a'.repeat(64),
      snapshotOf(school),
      state,
      extra.retry ?? 0,
      extra.nextRetry ?? null,
      extra.lastError ?? null,
      updateTime,
    ],
  );
  return eventId;
}

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  env = dbs.env();
  // 250 FAILED/DEAD rows of KEY/5 with update times out of insertion order: the listing is by row id
  const rows: string[] = [];
  for (let i = 0; i < 250; i++) {
    const minute = String((i * 37) % 60).padStart(2, '0');
    const t = `2026-10-22 10:${minute}:00`;
    const dead = i % 3 === 0;
    rows.push(
      await insert(
        KEY,
        5,
        dead ? 'DEAD' : 'FAILED',
        t,
        dead
          ? { retry: 8, lastError: 'NO_ROUTE' }
          : { retry: 1 + (i % 7), lastError: `NACK: "quoted", comma`, nextRetry: '2026-10-22 12:00:00' },
      ),
    );
  }
  // one never updated (the newest row)
  rows.push(await insert(KEY, 5, 'FAILED', null, { retry: 1, lastError: 'CONFIRM_TIMEOUT' }));
  expected.push(...rows.reverse());
  // not listed: other states, other school, other consumer
  for (const s of ['PENDING', 'BROKER_ACCEPTED', 'GRANT_REVOKED']) await insert(KEY, 5, s, '2026-10-23 00:00:00');
  await insert(KEY, 6, 'DEAD', '2026-10-23 00:00:00');
  await insert('100101', 5, 'FAILED', '2026-10-23 00:00:00');
});

const failed = (args: string[], json = true) =>
  runCli([...(json ? ['--json'] : []), 'deliveries', 'failed', '--consumer', KEY, '--school', '5', ...args], { env });

const rowsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'row');
const REPLAY_HEADER = [
  'answerUuid',
  'expectedRevision',
  'eventId',
  'state',
  'retryCount',
  'nextRetryAt',
  'lastError',
  'updateTime',
  'id',
];

describe('fcctl deliveries failed (real MariaDB)', () => {
  test('pages FAILED and DEAD rows of one consumer and school, newest first (row id), with reason, retries, next retry and the next cursor', async () => {
    const sum = await checksumTables(dbs.admin, dbs.fcName);
    const seen: string[] = [];
    for (let page = 1; page <= 6; page++) {
      const r = await failed(['--page', String(page), '--size', '50']);
      expect(r.code).toBe(0);
      const lines = jsonLines(r.stdout);
      const rows = lines.filter((l) => l['type'] === 'row');
      seen.push(...rows.map((x) => String(x['eventId'])));
      expect(lines.at(-1)).toMatchObject({
        type: 'summary',
        command: 'deliveries failed',
        exitCode: 0,
        page,
        after: null,
        size: 50,
        total: 251,
        listed: rows.length,
        hasMore: page < 6,
      });
      expect(lines.at(-1)!['nextCursor']).toBe(page < 6 ? rows.at(-1)!['id'] : null);
      if (page === 1) {
        expect(rows[0]).toMatchObject({
          state: 'FAILED',
          lastError: 'CONFIRM_TIMEOUT',
          updateTime: null,
          answerRevision: '2',
        });
        expect(
          Object.keys(rows[0]!)
            .filter((k) => k !== 'ts')
            .sort(),
        ).toEqual([
          'answerRevision',
          'answerUuid',
          'eventId',
          'id',
          'lastError',
          'nextRetryAt',
          'retryCount',
          'state',
          'superseded',
          'type',
          'updateTime',
        ]);
      }
    }
    expect(seen).toEqual(expected);
    const dead = rowsOf((await failed(['--size', '200'])).stdout).filter((l) => l['state'] === 'DEAD');
    expect(dead[0]).toMatchObject({ retryCount: 8, lastError: 'NO_ROUTE', nextRetryAt: null });
    // past the end: an empty page
    expect(jsonLines((await failed(['--page', '99', '--size', '200'])).stdout).at(-1)).toMatchObject({
      listed: 0,
      hasMore: false,
      nextCursor: null,
      total: 251,
    });
    expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(sum);
  });

  test('--after pages by keyset: the same rows as the pages, each page after the cursor the previous one gave', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const r = await failed([...(after === null ? [] : ['--after', after]), '--size', '60']);
      expect(r.code).toBe(0);
      const lines = jsonLines(r.stdout);
      seen.push(...lines.filter((l) => l['type'] === 'row').map((x) => String(x['eventId'])));
      const summary = lines.at(-1)!;
      expect(summary).toMatchObject({ page: after === null ? 1 : null, after, total: 251 });
      after = summary['nextCursor'] as string | null;
      pages++;
    } while (after !== null);
    expect(pages).toBe(5);
    expect(seen).toEqual(expected);
    // a cursor below every row: an empty last page
    expect(jsonLines((await failed(['--after', '1'])).stdout).at(-1)).toMatchObject({
      listed: 0,
      hasMore: false,
      nextCursor: null,
    });
  });

  test('--state and --reason narrow the listing and its totals', async () => {
    const dead = jsonLines((await failed(['--state', 'DEAD', '--size', '200'])).stdout);
    expect(dead.filter((l) => l['type'] === 'row').every((l) => l['state'] === 'DEAD')).toBe(true);
    expect(dead.at(-1)).toMatchObject({ total: 84, dead: 84, failed: 0 });
    const nack = jsonLines((await failed(['--reason', 'NACK', '--size', '200'])).stdout);
    expect(nack.at(-1)).toMatchObject({ total: 166, failed: 166, dead: 0 });
    expect(jsonLines((await failed(['--state', 'FAILED', '--reason', 'CONFIRM_TIMEOUT'])).stdout).at(-1)).toMatchObject(
      { total: 1, listed: 1 },
    );
    expect(jsonLines((await failed(['--state', 'DEAD', '--reason', 'NACK'])).stdout).at(-1)).toMatchObject({
      total: 0,
      listed: 0,
    });
  });

  test('--format csv and jsonl give only the rows, under the names deliveries replay --from reads (operationId with --operation-prefix); the cursor on stderr', async () => {
    const csv = await failed(['--size', '5', '--format', 'csv'], false);
    expect(csv.code).toBe(0);
    const parsed = parseCsv(csv.stdout);
    expect(parsed[0]).toEqual(REPLAY_HEADER);
    expect(parsed.slice(1).map((r) => r[2])).toEqual(expected.slice(0, 5));
    expect(parsed.slice(1).find((r) => r[6]!.startsWith('NACK'))![6]).toBe('NACK: "quoted", comma');
    expect(parsed[1]![1]).toBe('2');
    const cursor = /^next page: --after (\d+)\n$/.exec(csv.stderr);
    expect(cursor).not.toBeNull();
    expect(parsed[5]![8]).toBe(cursor![1]);

    const withOp = parseCsv(
      (await failed(['--size', '2', '--format', 'csv', '--operation-prefix', 'INC-42'], false)).stdout,
    );
    expect(withOp[0]).toEqual(['answerUuid', 'expectedRevision', 'operationId', ...REPLAY_HEADER.slice(2)]);
    expect(withOp[1]![2]).toBe(`INC-42:${expected[0]}`);

    const jsonl = await failed(['--size', '3', '--format', 'jsonl', '--operation-prefix', 'INC-42'], false);
    const lines = jsonLines(jsonl.stdout);
    expect(lines.map((l) => l['eventId'])).toEqual(expected.slice(0, 3));
    expect(Object.keys(lines[0]!)).toEqual([
      'answerUuid',
      'expectedRevision',
      'operationId',
      ...REPLAY_HEADER.slice(2),
    ]);
    expect(lines[1]).toMatchObject({ expectedRevision: '2', operationId: `INC-42:${expected[1]}` });
    // the last page: no cursor
    expect(
      (await failed(['--after', String(parsed[5]![8]), '--size', '200', '--format', 'jsonl'], false)).stderr,
    ).toMatch(/^next page: --after \d+\n$/);
    expect((await failed(['--page', '2', '--size', '200', '--format', 'jsonl'], false)).stderr).toBe('');

    const json = await failed(['--size', '3', '--format', 'json'], false);
    expect(jsonLines(json.stdout).map((l) => l['type'])).toEqual(['row', 'row', 'row', 'summary']);

    const table = await runCli(['deliveries', 'failed', '--consumer', KEY, '--school', '5', '--size', '3'], {
      env,
      tty: true,
    });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/event id\s+state\s+answer\s+rev\s+retries\s+next retry\s+reason\s+updated/);
    expect(table.stdout).toContain(expected[0]);
    expect(table.stdout).toMatch(/next page: --after \d+/);
  });

  test('bad flags → exit 2, one line, no database needed', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--size', '201'], /--size/],
      [['--size', '0'], /--size/],
      [['--page', '0'], /--page/],
      [['--school', 'x'], /--school/],
      [['--format', 'xml'], /--format/],
      [['--page', '2', '--after', '100'], /--page and --after are two ways to page/],
      [['--after', 'x'], /--after "x" is not a row id/],
      [['--after', '0'], /not a row id/],
      [['--after', '012'], /not a row id/],
      [['--state', 'PENDING'], /--state "PENDING" is not FAILED or DEAD/],
      [['--reason', 'NO_RUOTE'], /--reason "NO_RUOTE" is not a reason code/],
      [['--operation-prefix', 'INC-1'], /--operation-prefix applies only with --format csv or jsonl/],
      [['--format', 'csv', '--operation-prefix', 'x'.repeat(92)], /--operation-prefix is longer than 91 characters/],
      [
        ['--format', 'csv', '--operation-prefix', ' INC'],
        /--operation-prefix holds control characters or surrounding spaces/,
      ],
    ];
    for (const [args, says] of cases) {
      const r = await runCli(['deliveries', 'failed', '--consumer', KEY, '--school', '5', ...args], {
        env: dbs.env({ FCCTL_FC_DATABASE_URL: 'mysql://nobody@127.0.0.1:1/none' }),
      });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr, args.join(' ')).toMatch(/^fcctl: /);
      expect(r.stderr, args.join(' ')).toMatch(says);
    }
    expect((await runCli(['deliveries', 'failed', '--school', '5'], { env })).code).toBe(2);
  });
});
