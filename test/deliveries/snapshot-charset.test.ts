/**
 * Issue 20: send reads `snapshot_json` as bytes. `CAST(… AS BINARY)` alone gives the column's own
 * bytes, UTF-8 only for a utf8mb4/utf8mb3 column; the seed does not fix the charset of FC's
 * `answer_delivery`, so the claim converts to utf8mb4 first: a latin1 column checks as the string
 * read (converted by the server to the utf8mb4 connection) did.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/lib/canon/index.js';
import { checkSnapshot } from '../../src/lib/deliveries/envelope.js';
import { sendSql } from '../../src/lib/deliveries/send/sql.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import { snapshotOf } from '../helpers/deliveries.js';

let dbs: TestDatabases;
const snapshot = snapshotOf(5, { values: { name: 'José', score: 1 } });
const hash = (canonicalize(snapshot) as { hash: string }).hash;
const MANY = 3000;
const manySnapshot = (i: number): string =>
  snapshotOf(i + 1, { values: { name: `名${i}🙂`, pad: 'p'.repeat(i % 300) } });
const manyHash = (i: number): string => (canonicalize(manySnapshot(i)) as { hash: string }).hash;

beforeAll(async () => {
  dbs = await freshDatabases('rv');
  const ddl = /CREATE TABLE IF NOT EXISTS answer_delivery \([\s\S]*?\) ENGINE=InnoDB[^\n]*/.exec(
    readFileSync('sql/fc.sql', 'utf8'),
  )?.[0];
  if (!ddl) throw new Error('no answer_delivery DDL in sql/fc.sql');
  await dbs.admin.query(`USE \`${dbs.fcName}\``);
  await dbs.admin.query(
    ddl.replace(/snapshot_json\s+LONGTEXT\s+NOT NULL/, 'snapshot_json LONGTEXT CHARACTER SET latin1 NOT NULL'),
  );
  // the schema's own utf8mb4 table, in the other database, many rows read in one result
  await dbs.admin.query(`USE \`${dbs.shName}\``);
  await dbs.admin.query(ddl);
  const rows = Array.from({ length: MANY }, (_, i) => [`e${i}`, manyHash(i), manySnapshot(i)]);
  await dbs.admin.query(
    'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, create_time) ' +
      "SELECT v.e, 'updated', '100021', '100018', 5, 1, 'f', 1, v.e, 1, v.h, NOW(), v.s, NOW() FROM (" +
      rows.map(() => 'SELECT ? AS e, ? AS h, ? AS s').join(' UNION ALL ') +
      ') v',
    rows.flat(),
  );
  await dbs.admin.query(`USE \`${dbs.fcName}\``);
  await dbs.admin.query(
    "INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, create_time) VALUES ('e1', 'updated', '100021', '100018', 5, 1, 'f', 1, 'a', 1, ?, NOW(), ?, NOW())",
    [hash, snapshot],
  );
}, 60_000);
afterAll(async () => dbs?.drop());

describe('send reads a snapshot from a latin1 column', () => {
  it('the text stored is what was written (the string read still works)', async () => {
    const [rows] = await dbs.admin.query('SELECT snapshot_json FROM answer_delivery');
    expect((rows as Array<{ snapshot_json: string }>)[0]?.snapshot_json).toBe(snapshot);
  });
  it('the bytes send reads are UTF-8 and pass the check (CAST AS BINARY alone would give latin1 bytes: INVALID_UTF8)', async () => {
    const { sql, params } = sendSql.peekDue('0', 10);
    const [rows] = await dbs.admin.query(sql, params);
    const row = (rows as DeliveryRow[])[0] as DeliveryRow;
    expect(checkSnapshot(row.snapshot_json, hash, { appKey: '100018', schoolId: '5' })).toEqual({ ok: true });
  });
});

describe("send reads many snapshots as Buffers in one result (utf8mb4, the schema's table)", () => {
  it("every Buffer still holds its own row's bytes after the whole result is read, and checks", async () => {
    const { sql, params } = sendSql.peekDue('0', MANY);
    const [rows] = await dbs.admin.query(
      sql.replace('FROM answer_delivery', `FROM \`${dbs.shName}\`.answer_delivery`),
      params,
    );
    const list = rows as DeliveryRow[];
    expect(list).toHaveLength(MANY);
    for (const row of list) {
      const i = Number(String(row.event_id).slice(1));
      expect(Buffer.isBuffer(row.snapshot_json)).toBe(true);
      expect((row.snapshot_json as Buffer).equals(Buffer.from(manySnapshot(i)))).toBe(true);
      expect(checkSnapshot(row.snapshot_json, manyHash(i), { appKey: '100018', schoolId: '5' })).toEqual({ ok: true });
    }
  });
});
