import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WriteBatcher } from '../../src/lib/db/batch.js';
import { openDb, type Db } from '../../src/lib/db/connect.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';

describe('Db.batch and WriteBatcher (group commit) on the real MariaDB', () => {
  let dbs: TestDatabases;
  let db: Db;
  const table = (name = 't') => `\`${dbs.fcName}\`.\`${name}\``;

  beforeAll(async () => {
    dbs = await freshDatabases('batch');
    await dbs.admin.query(`CREATE TABLE ${table()} (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB`);
    db = await openDb('FC database', dbs.fcUrl);
  });
  afterAll(async () => {
    await db?.close();
    await dbs?.drop();
  });

  const reset = async (n: number) => {
    await dbs.admin.query(`DELETE FROM ${table()}`);
    for (let i = 1; i <= n; i++) await dbs.admin.query(`INSERT INTO ${table()} VALUES (?, 'old')`, [i]);
  };
  const values = async () => ((await dbs.admin.query(`SELECT id, v FROM ${table()} ORDER BY id`))[0] as Array<{ id: number; v: string }>).map((r) => `${r.id}:${r.v}`);

  it('returns each statement’s affected rows, in order; quotes in values stay values', async () => {
    await reset(3);
    const counts = await db.batch([
      { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ["x'; DROP TABLE t; --", 1] },
      { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ['y', 99] },
      { sql: `UPDATE ${table()} SET v = ? WHERE id IN (?)`, params: ['z', [2, 3]] },
    ]);
    expect(counts).toEqual([1, 0, 2]);
    expect(await values()).toEqual(["1:x'; DROP TABLE t; --", '2:z', '3:z']);
  });

  it('is all or nothing: a failing statement undoes the ones before it and the batch rejects', async () => {
    await reset(2);
    await expect(
      db.batch([
        { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ['changed', 1] },
        { sql: `INSERT INTO ${table()} VALUES (?, ?)`, params: [2, 'duplicate key'] },
        { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ['changed', 2] },
      ]),
    ).rejects.toThrow(/Duplicate entry/);
    expect(await values()).toEqual(['1:old', '2:old']);
    // The connection is usable afterwards (the open transaction was rolled back, not leaked).
    expect(await db.batch([{ sql: `UPDATE ${table()} SET v = 'ok' WHERE id = 1`, params: [] }, { sql: `UPDATE ${table()} SET v = 'ok' WHERE id = 2`, params: [] }])).toEqual([1, 1]);
  });

  it('WriteBatcher: 200 concurrent writes resolve with their own counts in far fewer round trips', async () => {
    await reset(200);
    let batches = 0;
    const counting = { batch: (s: Parameters<Db['batch']>[0]) => ((batches += 1), db.batch(s)) };
    const writer = new WriteBatcher(counting, 2, 64);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => writer.execute(`UPDATE ${table()} SET v = ? WHERE id = ? AND v = 'old'`, [`w${i}`, i % 2 === 0 ? i + 1 : 1000 + i])),
    );
    expect(results.map((r) => r.affectedRows)).toEqual(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? 1 : 0)));
    expect(batches).toBeGreaterThanOrEqual(4); // at most 64 per batch
    expect(batches).toBeLessThan(20);
    const rows = await values();
    expect(rows.filter((r) => r.endsWith(':old'))).toHaveLength(100);
  });

  it('WriteBatcher: a failed batch rejects every write in it, and later writes still go through', async () => {
    await reset(2);
    const writer = new WriteBatcher(db, 1, 64);
    const first = writer.execute(`UPDATE ${table()} SET v = 'a' WHERE id = 1`);
    const bad = [writer.execute(`UPDATE ${table()} SET v = 'b' WHERE id = 2`), writer.execute(`INSERT INTO ${table()} VALUES (1, 'dup')`)];
    expect((await first).affectedRows).toBe(1);
    for (const p of bad) await expect(p).rejects.toThrow(/Duplicate entry/);
    expect(await values()).toEqual(['1:a', '2:old']);
    expect((await writer.execute(`UPDATE ${table()} SET v = 'c' WHERE id = 2`)).affectedRows).toBe(1);
  });
});
