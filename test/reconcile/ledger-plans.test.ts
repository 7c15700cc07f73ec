/**
 * The drift ledger's statements pinned to their indexes (issue 30 §2): on a ledger of 60 nights ×
 * 500 pairs (and their 30,000 tasks), each statement is EXPLAINed (and the reads ANALYZEd) exactly
 * as ledger/sql.ts builds it. The nights come from a loose scan of idx_reconcile_ledger_night (one entry per night), a night's pairs
 * and totals from uk_reconcile_ledger_pair's prefix, a night's start from one row.
 */
import mysql from 'mysql2/promise';
import { afterAll, describe, expect } from 'vitest';
import type { Statement } from '../../src/lib/db/statement.js';
import { ledgerSql } from '../../src/lib/reconcile/ledger/sql.js';
import { planAccesses } from '../helpers/plans.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'ledgerplan', init: 'all' });
const NIGHTS = 60;
const PAIRS = 500;

describe('drift ledger: every statement indexed (real MariaDB)', () => {
  let sh: mysql.Connection;
  const access = async (q: Statement, table: string, analyze = true) => {
    const plan = async (how: 'EXPLAIN' | 'ANALYZE') =>
      (await planAccesses(sh, q, how)).filter((a) => a.table_name === table);
    const e = await plan('EXPLAIN');
    expect(e).toHaveLength(1);
    const a = analyze ? await plan('ANALYZE') : [];
    return {
      type: e[0]!.access_type,
      key: e[0]!.key,
      indexOnly: e[0]!.using_index === true,
      looseScan: (e[0] as { using_index_for_group_by?: boolean }).using_index_for_group_by === true,
      read: Number(a[0]?.r_rows ?? 0),
    };
  };

  test.beforeAll(async ({ dbs }) => {
    sh = await mysql.createConnection({
      uri: dbs.shUrl,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    // night n (run-NN) started n days before 2026-12-01; 500 pairs each
    await sh.query(
      `INSERT INTO fcctl_reconcile_ledger (run_id, run_started_at, sch_id, form_uuid, result, in_sync, missing_local, differences, seconds, finished_at) ` +
        `SELECT CONCAT('run-', LPAD(seq DIV ${PAIRS}, 2, '0')), '2026-12-01 01:00:00' - INTERVAL (seq DIV ${PAIRS}) DAY, 1 + seq % 100, ` +
        `CONCAT('00000000-0000-0000-0000-', LPAD(seq % ${PAIRS}, 12, '0')), 'DONE', 10, seq % 3, seq % 3, 1.5, '2026-12-01 02:00:00' - INTERVAL (seq DIV ${PAIRS}) DAY ` +
        `FROM seq_0_to_${NIGHTS * PAIRS - 1}`,
    );
    await sh.query(
      `INSERT INTO fcctl_reconcile_task (run_id, sch_id, form_uuid, state, create_time) ` +
        `SELECT CONCAT('run-', LPAD(seq DIV ${PAIRS}, 2, '0')), 1 + seq % 100, CONCAT('00000000-0000-0000-0000-', LPAD(seq % ${PAIRS}, 12, '0')), 'DONE', ` +
        `'2026-12-01 01:00:00' - INTERVAL (seq DIV ${PAIRS}) DAY FROM seq_0_to_${NIGHTS * PAIRS - 1}`,
    );
    for (const t of ['fcctl_reconcile_ledger', 'fcctl_reconcile_task']) await sh.query(`ANALYZE TABLE ${t}`);
  }, 300_000);
  afterAll(async () => {
    await sh?.end();
  });

  test("a night's start: one row of the ledger, else the run's tasks by uk_reconcile_task_pair's prefix", async () => {
    const start = await access(ledgerSql.nightStart('run-03'), 'fcctl_reconcile_ledger');
    expect(start).toMatchObject({ type: 'ref', key: 'uk_reconcile_ledger_pair' });
    expect(start.read).toBeLessThanOrEqual(1);
    const tasks = await access(ledgerSql.taskRunStart('run-03'), 'fcctl_reconcile_task');
    expect(tasks).toMatchObject({ type: 'ref', key: 'uk_reconcile_task_pair' });
    expect(tasks.read).toBeLessThanOrEqual(PAIRS);
  });

  test('the newest nights: a loose scan of idx_reconcile_ledger_night, one entry per night', async () => {
    const [rows] = await sh.query(ledgerSql.nights(3, null).sql, ledgerSql.nights(3, null).params);
    expect((rows as Array<{ run_id: string }>).map((r) => r.run_id)).toEqual(['run-00', 'run-01', 'run-02']);
    for (const q of [
      ledgerSql.nights(30, null),
      ledgerSql.nights(30, { startedAt: '2026-11-21 01:00:00', runId: 'run-10' }),
      ledgerSql.nightsBeyond(30, 100),
    ]) {
      // a loose index scan: one index dive per night, never the nights' 500 pairs each
      const a = await access(q, 'fcctl_reconcile_ledger');
      expect(a).toMatchObject({ type: 'range', key: 'idx_reconcile_ledger_night', looseScan: true });
      expect(a.read).toBeLessThanOrEqual(NIGHTS);
    }
    const upTo = ledgerSql.nights(2, { startedAt: '2026-11-21 01:00:00', runId: 'run-10' });
    const [older] = await sh.query(upTo.sql, upTo.params);
    expect((older as Array<{ run_id: string }>).map((r) => r.run_id)).toEqual(['run-10', 'run-11']);
  });

  test("a night's pairs and totals: uk_reconcile_ledger_pair's prefix, only those nights' rows read", async () => {
    const ids = ['run-00', 'run-01', 'run-02'];
    for (const q of [ledgerSql.nightTotals(ids), ledgerSql.pairs(ids), ledgerSql.pairs(ids, ['5', '6'], [])]) {
      const a = await access(q, 'fcctl_reconcile_ledger');
      expect(a).toMatchObject({ type: 'range', key: 'uk_reconcile_ledger_pair' });
      expect(a.read).toBeLessThanOrEqual(ids.length * PAIRS);
    }
  });

  test("pruning deletes a night's rows by run id (the unique key's prefix), never a scan", async () => {
    for (const [q, table, key] of [
      [ledgerSql.deleteNight('run-59', 5000), 'fcctl_reconcile_ledger', 'uk_reconcile_ledger_pair'],
      [ledgerSql.deleteNightTasks('run-59', 5000), 'fcctl_reconcile_task', 'uk_reconcile_task_pair'],
      [ledgerSql.deleteNightJoin('run-59'), 'fcctl_reconcile_join', 'PRIMARY'],
    ] as const) {
      const a = await access(q, table, false);
      expect(a.key).toBe(key);
      expect(['range', 'ref', 'const']).toContain(a.type);
    }
    // weighing a night before pruning it: that night's task rows only
    const weigh = await access(ledgerSql.nightActivity('run-59', 30), 'fcctl_reconcile_task');
    expect(weigh).toMatchObject({ type: 'ref', key: 'uk_reconcile_task_pair' });
    expect(weigh.read).toBeLessThanOrEqual(PAIRS);
  });
});
