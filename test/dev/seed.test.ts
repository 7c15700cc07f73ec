import { describe, expect } from 'vitest';
import { buildAnswerSnapshot } from '../../src/lib/answers/snapshot.js';
import { ANSWER_COLUMNS, type AnswerRow } from '../../src/lib/answers/sql.js';
import { canonicalize } from '../../src/lib/canon/index.js';
import { DEFAULT_PUBLISHER, planSeed } from '../../src/lib/dev/seed.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'seed' });

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  source_app_key: string;
  consumer_app_key: string;
  consumer_school_id: string;
  grant_version: string;
  form_uuid: string;
  form_version: number;
  answer_uuid: string;
  answer_revision: string;
  is_deleted: number;
  content_hash: string;
  occurred_at: string;
  snapshot_json: string;
  state: string;
  retry_count: number;
}

describe('fcctl dev seed (real MariaDB)', () => {
  let dbs: TestDatabases;
  const q = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
    (await dbs.admin.query(sql.replaceAll('fc.', `\`${dbs.fcName}\`.`), params))[0] as T[];
  const seed = (args: string[], env: Record<string, string> = {}) =>
    runCli(['--json', 'dev', 'seed', ...args], { env: dbs.env(env) });
  const deliveries = () => q<DeliveryRow>('SELECT * FROM fc.answer_delivery ORDER BY id');
  const count = async (table: string) =>
    Number((await q<{ n: string }>(`SELECT COUNT(*) AS n FROM fc.${table}`))[0]!.n);

  test.beforeAll(({ dbs: services }) => {
    dbs = services;
  });

  test('refuses a database db init did not mark as development: exit 4, one line, nothing written', async () => {
    expect((await runCli(['db', 'init', '--side', 'fc'], { env: dbs.env() })).code).toBe(0);
    const before = await checksumTables(dbs.admin, dbs.fcName);
    const r = await seed(['--answers', '5']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/^fcctl: refusing to seed: the FC database is not marked as a development database.*\n$/);
    expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(before);
    for (const t of ['application_info', 'form_consumer_grant', 'answer', 'answer_delivery'])
      expect(await count(t)).toBe(0);
  });

  test('fills a marked database: counts per table, one PENDING row per answer revision and consumer', async () => {
    expect((await runCli(['db', 'init', '--side', 'fc', '--dev'], { env: dbs.env() })).code).toBe(0);
    const r = await seed(['--answers', '60', '--consumer-keys', 'k1,k2', '--schools', '2', '--seed', '7']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const summary = jsonLines(r.stdout).at(-1)!;
    expect(summary).toMatchObject({
      type: 'summary',
      command: 'dev seed',
      exitCode: 0,
      seed: 7,
      consumerKeys: 'k1,k2',
      schoolIds: '5,6',
      publisherAppKey: '100021',
      counts: { application_info: 3, form_consumer_grant: 12, answer: 60, answer_delivery: 120 },
    });
    expect(await count('application_info')).toBe(3);
    expect(await count('form_consumer_grant')).toBe(12); // 3 forms × 2 schools × 2 consumers
    expect(await count('answer')).toBe(60);
    expect(await count('answer_delivery')).toBe(120);
    const perAnswer = await q<{ n: string }>(
      'SELECT COUNT(*) AS n FROM fc.answer a JOIN fc.answer_delivery d ON d.answer_uuid = a.answer_uuid AND d.answer_revision = a.answer_revision AND d.consumer_school_id = a.sch_id AND d.form_uuid = a.form_uuid GROUP BY a.answer_uuid',
    );
    expect(perAnswer.map((x) => Number(x.n))).toEqual(Array(60).fill(2));

    const publisher = (
      await q<{ id: string; app_code: string; app_key: string }>(
        "SELECT id, app_code, app_key FROM fc.application_info WHERE app_code = 'demo-publisher'",
      )
    )[0]!;
    expect(Number(publisher.id)).toBeGreaterThan(0);
    expect(publisher.app_key).toBe('100021');
  });

  test('every outbox row is consistent: hash recomputes, snapshot is canonical and rebuilds from its answer row', async () => {
    const rows = await deliveries();
    const answers = new Map(
      (await q<AnswerRow>(`SELECT ${ANSWER_COLUMNS} FROM fc.answer`)).map((a) => [a.answer_uuid, a]),
    );
    const grants = new Map(
      (
        await q<{
          form_uuid: string;
          consumer_school_id: string;
          consumer_app_key: string;
          grant_version: string;
          push_allowed: number;
          revoked: number;
        }>('SELECT * FROM fc.form_consumer_grant')
      ).map((g) => [`${g.form_uuid}|${g.consumer_school_id}|${g.consumer_app_key}`, g]),
    );
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);
    for (const row of rows) {
      expect(row.event_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(row.state).toBe('PENDING');
      expect(row.retry_count).toBe(0);
      expect(row.source_app_key).toBe('100021');
      const canon = canonicalize(row.snapshot_json);
      if (!canon.ok) throw new Error(`${row.event_id}: ${canon.error.code}`);
      expect(canon.hash).toBe(row.content_hash);
      expect(canon.canonical.toString('utf8')).toBe(row.snapshot_json);
      const answer = answers.get(row.answer_uuid)!;
      expect(buildAnswerSnapshot(answer)).toEqual({ snapshotJson: row.snapshot_json, contentHash: row.content_hash });
      expect(row.answer_revision).toBe(answer.answer_revision);
      expect(row.is_deleted).toBe(answer.is_deleted);
      expect(row.form_version).toBe(answer.form_version);
      expect(row.occurred_at).toBe(answer.update_time ?? answer.create_time);
      expect(Number(answer.answer_revision)).toBeGreaterThanOrEqual(1);
      const expectedType =
        answer.is_deleted === 1 ? 'tombstoned' : answer.answer_revision === '1' ? 'created' : 'updated';
      expect(row.event_type).toBe(expectedType);
      if (answer.is_deleted === 1) expect(Number(answer.answer_revision)).toBeGreaterThanOrEqual(2);
      const grant = grants.get(`${row.form_uuid}|${row.consumer_school_id}|${row.consumer_app_key}`)!;
      // The row carries the grant version of its time: equal, or one behind an advanced grant.
      expect(Number(grant.grant_version) - Number(row.grant_version)).toBeGreaterThanOrEqual(0);
      expect(Number(grant.grant_version) - Number(row.grant_version)).toBeLessThanOrEqual(1);
    }
    expect(rows.some((r) => r.event_type === 'created')).toBe(true);
    expect(rows.some((r) => r.event_type === 'updated')).toBe(true);
  });

  test('mixes grants: some push-disabled, some revoked, some advanced beyond their rows', async () => {
    const mix = await q<{ push_disabled: string; revoked: string; advanced: string; active: string }>(
      `SELECT SUM(g.push_allowed = 0) AS push_disabled, SUM(g.revoked = 1) AS revoked,
              SUM(g.grant_version > (SELECT MAX(d.grant_version) FROM fc.answer_delivery d WHERE d.form_uuid = g.form_uuid AND d.consumer_school_id = g.consumer_school_id AND d.consumer_app_key = g.consumer_app_key)) AS advanced,
              SUM(g.push_allowed = 1 AND g.revoked = 0) AS active
       FROM fc.form_consumer_grant g`,
    );
    expect(mix[0]).toEqual({ push_disabled: '1', revoked: '1', advanced: '1', active: '10' });
  });

  test('writes realistic values: Chinese text, decimals with trailing zeros, integers beyond 2^53, nesting', async () => {
    const values = (await q<{ values_json: string }>('SELECT values_json FROM fc.answer')).map((r) => r.values_json);
    expect(values.some((v) => /[\u4e00-\u9fff]/.test(v))).toBe(true);
    expect(values.some((v) => /:\d+\.\d*0[,}\]]/.test(v))).toBe(true); // e.g. "amount":12.50
    expect(values.some((v) => /900719925\d{7}/.test(v))).toBe(true);
    expect(values.every((v) => /"applicant":\s*\{/.test(v) && /"scores":\s*\[/.test(v))).toBe(true);
    expect(
      (await q<{ n: string }>('SELECT COUNT(*) AS n FROM fc.answer WHERE submitter_id > 9007199254740992'))[0]!.n,
    ).not.toBe('0');
  });

  test('refuses to seed over existing rows without --replace (exit 4, nothing changed)', async () => {
    const before = await checksumTables(dbs.admin, dbs.fcName);
    const r = await seed(['--answers', '5']);
    expect(r.code).toBe(4);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('--replace');
    expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(before);
  });

  test('is deterministic: the same --seed gives the same ids and hashes, another seed other ones', async () => {
    const key = (rows: DeliveryRow[]) =>
      rows.map((r) => `${r.event_id} ${r.content_hash} ${r.consumer_app_key} ${r.grant_version}`);
    const first = key(await deliveries());
    const firstTables = await checksumTables(dbs.admin, dbs.fcName, [
      'application_info',
      'form_consumer_grant',
      'answer',
      'answer_delivery',
    ]);
    expect(
      (await seed(['--answers', '60', '--consumer-keys', 'k1,k2', '--schools', '2', '--seed', '7', '--replace'])).code,
    ).toBe(0);
    expect(key(await deliveries())).toEqual(first);
    expect(
      await checksumTables(dbs.admin, dbs.fcName, [
        'application_info',
        'form_consumer_grant',
        'answer',
        'answer_delivery',
      ]),
    ).toBe(firstTables);
    expect(
      (await seed(['--answers', '60', '--consumer-keys', 'k1,k2', '--schools', '2', '--seed', '8', '--replace'])).code,
    ).toBe(0);
    const other = key(await deliveries());
    expect(other).toHaveLength(first.length);
    expect(other.filter((k) => first.includes(k))).toEqual([]);
  });

  test('pure planning: more consumers or faults never change the existing rows', () => {
    const base = {
      seed: 3,
      answers: 20,
      schools: 1,
      snapshotBytes: 0,
      publisher: DEFAULT_PUBLISHER,
      grantMix: true,
      includeFaults: false,
    };
    const a = planSeed({ ...base, consumerKeys: ['k1'] });
    const b = planSeed({ ...base, consumerKeys: ['k1', 'k2'], includeFaults: true });
    expect(b.answers.map((x) => x.answer_uuid)).toEqual(a.answers.map((x) => x.answer_uuid));
    const bK1 = new Set(b.deliveries.filter((d) => d.consumer_app_key === 'k1').map((d) => d.event_id));
    for (const d of a.deliveries) expect(bK1.has(d.event_id)).toBe(true);
  });

  test('--include-faults adds rows that fail the pre-publish checks, and names them', async () => {
    const r = await seed([
      '--answers',
      '10',
      '--consumer-keys',
      'k1,k2',
      '--schools',
      '1',
      '--include-faults',
      '--no-grant-mix',
      '--replace',
      '--app-key',
      'pub-1',
      '--app-code',
      'pub-code',
    ]);
    expect(r.code).toBe(0);
    const lines = jsonLines(r.stdout);
    const faults = lines.filter((l) => l['type'] === 'fault') as Array<{ kind: string; eventId: string }>;
    expect(faults.map((f) => f.kind)).toEqual([
      'dotted-app-key',
      'wildcard-app-key',
      'school-zero',
      'tampered-snapshot',
    ]);
    const byId = new Map((await deliveries()).map((d) => [d.event_id, d]));
    const row = (kind: string) => byId.get(faults.find((f) => f.kind === kind)!.eventId)!;
    expect(row('dotted-app-key').consumer_app_key).toContain('.');
    expect(row('wildcard-app-key').consumer_app_key).toContain('*');
    expect(row('school-zero').consumer_school_id).toBe('0');
    const tampered = row('tampered-snapshot');
    const recomputed = canonicalize(tampered.snapshot_json);
    expect(recomputed.ok && recomputed.hash).not.toBe(tampered.content_hash);
    // Exactly one row has a hash that does not recompute.
    expect(
      [...byId.values()].filter((d) => {
        const c = canonicalize(d.snapshot_json);
        return !c.ok || c.hash !== d.content_hash;
      }),
    ).toHaveLength(1);
    // Each fault row has an active grant at its version, so it gets past the grant check.
    for (const f of faults) {
      const d = byId.get(f.eventId)!;
      const g = await q<{ grant_version: string; push_allowed: number; revoked: number }>(
        'SELECT grant_version, push_allowed, revoked FROM fc.form_consumer_grant WHERE form_uuid = ? AND consumer_school_id = ? AND consumer_app_key = ?',
        [d.form_uuid, d.consumer_school_id, d.consumer_app_key],
      );
      expect(g[0]).toMatchObject({ grant_version: d.grant_version, push_allowed: 1, revoked: 0 });
    }
    // Configured publisher: registry row and every row's source key.
    expect(await q('SELECT app_key FROM fc.application_info WHERE app_code = ?', ['pub-code'])).toEqual([
      { app_key: 'pub-1' },
    ]);
    expect(await q("SELECT COUNT(*) AS n FROM fc.answer_delivery WHERE source_app_key <> 'pub-1'")).toEqual([
      { n: '0' },
    ]);
    // --no-grant-mix: every grant active and at its rows' version.
    expect(await q('SELECT COUNT(*) AS n FROM fc.form_consumer_grant WHERE push_allowed = 0 OR revoked = 1')).toEqual([
      { n: '0' },
    ]);
    expect(
      await q(
        'SELECT COUNT(*) AS n FROM fc.answer_delivery d JOIN fc.form_consumer_grant g ON g.form_uuid = d.form_uuid AND g.consumer_school_id = d.consumer_school_id AND g.consumer_app_key = d.consumer_app_key WHERE g.grant_version <> d.grant_version',
      ),
    ).toEqual([{ n: '0' }]);
  });

  test('--snapshot-bytes grows every snapshot to that size, hashes still recompute', async () => {
    expect((await seed(['--answers', '20', '--consumers', '2', '--snapshot-bytes', '2048', '--replace'])).code).toBe(0);
    const sizes = await q<{ b: string; n: string }>(
      'SELECT OCTET_LENGTH(snapshot_json) AS b, COUNT(*) AS n FROM fc.answer_delivery GROUP BY b',
    );
    expect(sizes.map((s) => [Number(s.b), Number(s.n)])).toEqual([[2048, 40]]);
    for (const d of await deliveries())
      expect(canonicalize(d.snapshot_json).ok && canonicalize(d.snapshot_json)).toMatchObject({ hash: d.content_hash });
  });

  test('seeds 20,000 outbox rows in a few seconds', async () => {
    const started = Date.now();
    const r = await seed(['--answers', '5000', '--consumers', '4', '--replace']);
    const seconds = (Date.now() - started) / 1000;
    expect(r.code).toBe(0);
    expect(await count('answer_delivery')).toBe(20_000);
    expect(seconds).toBeLessThan(15);
  });

  const BAD_INPUT = [
    '--answers -1',
    '--answers abc',
    '--answers 1.5',
    '--schools 0',
    '--snapshot-bytes big',
    '--consumers 3 --consumer-keys a,b',
    '--consumer-keys a.b,c',
    '--consumer-keys a,a',
    '--consumer-keys a,100021',
  ];
  test.each(BAD_INPUT.map((line) => [line.split(' ')]))(
    'bad input %j: exit 2, one line, database unchanged',
    async (args) => {
      const before = await checksumTables(dbs.admin, dbs.fcName);
      const r = await seed([...args, '--replace']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
      expect(r.stdout).toBe('');
      expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(before);
    },
  );
});
