import { describe, expect } from 'vitest';
import { compareSchema, parseSchema, schemaSql } from '../../src/lib/db/schema.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'db' });

describe('reference schema files', () => {
  test('declare every SPEC §1 table with its key columns and indexes', () => {
    const fc = parseSchema(schemaSql('fc'));
    const sh = parseSchema(schemaSql('sh'));
    expect(fc.map((t) => t.name)).toEqual([
      'fcctl_schema_version',
      'application_info',
      'form_consumer_grant',
      'answer',
      'answer_delivery',
      'fcctl_replay_operation',
      'fcctl_pause',
      'fcctl_pause_event',
      'fcctl_worker',
    ]);
    expect(sh.map((t) => t.name)).toEqual([
      'fcctl_schema_version',
      'fc_answer_projection',
      'service_apply',
      'flow_apply_command',
      'fc_reconcile_audit',
      'fcctl_requeue_operation',
      'fcctl_pause',
      'fcctl_pause_event',
      'fcctl_reconcile_task',
      'fcctl_reconcile_join',
      'fcctl_worker',
      'fcctl_reconcile_ledger',
    ]);
    // DOUBLE is a column type the check reads too (the ledger's seconds)
    expect(sh.find((t) => t.name === 'fcctl_reconcile_ledger')!.columns).toContain('seconds');
    expect(sh.find((t) => t.name === 'fcctl_requeue_operation')!.indexes['uk_requeue_op_command']).toEqual([
      'op_digest',
      'biz_type',
      'biz_id',
    ]);
    const delivery = fc.find((t) => t.name === 'answer_delivery')!;
    for (const c of [
      'event_id',
      'replay_op_digest',
      'claim_owner',
      'claim_expires_at',
      'broker_accepted_at',
      'consumer_applied_at',
      'snapshot_json',
    ]) {
      expect(delivery.columns).toContain(c);
    }
    expect(delivery.indexes['uk_delivery_revision']).toEqual([
      'answer_uuid',
      'answer_revision',
      'consumer_app_key',
      'consumer_school_id',
    ]);
    const projection = sh.find((t) => t.name === 'fc_answer_projection')!;
    expect(projection.indexes['idx_projection_manifest']).toEqual(['sch_id', 'form_uuid', 'answer_uuid']);
    expect(projection.columns).toEqual(
      expect.arrayContaining([
        'projection_version',
        'retired_at',
        'retire_proof_id',
        'last_repair_proof_id',
        'biz_ext_json',
      ]),
    );
  });

  test('compareSchema names missing tables, columns, indexes and wrong index columns', () => {
    const expected = parseSchema(schemaSql('fc'));
    const cols = new Map(expected.map((t) => [t.name, new Set(t.columns)]));
    const idx = new Map(expected.map((t) => [t.name, new Map(Object.entries(t.indexes))]));
    expect(compareSchema(expected, cols, idx)).toEqual([]);
    cols.delete('answer');
    cols.get('answer_delivery')!.delete('claim_owner');
    idx.get('answer_delivery')!.delete('idx_delivery_due');
    idx.get('form_consumer_grant')!.set('uk_grant', ['form_uuid']);
    expect(compareSchema(expected, cols, idx)).toEqual([
      {
        kind: 'index-columns',
        table: 'form_consumer_grant',
        index: 'uk_grant',
        expected: ['form_uuid', 'consumer_school_id', 'consumer_app_key'],
        actual: ['form_uuid'],
      },
      { kind: 'missing-table', table: 'answer' },
      { kind: 'missing-column', table: 'answer_delivery', column: 'claim_owner' },
      { kind: 'missing-index', table: 'answer_delivery', index: 'idx_delivery_due' },
    ]);
  });
});

