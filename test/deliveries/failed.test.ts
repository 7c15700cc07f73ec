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
/** event ids of the FAILED/DEAD rows of KEY/school 5, newest first */
const expected: string[] = [];

async function insert(consumerKey: string, school: number, state: string, updateTime: string | null, extra: { retry?: number; lastError?: string; nextRetry?: string } = {}): Promise<string> {
  const eventId = randomUUID();
  await dbs.admin.query(
    `INSERT INTO \`${dbs.fcName}\`.answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version,
      answer_uuid, answer_revision, is_deleted, content_hash, occurred_at, snapshot_json, state, retry_count, next_retry_at, last_error, create_time, update_time)
     VALUES (?, 'created', ?, ?, ?, 1, ?, 3, ?, 2, 0, ?, '2026-10-21 10:05:00', ?, ?, ?, ?, ?, '2026-10-21 10:00:00', ?)`,
    [eventId, PUBLISHER.appKey, consumerKey, school, FORM, randomUUID(), 'a'.repeat(64), snapshotOf(school), state, extra.retry ?? 0, extra.nextRetry ?? null, extra.lastError ?? null, updateTime],
  );
  return eventId;
}

test.beforeAll(async ({ dbs: d }) => {
  dbs = d;
  env = dbs.env();
  // 250 FAILED/DEAD rows of KEY/5 with distinct update times; several share one time (id breaks the tie)
  const rows: Array<{ id: string; t: string; i: number }> = [];
  for (let i = 0; i < 250; i++) {
    const minute = String(Math.floor(i / 5)).padStart(2, '0');
    const t = `2026-10-22 ${String(10 + Math.floor(i / 300)).padStart(2, '0')}:${minute}:00`;
    const dead = i % 3 === 0;
    const id = await insert(KEY, 5, dead ? 'DEAD' : 'FAILED', t, dead ? { retry: 8, lastError: 'NO_ROUTE' } : { retry: 1 + (i % 7), lastError: `NACK: "quoted", comma`, nextRetry: '2026-10-22 12:00:00' });
    rows.push({ id, t, i });
  }
  // one never updated: ordered by its create time (the oldest)
  const never = await insert(KEY, 5, 'FAILED', null, { retry: 1, lastError: 'CONFIRM_TIMEOUT' });
  // newest first: by time desc, then insertion (id) desc
  expected.push(...rows.sort((a, b) => (a.t === b.t ? b.i - a.i : a.t < b.t ? 1 : -1)).map((r) => r.id), never);
  // not listed: other states, other school, other consumer
  for (const s of ['PENDING', 'BROKER_ACCEPTED', 'GRANT_REVOKED']) await insert(KEY, 5, s, '2026-10-23 00:00:00');
  await insert(KEY, 6, 'DEAD', '2026-10-23 00:00:00');
  await insert('100101', 5, 'FAILED', '2026-10-23 00:00:00');
});

const failed = (args: string[], json = true) => runCli([...(json ? ['--json'] : []), 'deliveries', 'failed', '--consumer', KEY, '--school', '5', ...args], { env });

describe('fcctl deliveries failed (real MariaDB)', () => {
  test('pages FAILED and DEAD rows of one consumer and school, newest first, with reason, retries and next retry', async () => {
    const sum = await checksumTables(dbs.admin, dbs.fcName);
    const seen: string[] = [];
    for (let page = 1; page <= 6; page++) {
      const r = await failed(['--page', String(page), '--size', '50']);
      expect(r.code).toBe(0);
      const lines = jsonLines(r.stdout);
      const rows = lines.filter((l) => l['type'] === 'row');
      seen.push(...rows.map((x) => String(x['eventId'])));
      expect(lines.at(-1)).toMatchObject({ type: 'summary', command: 'deliveries failed', exitCode: 0, page, size: 50, total: 251, listed: rows.length, hasMore: page < 6 });
      if (page === 1) {
        expect(rows[0]).toMatchObject({ state: expect.stringMatching(/^(FAILED|DEAD)$/), answerRevision: '2', updateTime: '2026-10-22 10:49:00' });
        expect(Object.keys(rows[0]!).sort()).toEqual(['answerRevision', 'answerUuid', 'eventId', 'lastError', 'nextRetryAt', 'retryCount', 'state', 'type', 'updateTime']);
      }
    }
    expect(seen).toEqual(expected);
    const last = jsonLines((await failed(['--page', '6', '--size', '50'])).stdout).filter((l) => l['type'] === 'row');
    expect(last.at(-1)).toMatchObject({ lastError: 'CONFIRM_TIMEOUT', updateTime: null });
    const dead = jsonLines((await failed(['--size', '200'])).stdout).filter((l) => l['state'] === 'DEAD');
    expect(dead[0]).toMatchObject({ retryCount: 8, lastError: 'NO_ROUTE', nextRetryAt: null });
    // past the end: an empty page
    expect(jsonLines((await failed(['--page', '99', '--size', '200'])).stdout).at(-1)).toMatchObject({ listed: 0, hasMore: false, total: 251 });
    expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(sum);
  });

  test('--format csv gives only the CSV; --format json JSON lines; a table otherwise', async () => {
    const csv = await failed(['--size', '5', '--format', 'csv'], false);
    expect(csv.code).toBe(0);
    const parsed = parseCsv(csv.stdout);
    expect(parsed[0]).toEqual(['event id', 'state', 'answer', 'rev', 'retries', 'next retry', 'reason', 'updated']);
    expect(parsed.slice(1).map((r) => r[0])).toEqual(expected.slice(0, 5));
    expect(parsed.slice(1).find((r) => r[1] === 'FAILED')![6]).toBe('NACK: "quoted", comma');

    const json = await failed(['--size', '3', '--format', 'json'], false);
    expect(jsonLines(json.stdout).map((l) => l['type'])).toEqual(['row', 'row', 'row', 'summary']);

    const table = await runCli(['deliveries', 'failed', '--consumer', KEY, '--school', '5', '--size', '3'], { env, tty: true });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/event id\s+state\s+answer\s+rev\s+retries\s+next retry\s+reason\s+updated/);
    expect(table.stdout).toContain(expected[0]);
  });

  test('size above 200, page 0, a bad school or a missing consumer → exit 2, one line, no database needed', async () => {
    for (const args of [['--size', '201'], ['--size', '0'], ['--page', '0'], ['--school', 'x'], ['--format', 'xml']]) {
      const r = await runCli(['deliveries', 'failed', '--consumer', KEY, '--school', '5', ...args], { env: dbs.env({ FCCTL_FC_DATABASE_URL: 'mysql://nobody@127.0.0.1:1/none' }) });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect((await runCli(['deliveries', 'failed', '--school', '5'], { env })).code).toBe(2);
  });
});
