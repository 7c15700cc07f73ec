/**
 * `fcctl status`'s own statements, pinned to their indexes (issue 29 §2): on an outbox of 100,000
 * BROKER_ACCEPTED rows (one a minute back from NOW) and a few open ones, 50,000 DONE apply commands
 * and 30,000 reconcile tasks, each is EXPLAINed and ANALYZEd exactly as sql.ts builds it. No
 * statement reads the history: the open states, the last hour's accepted rows, one state's reasons,
 * one run's pairs; only `--exact-counts` reads one index whole.
 */
import { planAccesses } from '../helpers/plans.js';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect } from 'vitest';
import type { Statement } from '../../src/lib/db/statement.js';
import { statusSql } from '../../src/lib/status/sql.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'statusplan', init: 'all' });
const N = 50_000;
const NOW = '2026-12-02 01:00:00';

describe('status: indexed counts and bounded lists (real MariaDB)', () => {
  let fc: mysql.Connection;
  let sh: mysql.Connection;
  const access = async (conn: mysql.Connection, q: Statement, table: string) => {
    const plan = async (how: 'EXPLAIN' | 'ANALYZE') =>
      (await planAccesses(conn, q, how)).filter((a) => a.table_name === table);
    const e = await plan('EXPLAIN');
    const a = await plan('ANALYZE');
    expect(e).toHaveLength(1);
    return {
      type: e[0]!.access_type,
      key: e[0]!.key,
      indexOnly: e[0]!.using_index === true,
      read: Number(a[0]?.r_rows ?? 0),
    };
  };

  test.beforeAll(async ({ dbs }) => {
    const opts = { dateStrings: true, supportBigNumbers: true, bigNumberStrings: true } as const;
    fc = await mysql.createConnection({ uri: dbs.fcUrl, ...opts });
    sh = await mysql.createConnection({ uri: dbs.shUrl, ...opts });
    // 2N accepted rows, and 40 open ones (PENDING, FAILED with a claim, DEAD)
    await fc.query(
      'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
        'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, last_error, claim_owner, claim_expires_at, create_time, update_time) ' +
        "SELECT UUID(), 'created', 'p', CONCAT('k', seq % 2), 1 + seq % 100, 1, UUID(), 1, UUID(), 1, REPEAT('0', 64), NOW(), '{}', " +
        "ELT(1 + (seq < 40) * (1 + seq % 3), 'BROKER_ACCEPTED', 'PENDING', 'FAILED', 'DEAD'), IF(seq < 40, 'NACK: x', NULL), " +
        `IF(seq < 40, CONCAT('h:', seq, ':ab'), NULL), IF(seq < 40, ? + INTERVAL 1 HOUR, NULL), ?, ? - INTERVAL seq MINUTE FROM seq_0_to_${2 * N}`,
      [NOW, NOW, NOW],
    );
    await sh.query(
      'INSERT INTO flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, state, last_error, create_time, update_time) ' +
        "SELECT 'T', seq, 'a', 1, 'g', CONCAT('t', seq), ELT(1 + (seq < 30) * (1 + seq % 3), 'DONE', 'UNKNOWN', 'FAILED', 'DEAD'), " +
        `IF(seq < 30, 'LOOKUP_TIMEOUT: x', NULL), ?, ? - INTERVAL seq MINUTE FROM seq_0_to_${N}`,
      [NOW, NOW],
    );
    // 60 nights of 500 pairs
    await sh.query(
      "INSERT INTO fcctl_reconcile_task (run_id, sch_id, form_uuid, state, result_json, create_time) SELECT CONCAT('run-', seq DIV 500), 1 + seq % 100, UUID(), 'DONE', '{\"differences\":1}', NOW() FROM seq_0_to_29999",
    );
    await sh.query(
      "INSERT INTO fcctl_reconcile_join (run_id, joined_at) SELECT CONCAT('run-', seq), NOW() - INTERVAL 60 - seq DAY FROM seq_0_to_59",
    );
    await fc.query('ANALYZE TABLE answer_delivery');
    for (const t of ['flow_apply_command', 'fcctl_reconcile_task', 'fcctl_reconcile_join'])
      await sh.query(`ANALYZE TABLE ${t}`);
  }, 300_000);
  afterAll(async () => {
    await fc?.end();
    await sh?.end();
  });

  test('outbox: the open states and the accepted windows read only their rows; reasons a range of idx_delivery_state_error', async () => {
    // every state but the history's: ranges reading the 40 open rows, none of the 100,000 accepted
    const open = await access(
      fc,
      statusSql.outboxOpenStates(['PENDING', 'FAILED', 'DEAD', 'GRANT_REVOKED']),
      'answer_delivery',
    );
    expect(open).toMatchObject({ type: 'range', indexOnly: true });
    expect(open.read).toBeLessThan(100);
    // the last hour of BROKER_ACCEPTED (one row a minute in the seed): idx_delivery_state_time's range
    const recent = await access(fc, statusSql.outboxAccepted(NOW), 'answer_delivery');
    expect(recent).toMatchObject({ type: 'range', key: 'idx_delivery_state_time', indexOnly: true });
    expect(recent.read).toBeLessThanOrEqual(70);
    const [[windows]] = (await fc.query(
      statusSql.outboxAccepted(NOW).sql,
      statusSql.outboxAccepted(NOW).params,
    )) as unknown as [Array<Record<string, unknown>>];
    // seq 40..60 are accepted rows at NOW - seq minutes within the hour; seq 40 is 40 minutes old
    expect({ last5m: Number(windows!['last_5m']), last1h: Number(windows!['last_1h']) }).toEqual({
      last5m: 0,
      last1h: 21,
    });
    // --exact-counts: one pass of an index alone
    expect(await access(fc, statusSql.outboxAllStates(), 'answer_delivery')).toMatchObject({ indexOnly: true });
    const r = await access(fc, statusSql.outboxReasons('FAILED'), 'answer_delivery');
    expect(r).toMatchObject({ type: 'ref', key: 'idx_delivery_state_error', indexOnly: true });
    expect(r.read).toBeLessThan(100);
  });

  test('outbox: the oldest due and the live claims read only the open rows (idx_delivery_due)', async () => {
    for (const q of [statusSql.outboxOldestDue(NOW), statusSql.outboxClaims(NOW)]) {
      const a = await access(fc, q, q === undefined ? '' : q.sql.includes(' d ') ? 'd' : 'answer_delivery');
      expect(a).toMatchObject({ type: 'range', key: 'idx_delivery_due' });
      expect(a.read).toBeLessThan(100);
    }
  });

  test('apply commands: open states and DONE windows read only their rows; oldest due and claims the open range', async () => {
    const open = await access(
      sh,
      statusSql.applyOpenStates(['PENDING', 'UNKNOWN', 'FAILED', 'DEAD']),
      'flow_apply_command',
    );
    expect(open).toMatchObject({ type: 'range', indexOnly: true });
    expect(open.read).toBeLessThan(100);
    const recent = await access(sh, statusSql.applyDone(NOW), 'flow_apply_command');
    expect(recent).toMatchObject({ type: 'range', key: 'idx_apply_command_state_time', indexOnly: true });
    expect(recent.read).toBeLessThanOrEqual(70);
    const r = await access(sh, statusSql.applyReasons('DEAD'), 'flow_apply_command');
    expect(r).toMatchObject({ type: 'ref', key: 'idx_apply_command_state_error', indexOnly: true });
    for (const q of [
      statusSql.applyOldestDue(NOW, 600),
      statusSql.applyClaims(NOW),
      statusSql.applyDueAppKeys(NOW, 600, 200),
    ]) {
      const a = await access(sh, q, 'flow_apply_command');
      expect(a).toMatchObject({ type: 'range', key: 'idx_apply_command_due' });
      expect(a.read).toBeLessThan(100);
    }
  });

  test("reconcile: the newest run from the task table's primary key, its pairs by uk_reconcile_task_pair's prefix", async () => {
    // the newest run: one entry of the primary key read backwards, none of the 30,000 others
    const latest = await access(sh, statusSql.latestRun(), 'fcctl_reconcile_task');
    expect(latest).toMatchObject({ key: 'PRIMARY' });
    expect(latest.read).toBeLessThanOrEqual(1);
    const counts = await access(sh, statusSql.runCounts('run-3'), 'fcctl_reconcile_task');
    expect(counts).toMatchObject({ type: 'ref', key: 'uk_reconcile_task_pair' });
    expect(counts.read).toBeLessThanOrEqual(500);
    // the live claims: the CLAIMED entries of idx_reconcile_task_open (none of the 30,000 DONE read)
    const claims = await access(sh, statusSql.runClaims('run-3'), 'fcctl_reconcile_task');
    expect(claims).toMatchObject({ type: 'ref', key: 'idx_reconcile_task_open' });
    expect(claims.read).toBe(0);
  });

  test("the tables' estimated rows: the optimizer's, planned never run, within 10 % of the real count (not information_schema's, cached 24 h on MySQL 8)", async () => {
    for (const [conn, q, table, real] of [
      [fc, statusSql.outboxTableRows(), 'answer_delivery', 2 * N + 1],
      [sh, statusSql.applyTableRows(), 'flow_apply_command', N + 1],
    ] as const) {
      expect(q.sql).toBe(`EXPLAIN SELECT * FROM ${table}`);
      const [rows] = await conn.query(q.sql, q.params);
      const estimate = Number((rows as Array<Record<string, unknown>>)[0]!['rows']);
      expect(Math.abs(estimate - real) / real).toBeLessThan(0.1);
      // the fallback for a plan without a `rows` column (MySQL 8.0.32+, explain_format=JSON): the same column name
      const cached = table === 'answer_delivery' ? statusSql.outboxCachedTableRows() : statusSql.applyCachedTableRows();
      const [viaSchema] = await conn.query(cached.sql, cached.params);
      const fromSchema = Number((viaSchema as Array<Record<string, unknown>>)[0]!['rows']);
      expect(Math.abs(fromSchema - real) / real).toBeLessThan(0.1);
    }
  });
});
