/**
 * `fcctl explain`'s statements, pinned to their indexes (issue 29 §1): on tables with many other
 * rows, each statement is EXPLAINed and ANALYZEd exactly as sql.ts builds it. A schema change that
 * drops or reshapes an index turns one of these into a scan, and this file fails. The indexes are
 * listed in docs/commands/explain.md.
 */
import { planAccesses } from '../helpers/plans.js';
import mysql from 'mysql2/promise';
import { afterAll, describe, expect } from 'vitest';
import type { Statement } from '../../src/lib/db/statement.js';
import { explainSql } from '../../src/lib/explain/sql.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'explainplan', init: 'all' });
const N = 50_000;
const FORM = '00000000-0000-4000-8000-00000000f001';
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const A = uuid(4242);

describe('explain: every section is an indexed lookup (real MariaDB)', () => {
  let fc: mysql.Connection;
  let sh: mysql.Connection;
  const plan = planAccesses;
  /** The access of `table`: its type and key, and how many rows ANALYZE really read. */
  const access = async (conn: mysql.Connection, q: Statement, table: string) => {
    const e = (await plan(conn, q, 'EXPLAIN')).filter((a) => a.table_name === table);
    const a = (await plan(conn, q, 'ANALYZE')).filter((x) => x.table_name === table);
    expect(e).toHaveLength(1);
    return { type: e[0]!.access_type, key: e[0]!.key, read: Number(a[0]?.r_rows ?? 0) };
  };

  test.beforeAll(async ({ dbs }) => {
    const opts = { dateStrings: true, supportBigNumbers: true, bigNumberStrings: true } as const;
    fc = await mysql.createConnection({ uri: dbs.fcUrl, ...opts });
    sh = await mysql.createConnection({ uri: dbs.shUrl, ...opts });
    const u = "CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0'))";
    await fc.query(
      'INSERT INTO answer (answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, status, values_json, create_time, answer_revision) ' +
        `SELECT ${u}, ?, 1, 1 + seq % 100, 'a', 'c', 1, 's', '{}', NOW(), 1 FROM seq_1_to_${N}`,
      [FORM],
    );
    // two consumers per answer: 2N outbox rows
    await fc.query(
      'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
        'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, claim_owner, claim_expires_at, create_time) ' +
        `SELECT UUID(), 'created', 'p', CONCAT('k', seq % 2), 1 + (seq DIV 2) % 100, 1, ?, 1, CONCAT('00000000-0000-4000-8000-', LPAD(seq DIV 2, 12, '0')), 1, REPEAT('0', 64), NOW(), '{}', 'BROKER_ACCEPTED', ` +
        `IF(seq % 1000 = 0, CONCAT('h', seq % 7, ':', seq, ':abc'), NULL), NULL, NOW() FROM seq_2_to_${2 * N + 1}`,
      [FORM],
    );
    await fc.query(
      'INSERT INTO form_consumer_grant (form_uuid, consumer_school_id, consumer_app_key, create_time) ' +
        `SELECT IF(seq <= 200, ?, UUID()), 1 + seq % 100, CONCAT('k', seq DIV 100), NOW() FROM seq_1_to_5000`,
      [FORM],
    );
    await fc.query(
      `INSERT INTO application_info (id, app_code, app_key) SELECT seq, CONCAT('c', seq), CONCAT('k', seq) FROM seq_0_to_999`,
    );
    await fc.query(
      "INSERT INTO fcctl_worker (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state) SELECT UUID(), IF(seq % 2 = 0, 'deliveries send', 'apply-command resolve-unknown'), CONCAT('h', seq % 7), seq, '1', UTC_TIMESTAMP(), UTC_TIMESTAMP(), 10, 'running' FROM seq_1_to_2000",
    );
    await sh.query(
      'INSERT INTO fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, snapshot_json, apply_id) ' +
        `SELECT ${u}, 1 + seq % 100, ?, 1, 1, REPEAT('0', 64), '{}', seq FROM seq_1_to_${N}`,
      [FORM],
    );
    await sh.query(
      "INSERT INTO fc_reconcile_audit (action, outcome, run_id, host, sch_id, answer_uuid, create_time) SELECT 'REPAIR', 'APPLIED', 'r', 'h', 1, " +
        `CONCAT('00000000-0000-4000-8000-', LPAD(seq DIV 3, 12, '0')), NOW() FROM seq_1_to_${N}`,
    );
    // 60 nights of 500 pairs
    await sh.query(
      "INSERT INTO fcctl_reconcile_task (run_id, sch_id, form_uuid, state, create_time) SELECT CONCAT('run-', seq DIV 500), 1 + seq % 100, IF(seq % 500 < 100, ?, UUID()), 'DONE', NOW() FROM seq_0_to_29999",
      [FORM],
    );
    await sh.query(
      "INSERT INTO fcctl_reconcile_join (run_id, joined_at) SELECT CONCAT('run-', seq), NOW() - INTERVAL 60 - seq DAY FROM seq_0_to_59",
    );
    await sh.query(
      `INSERT INTO service_apply (id, biz_type, biz_id, flow_status) SELECT seq, 'T', seq, 20 FROM seq_1_to_${N}`,
    );
    await sh.query(
      'INSERT INTO flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, state, create_time) ' +
        `SELECT 'T', seq, 'a', 1, 'g', CONCAT('t', seq), 'DONE', NOW() FROM seq_1_to_${N}`,
    );
    for (const t of ['answer', 'answer_delivery', 'form_consumer_grant', 'application_info', 'fcctl_worker'])
      await fc.query(`ANALYZE TABLE ${t}`);
    for (const t of [
      'fc_answer_projection',
      'fc_reconcile_audit',
      'fcctl_reconcile_task',
      'fcctl_reconcile_join',
      'service_apply',
      'flow_apply_command',
    ])
      await sh.query(`ANALYZE TABLE ${t}`);
  }, 180_000);
  afterAll(async () => {
    await fc?.end();
    await sh?.end();
  });

  test('FC: the answer by uk_answer_uuid, the event by uk_delivery_event, the app key by uk_app_key (one row each)', async () => {
    expect(await access(fc, explainSql.answer(A), 'answer')).toMatchObject({ type: 'const', key: 'uk_answer_uuid' });
    const [[ev]] = (await fc.query('SELECT event_id FROM answer_delivery WHERE answer_uuid = ? LIMIT 1', [A])) as any;
    expect(await access(fc, explainSql.event(ev.event_id), 'answer_delivery')).toMatchObject({
      type: 'const',
      key: 'uk_delivery_event',
    });
    expect(await access(fc, explainSql.appKey('k7'), 'application_info')).toMatchObject({
      type: 'const',
      key: 'uk_app_key',
    });
  });

  test("FC: the answer's outbox rows by uk_delivery_revision's prefix, only its own rows read", async () => {
    for (const only of [{}, { consumer: 'k1' }, { consumer: 'k0', schId: '43' }]) {
      const a = await access(fc, explainSql.outbox(A, only), 'answer_delivery');
      expect(a).toMatchObject({ type: 'ref', key: 'uk_delivery_revision' });
      expect(a.read).toBeLessThanOrEqual(2);
    }
  });

  test('FC: the grants by uk_grant (form, schools), the claim holder by idx_worker_command', async () => {
    const g = await access(fc, explainSql.grants(FORM, ['5', '43'], undefined), 'form_consumer_grant');
    expect(g).toMatchObject({ type: 'range', key: 'uk_grant' });
    expect(g.read).toBeLessThanOrEqual(10);
    const w = await access(fc, explainSql.claimHolders('h3', 1000), 'fcctl_worker');
    expect(w.key).toBe('idx_worker_command');
    expect(['ref', 'range']).toContain(w.type);
    expect(w.read).toBeLessThanOrEqual(1000);
  });

  test('SH: the projections by uk_projection_answer, the audit rows by idx_audit_answer', async () => {
    const p = await access(sh, explainSql.projections(A), 'fc_answer_projection');
    expect(p).toMatchObject({ type: 'ref', key: 'uk_projection_answer' });
    expect(p.read).toBeLessThanOrEqual(1);
    const one = await access(sh, explainSql.projections(A, String(1 + (4242 % 100))), 'fc_answer_projection');
    expect(one).toMatchObject({ type: 'const', key: 'uk_projection_answer' });
    const a = await access(sh, explainSql.audit(A), 'fc_reconcile_audit');
    expect(a).toMatchObject({ type: 'ref', key: 'idx_audit_answer' });
    expect(a.read).toBeLessThanOrEqual(3);
  });

  test('SH: the last reconcile run of the pair: the nights from fcctl_reconcile_join, each pair by uk_reconcile_task_pair', async () => {
    const q = explainSql.lastReconcile('43', FORM);
    // (plans name the tables by their aliases: t the tasks, j the nights)
    expect(await access(sh, q, 't')).toMatchObject({ type: 'eq_ref', key: 'uk_reconcile_task_pair' });
    // one row per night, read whole (60 here, 365 a year): never the tasks
    expect((await access(sh, q, 'j')).read).toBeLessThanOrEqual(60);
    expect(await access(sh, explainSql.reconcileTask('run-3', '43', FORM), 'fcctl_reconcile_task')).toMatchObject({
      type: 'const',
      key: 'uk_reconcile_task_pair',
    });
  });

  test('SH: the apply by PRIMARY and uk_service_apply_biz, the command by uk_apply_command_biz', async () => {
    expect(await access(sh, explainSql.serviceApplyById('4242'), 'service_apply')).toMatchObject({
      type: 'const',
      key: 'PRIMARY',
    });
    expect(await access(sh, explainSql.serviceApplyByKey('T', '4242'), 'service_apply')).toMatchObject({
      type: 'const',
      key: 'uk_service_apply_biz',
    });
    expect(await access(sh, explainSql.applyCommand('T', '4242'), 'flow_apply_command')).toMatchObject({
      type: 'const',
      key: 'uk_apply_command_biz',
    });
  });
});
