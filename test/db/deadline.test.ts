import { afterAll, describe, expect } from 'vitest';
import { openDb, type Db } from '../../src/lib/db/connect.js';
import { isOutage } from '../../src/lib/db/outage.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'deadline' });

/** The error a promise rejects with, and how long it took. */
async function failure(p: Promise<unknown>): Promise<{ err: Error & { code?: string }; ms: number }> {
  const started = performance.now();
  const err = await p.then(
    () => new Error('resolved'),
    (e: unknown) => e as Error,
  );
  return { err, ms: performance.now() - started };
}

describe('every statement has a deadline (issue 34 §6): a database that stops answering fails as an outage', () => {
  const proxy = new TcpProxy('127.0.0.1', 0);
  let db: Db;
  afterAll(async () => {
    await db?.close(0);
    await proxy.stop();
  });

  test('query, execute, transaction and batch end at the deadline with an outage; connections are dropped, not reused', async ({
    dbs,
  }) => {
    const target = new URL(dbs.fcUrl);
    Object.assign(proxy, { targetHost: target.hostname, targetPort: Number(target.port) });
    await proxy.start();
    db = await openDb('FC database', viaProxy(dbs.fcUrl, proxy.port), { statementTimeoutMs: 1500 });
    // a few connections in the pool, all answering
    await Promise.all([1, 2, 3].map(() => db.query('SELECT SLEEP(0.05)')));
    proxy.freeze();
    // more statements than the pool has connections: with mysql2's own timeout, the connections
    // stay busy after it fires and later statements queue with no deadline at all
    const many = await Promise.all(Array.from({ length: 14 }, () => failure(db.query('SELECT 1'))));
    for (const { err, ms } of many) {
      expect(err.message).toBe('FC database: no answer in 2 s');
      expect(isOutage(err)).toBe(true);
      expect(ms).toBeLessThan(3000);
    }
    const write = await failure(db.execute('DO 1'));
    expect(write.err.code).toBe('PROTOCOL_SEQUENCE_TIMEOUT');
    const tx = await failure(db.transaction(async (conn) => conn.query('SELECT 1')));
    expect(isOutage(tx.err)).toBe(true);
    expect(tx.ms).toBeLessThan(3000);
    const batch = await failure(
      db.batch([
        { sql: 'DO ?', params: [1] },
        { sql: 'DO ?', params: [2] },
      ]),
    );
    expect(isOutage(batch.err)).toBe(true);
    expect(batch.ms).toBeLessThan(3000);
    // answering again: the pool works with fresh connections (none of the stalled ones is reused)
    proxy.thaw();
    expect(await db.query<{ one: number }>('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await db.transaction(async (conn) => conn.query('SELECT 1'));
    // and a close with statements stalled does not wait for them
    proxy.freeze();
    const pending = failure(db.query('SELECT 1'));
    const started = performance.now();
    await db.close(200);
    expect(performance.now() - started).toBeLessThan(1500);
    expect((await pending).ms).toBeLessThan(3000);
  });
});