describe('fcctl db init / db check (real MariaDB)', () => {
  let dbs: TestDatabases;
  test.beforeAll(({ dbs: services }) => {
    dbs = services;
  });

  const tableChecksum = async (name: string) => {
    const [rows] = await dbs.admin.query(`SELECT * FROM \`${name}\`.fcctl_schema_version ORDER BY side`);
    return JSON.stringify(rows);
  };

  test('creates both schemas, a second run changes nothing, check passes', async () => {
    const first = await runCli(['--json', 'db', 'init', '--side', 'all'], { env: dbs.env() });
    expect(first.code).toBe(0);
    const summary1 = jsonLines(first.stdout).at(-1)!;
    expect(summary1).toMatchObject({ type: 'summary', command: 'db init', exitCode: 0, created: 21, changed: true });
    const before = (await tableChecksum(dbs.fcName)) + (await tableChecksum(dbs.shName));

    const second = await runCli(['--json', 'db', 'init', '--side', 'all'], { env: dbs.env() });
    expect(second.code).toBe(0);
    expect(jsonLines(second.stdout).at(-1)).toMatchObject({ type: 'summary', created: 0, changed: false });
    expect((await tableChecksum(dbs.fcName)) + (await tableChecksum(dbs.shName))).toBe(before);

    const check = await runCli(['--json', 'db', 'check'], { env: dbs.env() });
    expect(check.code).toBe(0);
    expect(jsonLines(check.stdout).at(-1)).toMatchObject({ type: 'summary', command: 'db check', ok: true });
  });

  test('check exits 3 naming a dropped column and a dropped index, init does not silently "fix" them', async () => {
    await dbs.admin.query(`ALTER TABLE \`${dbs.fcName}\`.answer_delivery DROP COLUMN claim_expires_at`);
    await dbs.admin.query(`ALTER TABLE \`${dbs.shName}\`.fc_answer_projection DROP INDEX idx_projection_manifest`);
    const check = await runCli(['db', 'check'], { env: dbs.env() });
    expect(check.code).toBe(3);
    expect(check.stderr.trim().split('\n')).toHaveLength(1);
    expect(check.stderr).toContain('fc: missing column answer_delivery.claim_expires_at');
    expect(check.stderr).toContain('sh: missing index fc_answer_projection.idx_projection_manifest');
    const fcOnly = await runCli(['db', 'check', '--side', 'sh'], { env: dbs.env() });
    expect(fcOnly.code).toBe(3);
    expect(fcOnly.stderr).not.toContain('answer_delivery');
  });

  test('check and doctor name a key column that is not ordered by its bytes (a _ci collation), before any scan', async () => {
    await dbs.admin.query(
      `ALTER TABLE \`${dbs.fcName}\`.answer MODIFY answer_uuid CHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL`,
    );
    await dbs.admin.query(
      `ALTER TABLE \`${dbs.shName}\`.fc_answer_projection MODIFY form_uuid VARCHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL`,
    );
    try {
      const check = await runCli(['db', 'check'], { env: dbs.env() });
      expect(check.code).toBe(3);
      expect(check.stderr.trim().split('\n')).toHaveLength(1);
      expect(check.stderr).toContain(
        'fc: column answer.answer_uuid is char utf8mb4_unicode_ci: keyset pages and the reconcile merge-join need it ordered by its bytes',
      );
      expect(check.stderr).toContain('sh: column fc_answer_projection.form_uuid is varchar utf8mb4_general_ci');
      const doctor = await runCli(['--json', 'doctor'], { env: dbs.env() });
      expect(doctor.stdout).toContain('column answer.answer_uuid is char utf8mb4_unicode_ci');
      expect(doctor.code).toBe(3);
    } finally {
      await dbs.admin.query(
        `ALTER TABLE \`${dbs.fcName}\`.answer MODIFY answer_uuid CHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`,
      );
      await dbs.admin.query(
        `ALTER TABLE \`${dbs.shName}\`.fc_answer_projection MODIFY form_uuid CHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`,
      );
    }
    // binary-ordered again: nothing said about either column
    const again = await runCli(['db', 'check'], { env: dbs.env() });
    expect(again.stderr).not.toContain('answer.answer_uuid');
    expect(again.stderr).not.toContain('fc_answer_projection.form_uuid');
  });

  test('init --dev marks the database as a development database', async () => {
    const r = await runCli(['--json', 'db', 'init', '--side', 'fc', '--dev'], { env: dbs.env() });
    expect(r.code).toBe(0);
    const [rows] = await dbs.admin.query(`SELECT is_dev FROM \`${dbs.fcName}\`.fcctl_schema_version WHERE side='fc'`);
    expect((rows as Array<{ is_dev: number }>)[0]!.is_dev).toBe(1);
  });

  test('an unreachable database exits 3 with one line and the password masked', async () => {
    const r = await runCli(['db', 'check', '--side', 'fc'], {
      env: dbs.env({ FCCTL_FC_DATABASE_URL: 'mysql://fcctl:s3cr3t-pw@127.0.0.1:1/x' }),
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^fcctl: cannot connect to FC database at mysql:\/\/fcctl:\*\*\*@127\.0\.0\.1:1\/x: ECONNREFUSED\n$/,
    );
    expect(r.stderr + r.stdout).not.toContain('s3cr3t-pw');
  });

  test('a missing database URL is a usage error (exit 2) naming the variable', async () => {
    const r = await runCli(['db', 'check', '--side', 'fc'], { env: dbs.env({ FCCTL_FC_DATABASE_URL: '' }) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('FCCTL_FC_DATABASE_URL');
  });
});
