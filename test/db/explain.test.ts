/**
 * The claim and scan queries' plans, pinned (issue 20): on a table with a long history (200,000 BROKER_ACCEPTED
 * and 5,000 DEAD deliveries; 200,000 DONE apply commands) next to a small backlog, each statement is
 * EXPLAINed exactly as the code builds it, and ANALYZEd (run, with the rows it really read). A schema
 * change that drops or reshapes an index turns one of these into a scan, and this file fails.
 */
import { planAccesses } from '../helpers/plans.js';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect } from 'vitest';
import {
  claimSelect,
  claimStartSelect,
  otherAppKeySelect,
  peekSelect,
} from '../../src/lib/apply-command/resolve-unknown/sql.js';
import { applyScanSql } from '../../src/lib/apply-command/scan/sql.js';
import { scanSql } from '../../src/lib/deliveries/scan/sql.js';
import { sendSql } from '../../src/lib/deliveries/send/sql.js';
import type { Statement } from '../../src/lib/db/statement.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'explain', init: 'all' });

const HISTORY = 200_000;
const DEAD = HISTORY / 40;
const PENDING = 2_000;
const FAILED_DUE = 300;
const FAILED_LATER = 300;
const OPEN = PENDING + FAILED_DUE + FAILED_LATER;
const LIMIT = 500;

