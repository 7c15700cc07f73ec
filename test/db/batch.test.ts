import { afterAll, describe, expect } from 'vitest';
import { WriteBatcher } from '../../src/lib/db/batch.js';
import { openDb, type Db } from '../../src/lib/db/connect.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'batch' });

describe('Db.batch and WriteBatcher (group commit) on the real MariaDB', () => {
  let dbs: TestDatabases;
  let db: Db;
  const table = (name = 't') => `\`${dbs.fcName}\`.\`${name}\``;

  test.beforeAll(async ({ dbs: services }) => {
    dbs = services;
    await dbs.admin.query(`CREATE TABLE ${table()} (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB`);
    db = await openDb('FC database', dbs.fcUrl);
  });
  afterAll(async () => {
    await db?.close();
  });

  const reset = async (n: number) => {
    await dbs.admin.query(`DELETE FROM ${table()}`);
    for (let i = 1; i <= n; i++) await dbs.admin.query(`INSERT INTO ${table()} VALUES (?, 'old')`, [i]);
  };
  const values = async () =>
    ((await dbs.admin.query(`SELECT id, v FROM ${table()} ORDER BY id`))[0] as Array<{ id: number; v: string }>).map(
      (r) => `${r.id}:${r.v}`,
    );

  const counts = (settled: Array<PromiseSettledResult<number>>) =>
    settled.map((r) =>
      r.status === 'fulfilled' ? r.value : `error: ${String((r.reason as Error).message).slice(0, 15)}`,
    );

  test('returns each statement’s affected rows, in order; quotes in values stay values', async () => {
    await reset(3);
    const settled = await db.batch([
      { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ["x'; DROP TABLE t; --", 1] },
      { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ['y', 99] },
      { sql: `UPDATE ${table()} SET v = ? WHERE id IN (?)`, params: ['z', [2, 3]] },
    ]);
    expect(counts(settled)).toEqual([1, 0, 2]);
    expect(await values()).toEqual(["1:x'; DROP TABLE t; --", '2:z', '3:z']);
  });

  test('each statement is its own autocommit: a failing one fails alone, those before stay, those after still run', async () => {
    await reset(3);
    const settled = await db.batch([
      { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ['changed', 1] },
      { sql: `UPDATE ${table()} SET v = ? WHERE id = ?`, params: ['nothing', 42] },
      { sql: `INSERT INTO ${table()} VALUES (?, ?)`, params: [2, 'duplicate key'] },
      { sql: `UPDATE ${table()} SET v = ? WHERE id IN (?)`, params: ['changed', [2, 3]] },
    ]);
    expect(counts(settled)).toEqual([1, 0, 'error: Duplicate entry', 2]);
    expect(await values()).toEqual(['1:changed', '2:changed', '3:changed']);
  });

  test('no row lock outlives its own statement: another transaction can lock a row the batch wrote while a later one waits', async () => {
    await reset(3);
    const other = await (await import('mysql2/promise')).default.createConnection(dbs.fcUrl);
    await other.query('SET SESSION innodb_lock_wait_timeout = 5');
    await other.beginTransaction();
    await other.query(`UPDATE ${table()} SET v = 'held' WHERE id = 3`);
    const running = db.batch([
      { sql: `UPDATE ${table()} SET v = 'b' WHERE id = 1`, params: [] },
      { sql: `UPDATE ${table()} SET v = 'b' WHERE id = 3`, params: [] },
    ]);
    await new Promise((r) => setTimeout(r, 300));
    // The batch now waits on row 3; row 1 was already committed and is free for others.
    await other.query(`UPDATE ${table()} SET v = 'other' WHERE id = 1`);
    await other.commit();
    expect(counts(await running)).toEqual([1, 1]);
    expect(await values()).toEqual(['1:other', '2:old', '3:b']);
    await other.end();
  });

  test('WriteBatcher: 200 concurrent writes resolve with their own counts in far fewer round trips', async () => {
    await reset(200);
    let batches = 0;
    const counting = { batch: (s: Parameters<Db['batch']>[0]) => ((batches += 1), db.batch(s)) };
    const writer = new WriteBatcher(counting, { maxInFlight: 2, maxBatch: 64 });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        writer.execute(`UPDATE ${table()} SET v = ? WHERE id = ? AND v = 'old'`, [
          `w${i}`,
          i % 2 === 0 ? i + 1 : 1000 + i,
        ]),
      ),
    );
    expect(results.map((r) => r.affectedRows)).toEqual(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? 1 : 0)));
    expect(batches).toBeGreaterThanOrEqual(4); // at most 64 per batch
    expect(batches).toBeLessThan(20);
    const rows = await values();
    expect(rows.filter((r) => r.endsWith(':old'))).toHaveLength(100);
  });

  test('WriteBatcher: a failing write rejects alone; the writes batched with it and later ones go through', async () => {
    await reset(2);
    const writer = new WriteBatcher(db, { maxInFlight: 1, maxBatch: 64 });
    const first = writer.execute(`UPDATE ${table()} SET v = 'a' WHERE id = 1`);
    const good = writer.execute(`UPDATE ${table()} SET v = 'b' WHERE id = 2`);
    const bad = writer.execute(`INSERT INTO ${table()} VALUES (1, 'dup')`);
    expect((await first).affectedRows).toBe(1);
    expect((await good).affectedRows).toBe(1);
    await expect(bad).rejects.toThrow(/Duplicate entry/);
    expect(await values()).toEqual(['1:a', '2:b']);
    expect((await writer.execute(`UPDATE ${table()} SET v = 'c' WHERE id = 2`)).affectedRows).toBe(1);
  });

  test('WriteBatcher: a batch that fails as a whole rejects every write in it, and the writer goes on', async () => {
    let calls = 0;
    const flaky = {
      batch: (s: Parameters<Db['batch']>[0]) => {
        calls += 1;
        if (calls === 1) throw new Error('connection lost');
        return db.batch(s);
      },
    };
    await reset(2);
    const writer = new WriteBatcher(flaky, { maxInFlight: 1, maxBatch: 64 });
    const lost = [writer.execute(`UPDATE ${table()} SET v = 'x' WHERE id = 1`)];
    for (const p of lost) await expect(p).rejects.toThrow('connection lost');
    expect((await writer.execute(`UPDATE ${table()} SET v = 'y' WHERE id = 2`)).affectedRows).toBe(1);
    expect(await values()).toEqual(['1:old', '2:y']);
  });

  test('WriteBatcher lingerMs: writes trickling in within the window share one round trip', async () => {
    await reset(10);
    const sizes: number[] = [];
    const counting = { batch: (st: Parameters<Db['batch']>[0]) => (sizes.push(st.length), db.batch(st)) };
    const writer = new WriteBatcher(counting, { lingerMs: 50 });
    const pending: Array<Promise<{ affectedRows: number }>> = [];
    for (let i = 1; i <= 10; i++) {
      pending.push(writer.execute(`UPDATE ${table()} SET v = 'l' WHERE id = ?`, [i]));
      await new Promise((r) => setTimeout(r, 1));
    }
    expect((await Promise.all(pending)).map((r) => r.affectedRows)).toEqual(Array(10).fill(1));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(10);
    expect(sizes.length).toBeLessThanOrEqual(2);
  });

  test('a batch after close() is refused instead of opening a pool nobody closes', async () => {
    const late = await openDb('FC database', dbs.fcUrl);
    await late.close();
    await expect(
      late.batch([
        { sql: 'SELECT 1', params: [] },
        { sql: 'SELECT 2', params: [] },
      ]),
    ).rejects.toThrow(/closed/);
  });
});
