/**
 * Schema version 5 on a version-4 database: `db init` adds `answer_delivery`'s scan index (and SH
 * `flow_apply_command`'s) to the existing table (rows kept), records version 5, and `db check` then
 * passes; before it, `db check` names it missing. Any other dropped index stays `db check`'s to name.
 */
import { describe, expect } from 'vitest';
import { ADDED_INDEXES, SCHEMA_VERSION } from '../../src/lib/db/schema.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { freePort, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'upgrade', init: 'all' });

describe('db init on a version-4 FC database', () => {
  test('adds the version-5 index to the existing answer_delivery, keeps its rows, records version 5', async ({
    dbs,
  }) => {
    expect(SCHEMA_VERSION).toBe(8);
    const t = `\`${dbs.fcName}\`.answer_delivery`;
    await dbs.admin.query(
      `INSERT INTO ${t} (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, last_error, create_time) ` +
        "VALUES ('e1', 'UPSERT', 'a', 'k', 1, 1, 'f', 1, 'u1', 1, REPEAT('0', 64), NOW(), '{}', 'DEAD', 'NACK: x', NOW())",
    );
    // a version-4 table has neither the version-5 nor the version-7 index
    await dbs.admin.query(`ALTER TABLE ${t} DROP INDEX idx_delivery_state_error, DROP INDEX idx_delivery_state_time`);
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.fcctl_schema_version SET version = 4`);

    const before = await runCli(['db', 'check', '--side', 'fc'], { env: dbs.env() });
    expect(before.code).toBe(3);
    expect(before.stderr).toContain('missing index answer_delivery.idx_delivery_state_error');

    const init = await runCli(['--json', 'db', 'init', '--side', 'fc'], { env: dbs.env() });
    expect(init.code).toBe(0);
    const lines = jsonLines(init.stdout);
    expect(lines.find((l) => l['type'] === 'schema')).toMatchObject({
      created: [],
      indexesAdded: ADDED_INDEXES.fc.map((a) => `${a.table}.${a.index}`),
      versionRecorded: true,
    });
    expect(lines.at(-1)).toMatchObject({ type: 'summary', created: 0, changed: true });
    const [v] = await dbs.admin.query(`SELECT version FROM \`${dbs.fcName}\`.fcctl_schema_version WHERE side = 'fc'`);
    expect((v as Array<{ version: number }>)[0]!.version).toBe(SCHEMA_VERSION);
    const [rows] = await dbs.admin.query(`SELECT event_id FROM ${t}`);
    expect(rows).toEqual([{ event_id: 'e1' }]);
    const [idx] = await dbs.admin.query(
      "SELECT INDEX_NAME AS i, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) AS c FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'answer_delivery' AND INDEX_NAME LIKE 'idx_delivery_state%' GROUP BY INDEX_NAME ORDER BY INDEX_NAME",
      [dbs.fcName],
    );
    expect(idx).toEqual([
      { i: 'idx_delivery_state_error', c: 'state,last_error,update_time,create_time' },
      { i: 'idx_delivery_state_time', c: 'state,update_time' },
    ]);
    expect((await runCli(['db', 'check', '--side', 'fc'], { env: dbs.env() })).code).toBe(0);

    // the SH side the same way: its one version-5 index, on flow_apply_command
    await dbs.admin.query(
      `ALTER TABLE \`${dbs.shName}\`.flow_apply_command DROP INDEX idx_apply_command_state_error, DROP INDEX idx_apply_command_state_time`,
    );
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.fcctl_schema_version SET version = 4`);
    const sh = await runCli(['--json', 'db', 'init', '--side', 'sh'], { env: dbs.env() });
    expect(jsonLines(sh.stdout).find((l) => l['type'] === 'schema')).toMatchObject({
      side: 'sh',
      indexesAdded: [
        'flow_apply_command.idx_apply_command_state_error',
        'flow_apply_command.idx_apply_command_state_time',
      ],
      versionRecorded: true,
    });
    expect((await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() })).code).toBe(0);

    // a second init changes nothing
    const again = await runCli(['--json', 'db', 'init', '--side', 'all'], { env: dbs.env() });
    expect(jsonLines(again.stdout).at(-1)).toMatchObject({ type: 'summary', created: 0, changed: false });
  });

  test('version 6 on a version-5 database: db init creates fcctl_worker on both sides and SH fcctl_reconcile_join, db check names them missing before', async ({
    dbs,
  }) => {
    for (const name of [dbs.fcName, dbs.shName]) {
      await dbs.admin.query(`DROP TABLE \`${name}\`.fcctl_worker`);
      await dbs.admin.query(`UPDATE \`${name}\`.fcctl_schema_version SET version = 5`);
    }
    await dbs.admin.query(`DROP TABLE \`${dbs.shName}\`.fcctl_reconcile_join`);
    const before = await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() });
    expect(before.code).toBe(3);
    expect(before.stderr).toContain('fcctl_worker');
    const init = await runCli(['--json', 'db', 'init', '--side', 'all'], { env: dbs.env() });
    expect(init.code).toBe(0);
    const schema = jsonLines(init.stdout).filter((x) => x['type'] === 'schema');
    expect(schema.find((l) => l['side'] === 'fc')).toMatchObject({ created: ['fcctl_worker'], versionRecorded: true });
    expect(schema.find((l) => l['side'] === 'sh')).toMatchObject({
      created: ['fcctl_reconcile_join', 'fcctl_worker'],
      versionRecorded: true,
    });
    expect((await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() })).code).toBe(0);
  });

  test('version 7 on a version-6 database: db init adds the status window indexes and creates SH fcctl_reconcile_ledger, db check names them missing before', async ({
    dbs,
  }) => {
    await dbs.admin.query(`ALTER TABLE \`${dbs.fcName}\`.answer_delivery DROP INDEX idx_delivery_state_time`);
    await dbs.admin.query(`ALTER TABLE \`${dbs.shName}\`.flow_apply_command DROP INDEX idx_apply_command_state_time`);
    await dbs.admin.query(`DROP TABLE \`${dbs.shName}\`.fcctl_reconcile_ledger`);
    for (const name of [dbs.fcName, dbs.shName]) {
      await dbs.admin.query(`UPDATE \`${name}\`.fcctl_schema_version SET version = 6`);
    }
    const before = await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() });
    expect(before.code).toBe(3);
    expect(before.stderr).toContain('missing index answer_delivery.idx_delivery_state_time');
    expect((await runCli(['db', 'check', '--side', 'sh'], { env: dbs.env() })).stderr).toContain(
      'missing table fcctl_reconcile_ledger',
    );
    const init = await runCli(['--json', 'db', 'init', '--side', 'all'], { env: dbs.env() });
    expect(init.code).toBe(0);
    const schema = jsonLines(init.stdout).filter((x) => x['type'] === 'schema');
    expect(schema.find((l) => l['side'] === 'fc')).toMatchObject({
      indexesAdded: ['answer_delivery.idx_delivery_state_time'],
      versionRecorded: true,
    });
    expect(schema.find((l) => l['side'] === 'sh')).toMatchObject({
      created: ['fcctl_reconcile_ledger'],
      indexesAdded: ['flow_apply_command.idx_apply_command_state_time'],
      versionRecorded: true,
    });
    for (const name of [dbs.fcName, dbs.shName]) {
      const [v] = await dbs.admin.query(`SELECT version FROM \`${name}\`.fcctl_schema_version`);
      expect((v as Array<{ version: number }>)[0]!.version).toBe(SCHEMA_VERSION);
    }
    expect((await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() })).code).toBe(0);
  });

  test('version 8 on a version-7 database: a relay in outage still beats and status still reads the registry; db init adds fcctl_worker.detail, then the registry says why', async ({
    dbs,
  }) => {
    for (const name of [dbs.fcName, dbs.shName]) {
      await dbs.admin.query(`ALTER TABLE \`${name}\`.fcctl_worker DROP COLUMN detail`);
      await dbs.admin.query(`UPDATE \`${name}\`.fcctl_schema_version SET version = 7`);
    }
    const check = await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() });
    expect(check.code).toBe(3);
    expect(check.stderr).toContain('missing column fcctl_worker.detail');
    // a broker that refuses: the relay is in outage, beating its row on the version-7 registry
    const env = dbs.env({
      FCCTL_AMQP_URL: `amqp://u:p@127.0.0.1:${await freePort()}/fcctl`,
      FCCTL_APP_KEY: 'k',
      FCCTL_APP_CODE: 'c',
    });
    const relay = startService(['--json', 'deliveries', 'send', '--follow', '--heartbeat-seconds', '1'], { env });
    try {
      const fleet = async () => {
        const r = await runCli(['--json', 'status'], { env });
        return JSON.parse(r.stdout)['fleet']['fc'] as { status: string; workers: Array<Record<string, unknown>> };
      };
      await waitFor(
        'registered in outage',
        async () => (await fleet()).workers[0]?.['state'] === 'outage',
        20_000,
        200,
      );
      expect((await fleet()).workers[0]).toMatchObject({ pid: relay.child.pid, detail: null });

      const init = await runCli(['--json', 'db', 'init', '--side', 'all'], { env: dbs.env() });
      expect(init.code).toBe(0);
      const schema = jsonLines(init.stdout).filter((x) => x['type'] === 'schema');
      for (const side of ['fc', 'sh'])
        expect(schema.find((l) => l['side'] === side)).toMatchObject({
          columnsAdded: ['fcctl_worker.detail'],
          versionRecorded: true,
        });
      expect((await runCli(['db', 'check', '--side', 'all'], { env: dbs.env() })).code).toBe(0);
      // the next beat writes the reason: the broker, and its error
      await waitFor(
        'the reason recorded',
        async () => typeof (await fleet()).workers[0]?.['detail'] === 'string',
        10_000,
        200,
      );
      expect(String((await fleet()).workers[0]!['detail'])).toMatch(
        /^cannot connect to RabbitMQ at amqp:\/\/u:\*\*\*@127\.0\.0\.1:\d+\/fcctl: ECONNREFUSED$/,
      );
      const text = await runCli(['status', '--fail-if', 'outage'], { env, tty: true });
      expect(text.code).toBe(1);
    } finally {
      await relay.stop('SIGKILL');
    }
  }, 60_000);

  test('an index outside the upgrade list that was dropped is named by db check, not re-made by db init', async ({
    dbs,
  }) => {
    await dbs.admin.query(`ALTER TABLE \`${dbs.fcName}\`.answer_delivery DROP INDEX idx_delivery_consumer`);
    const init = await runCli(['--json', 'db', 'init', '--side', 'fc'], { env: dbs.env() });
    expect(init.code).toBe(0);
    expect(jsonLines(init.stdout).find((l) => l['type'] === 'schema')).toMatchObject({ indexesAdded: [] });
    const check = await runCli(['db', 'check', '--side', 'fc'], { env: dbs.env() });
    expect(check.code).toBe(3);
    expect(check.stderr).toContain('missing index answer_delivery.idx_delivery_consumer');
  });
});