describe('claim plans on a table with history (real MariaDB)', () => {
  let fc: mysql.Connection;
  let sh: mysql.Connection;
  const plan = planAccesses;
  /** Every access of `table` (one per branch of a UNION or subquery), EXPLAIN's estimate and ANALYZE's real count of rows read. */
  const accessesOf = async (conn: mysql.Connection, q: Statement, table: string) => {
    const e = (await plan(conn, q, 'EXPLAIN')).filter((a) => a.table_name === table);
    const a = (await plan(conn, q, 'ANALYZE')).filter((x) => x.table_name === table);
    expect(a.length).toBe(e.length);
    return e.map((x, i) => ({ type: x.access_type, key: x.key, rows: Number(x.rows), read: Number(a[i]!.r_rows) }));
  };
  /** The one access of `table`. */
  const access = async (conn: mysql.Connection, q: Statement, table: string) => {
    const all = await accessesOf(conn, q, table);
    expect(all).toHaveLength(1);
    return all[0]!;
  };

  test.beforeAll(async ({ dbs }) => {
    const opts = { dateStrings: true, supportBigNumbers: true, bigNumberStrings: true } as const;
    fc = await mysql.createConnection({ uri: dbs.fcUrl, ...opts });
    sh = await mysql.createConnection({ uri: dbs.shUrl, ...opts });
    // History first (the low ids, as in production), then the backlog. One INSERT … SELECT from
    // the Sequence engine's `seq_1_to_N`.
    const h = HISTORY,
      d = h + DEAD,
      p = d + PENDING,
      f = p + FAILED_DUE,
      n = f + FAILED_LATER;
    await fc.query(
      'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
        'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, retry_count, next_retry_at, last_error, broker_accepted_at, create_time, update_time) ' +
        "SELECT UUID(), 'UPSERT', '100021', 'k', 1, 1, '00000000-0000-0000-0000-000000000000', 1, LPAD(seq, 36, '0'), 1, REPEAT('0', 64), " +
        "NOW() - INTERVAL 30 DAY, '{}', " +
        `CASE WHEN seq <= ${h} THEN 'BROKER_ACCEPTED' WHEN seq <= ${d} THEN 'DEAD' WHEN seq <= ${p} THEN 'PENDING' ELSE 'FAILED' END, ` +
        `CASE WHEN seq > ${p} THEN 1 ELSE 0 END, ` +
        `CASE WHEN seq > ${p} AND seq <= ${f} THEN NOW() - INTERVAL 1 MINUTE WHEN seq > ${f} THEN NOW() + INTERVAL 1 HOUR END, ` +
        `CASE WHEN seq > ${h} AND seq <= ${d} THEN 'NACK: x' WHEN seq > ${p} THEN 'NO_ROUTE: y' END, ` +
        // update_time as fcctl's writes leave it (every one sets it); the PENDING rows were never written
        `CASE WHEN seq <= ${h} THEN NOW() - INTERVAL 30 DAY END, NOW() - INTERVAL 30 DAY, ` +
        `CASE WHEN seq <= ${d} OR seq > ${p} THEN NOW() - INTERVAL 30 DAY + INTERVAL seq SECOND END FROM seq_1_to_${n}`,
    );
    await sh.query(
      'INSERT INTO flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, next_retry_at, create_time) ' +
        "SELECT 'T', seq, 'app', 1, 'g', CONCAT('t', seq), 1, " +
        `CASE WHEN seq <= ${h} THEN 'DONE' WHEN seq <= ${d} THEN 'DEAD' WHEN seq <= ${d + 1000} THEN 'UNKNOWN' WHEN seq <= ${d + 1600} THEN 'FAILED' ELSE 'PENDING' END, ` +
        `CASE WHEN seq > ${d + 1000} AND seq <= ${d + 1300} THEN NOW() - INTERVAL 1 MINUTE WHEN seq > ${d + 1300} AND seq <= ${d + 1600} THEN NOW() + INTERVAL 1 HOUR END, ` +
        `CASE WHEN seq > ${d + 1800} THEN NOW() ELSE NOW() - INTERVAL 30 DAY END FROM seq_1_to_${d + 2000}`,
    );
    await fc.query('ANALYZE TABLE answer_delivery');
    await sh.query('ANALYZE TABLE flow_apply_command');
  }, 120_000);
  afterAll(async () => {
    await fc?.end();
    await sh?.end();
  });

  describe('deliveries send', () => {
    test('the claim is a range on idx_delivery_due over the due rows only, never the history', async () => {
      const c = await access(fc, sendSql.claim(LIMIT), 'answer_delivery');
      expect(c).toMatchObject({ type: 'range', key: 'idx_delivery_due' });
      // the estimate covers the due backlog (PENDING + due FAILED), not the 205,000 old rows
      expect(c.rows).toBeLessThanOrEqual(2 * (PENDING + FAILED_DUE));
      // and reading stops at the LIMIT: nothing under another lease here to skip
      expect(c.read).toBeLessThanOrEqual(LIMIT);
    });

    test('the claim takes due retries first (FAILED sorts before PENDING in the index), then PENDING by id', async () => {
      const q = sendSql.claim(FAILED_DUE + PENDING);
      const [rows] = await fc.query(q.sql.replace('FOR UPDATE SKIP LOCKED', ''), q.params);
      const got = rows as Array<{ id: string; state: string }>;
      expect(got.length).toBe(FAILED_DUE + PENDING);
      expect(got.slice(0, FAILED_DUE).every((r) => r.state === 'FAILED')).toBe(true);
      const pending = got.slice(FAILED_DUE);
      expect(pending.every((r) => r.state === 'PENDING')).toBe(true);
      expect(pending.map((r) => BigInt(r.id))).toEqual(
        pending.map((r) => BigInt(r.id)).sort((a, b) => (a < b ? -1 : 1)),
      );
    });

    test('countDue and the dry run peek read the due backlog through the same index', async () => {
      const count = await access(fc, sendSql.countDue(100_000), 'answer_delivery');
      expect(count).toMatchObject({ type: 'range', key: 'idx_delivery_due' });
      expect(count.read).toBeLessThanOrEqual(PENDING + FAILED_DUE);
      const peek = await access(fc, sendSql.peekDue('0', LIMIT), 'answer_delivery');
      expect(peek).toMatchObject({ type: 'range', key: 'idx_delivery_due' });
      expect(peek.read).toBeLessThanOrEqual(PENDING + FAILED_DUE);
    });

    test("the follow relay's backlog gauges (held rows left out through each row's grant) read the due backlog through the same index", async () => {
      // the statements name the table `d`: the capped count, and the oldest due over every due row
      for (const q of [sendSql.backlog(10_000), sendSql.oldestDue(null)]) {
        const plan = await access(fc, q, 'd');
        expect(plan, q.sql).toMatchObject({ type: 'range', key: 'idx_delivery_due' });
        expect(plan.read, q.sql).toBeLessThanOrEqual(PENDING + FAILED_DUE);
      }
    });
  });

  describe('deliveries scan', () => {
    test('the open-row report reads only PENDING and FAILED rows', async () => {
      const [[{ now }]] = (await fc.query('SELECT NOW() AS now')) as unknown as [[{ now: string }]];
      // the statement names the table `d`
      const o = await access(fc, scanSql.open(now), 'd');
      expect(o).toMatchObject({ type: 'range', key: 'idx_delivery_due' });
      expect(o.read).toBeLessThanOrEqual(OPEN);
    });

    // Exact counts read every entry of one index, never a row: the one scan statement that grows
    // with the history (issue 20, bench/scan.mjs). It must not become a table scan.
    test('the state counts read one index, entries only (it counts the history, by design)', async () => {
      const s = await access(fc, scanSql.states(), 'answer_delivery');
      expect(s).toMatchObject({ type: 'index', key: 'idx_delivery_due' });
      const [rows] = await fc.query(scanSql.states().sql);
      const n = Object.fromEntries(
        (rows as Array<{ state: string; n: string | number }>).map((r) => [r.state, Number(r.n)]),
      );
      expect(n).toEqual({ BROKER_ACCEPTED: HISTORY, DEAD, PENDING, FAILED: FAILED_DUE + FAILED_LATER });
    });

    test('reasons read idx_delivery_state_error alone, FAILED and DEAD entries only (bounded by DEAD, which does grow, never the history)', async () => {
      const r = await access(fc, scanSql.reasons(), 'answer_delivery');
      expect(r).toMatchObject({ type: 'range', key: 'idx_delivery_state_error' });
      expect(r.read).toBeLessThanOrEqual(DEAD + FAILED_DUE + FAILED_LATER);
    });

    // Issue 20: ORDER BY COALESCE(update_time, create_time) read and sorted every FAILED/DEAD row.
    test('the newest FAILED/DEAD rows are sorted from idx_delivery_state_error alone; only the listed rows are read', async () => {
      const ids = await access(fc, scanSql.newestFailed(20), 'answer_delivery');
      expect(ids).toMatchObject({ type: 'range', key: 'idx_delivery_state_error' });
      expect(ids.read).toBeLessThanOrEqual(DEAD + FAILED_DUE + FAILED_LATER);
      const rows = await access(fc, scanSql.newestFailed(20), 'd');
      expect(rows).toMatchObject({ type: 'eq_ref', key: 'PRIMARY' });
    });

    test('the newest rows come in the order of the plain ORDER BY COALESCE(update_time, create_time) DESC, id DESC', async () => {
      // two DEAD rows never written since their insert (no update_time: their create_time counts), and a tie on update_time
      await fc.query(
        'UPDATE answer_delivery SET update_time = NULL, create_time = NOW() + INTERVAL 1 DAY WHERE id IN (?, ?)',
        [HISTORY + 1, HISTORY + 2],
      );
      const [[{ newest }]] = (await fc.query(
        "SELECT MAX(update_time) AS newest FROM answer_delivery WHERE state IN ('FAILED', 'DEAD')",
      )) as unknown as [[{ newest: string }]];
      await fc.query('UPDATE answer_delivery SET update_time = ? WHERE id IN (?, ?)', [
        newest,
        HISTORY + 3,
        HISTORY + 10,
      ]);
      try {
        for (const limit of [1, 3, 20, 400]) {
          const [got] = await fc.query(scanSql.newestFailed(limit).sql, scanSql.newestFailed(limit).params);
          const [want] = await fc.query(
            "SELECT event_id FROM answer_delivery WHERE state IN ('FAILED', 'DEAD') ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ?",
            [limit],
          );
          expect((got as Array<{ event_id: string }>).map((r) => r.event_id)).toEqual(
            (want as Array<{ event_id: string }>).map((r) => r.event_id),
          );
        }
      } finally {
        await fc.query(
          'UPDATE answer_delivery SET update_time = NOW() - INTERVAL 30 DAY + INTERVAL id SECOND, create_time = NOW() - INTERVAL 30 DAY WHERE id IN (?, ?, ?, ?)',
          [HISTORY + 1, HISTORY + 2, HISTORY + 3, HISTORY + 10],
        );
      }
    });
  });

  // Issue 20: with 2,000,000 DONE rows, reasons and the newest DEAD rows read each DEAD row
  // (0.7 s apiece); now idx_apply_command_state_error alone. The state counts read one index.
  describe('apply-command scan', () => {
    test('reasons and the newest DEAD rows read idx_apply_command_state_error alone, FAILED/DEAD entries only', async () => {
      const r = await access(sh, applyScanSql.reasons(), 'flow_apply_command');
      expect(r).toMatchObject({ type: 'range', key: 'idx_apply_command_state_error' });
      expect(r.read).toBeLessThanOrEqual(DEAD + 600);
      const ids = await access(sh, applyScanSql.newestDead(20), 'flow_apply_command');
      expect(ids).toMatchObject({ key: 'idx_apply_command_state_error' });
      expect(['ref', 'range']).toContain(ids.type);
      expect(ids.read).toBeLessThanOrEqual(DEAD);
      expect(await access(sh, applyScanSql.newestDead(20), 'c')).toMatchObject({ type: 'eq_ref', key: 'PRIMARY' });
    });

    test('the newest DEAD rows come in the order of the plain ORDER BY COALESCE(update_time, create_time) DESC, id DESC', async () => {
      const [got] = await sh.query(applyScanSql.newestDead(30).sql, applyScanSql.newestDead(30).params);
      const [want] = await sh.query(
        "SELECT id FROM flow_apply_command WHERE state = 'DEAD' ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT 30",
      );
      expect((got as Array<{ id: string }>).map((r) => r.id)).toEqual((want as Array<{ id: string }>).map((r) => r.id));
      expect(got).toHaveLength(30);
    });

    test('the state counts read one index, entries only', async () => {
      expect(await access(sh, applyScanSql.states(), 'flow_apply_command')).toMatchObject({ type: 'index' });
    });
  });

  describe('apply-command resolve-unknown', () => {
    test('the claim start reads only the backlog entries of idx_apply_command_due', async () => {
      const s = await access(sh, claimStartSelect('app', 600), 'flow_apply_command');
      expect(s).toMatchObject({ type: 'range', key: 'idx_apply_command_due' });
      expect(s.read).toBeLessThanOrEqual(2_000);
    });

    test('from the claim start, the claim walks the primary key past the backlog only', async () => {
      const [[{ id }]] = (await sh.query(
        claimStartSelect('app', 600).sql,
        claimStartSelect('app', 600).params,
      )) as unknown as [[{ id: string }]];
      const start = String(BigInt(id) - 1n);
      for (const q of [claimSelect('app', 600, start, LIMIT), peekSelect('app', 600, start, LIMIT)]) {
        const c = await access(sh, q, 'flow_apply_command');
        expect(c.type).toBe('range');
        expect(['PRIMARY', 'idx_apply_command_due']).toContain(c.key);
        expect(c.read).toBeLessThanOrEqual(2_000);
      }
    });

    // Issue 20: the claim start was the smallest id in ANY open state (another app key's row, a
    // FAILED row whose retry is hours away), and from there the claim (ORDER BY id LIMIT 100)
    // walked the primary key through every DONE row after it; now it is the smallest claimable id.
    test('one old open row of another app key does not make the claim read the history', async () => {
      await sh.query("UPDATE flow_apply_command SET state = 'UNKNOWN', apply_app_key = 'other' WHERE id = 1");
      try {
        const [[{ id }]] = (await sh.query(
          claimStartSelect('app', 600).sql,
          claimStartSelect('app', 600).params,
        )) as unknown as [[{ id: string }]];
        const c = await access(sh, claimSelect('app', 600, String(BigInt(id) - 1n), 100), 'flow_apply_command');
        expect(c.read).toBeLessThanOrEqual(2_000);
      } finally {
        await sh.query("UPDATE flow_apply_command SET state = 'DONE', apply_app_key = 'app' WHERE id = 1");
      }
    });

    test("the count of other app keys' rows reads the backlog through idx_apply_command_due", async () => {
      const c = await access(sh, otherAppKeySelect('app', 600), 'flow_apply_command');
      expect(c).toMatchObject({ type: 'range', key: 'idx_apply_command_due' });
      expect(c.read).toBeLessThanOrEqual(2_000);
    });
  });
});
