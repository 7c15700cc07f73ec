/**
 * Schema version 5: `db init` adds the scan indexes to an existing table (issue 20). Guards found
 * in review: an index of that name on other columns is named and left alone, a name in another
 * letter case is the same index, and a transaction holding the table makes the ALTER give up in
 * two seconds instead of queueing the service's writes behind it.
 */
import mysql from 'mysql2/promise';
import { describe, expect } from 'vitest';
import { SCHEMA_VERSION } from '../../src/lib/db/schema.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'h3v5', init: 'all' });

async function fcVersion(dbs: { admin: mysql.Connection; fcName: string }): Promise<number> {
  const [rows] = await dbs.admin.query(`SELECT version FROM \`${dbs.fcName}\`.fcctl_schema_version WHERE side = 'fc'`);
  return Number((rows as Array<{ version: number }>)[0]!.version);
}

async function asVersion4(dbs: { admin: mysql.Connection; fcName: string }, key: string): Promise<void> {
  const t = `\`${dbs.fcName}\`.answer_delivery`;
  await dbs.admin.query(`ALTER TABLE ${t} DROP INDEX IF EXISTS idx_delivery_state_error`);
  if (key) await dbs.admin.query(`ALTER TABLE ${t} ADD KEY ${key}`);
  await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.fcctl_schema_version SET version = 4`);
}

describe('db init on a version-4 FC database', () => {
  test('an index of the same name on other columns: db init names it and does not record version 5', async ({
    dbs,
  }) => {
    await asVersion4(dbs, 'idx_delivery_state_error (state, last_error)');
    const init = await runCli(['--json', 'db', 'init', '--side', 'fc'], { env: dbs.env() });
    expect(`${init.stdout}${init.stderr}`).toContain('idx_delivery_state_error');
    expect(await fcVersion(dbs)).toBe(4);
    expect((await runCli(['db', 'check', '--side', 'fc'], { env: dbs.env() })).code).toBe(3);
  });

  test('the index present under another letter case (names are case-insensitive): db init and db check accept it', async ({
    dbs,
  }) => {
    await asVersion4(dbs, 'IDX_DELIVERY_STATE_ERROR (state, last_error, update_time, create_time)');
    const init = await runCli(['--json', 'db', 'init', '--side', 'fc'], { env: dbs.env() });
    expect(init.stderr).toBe('');
    expect(jsonLines(init.stdout).find((l) => l['type'] === 'schema')).toMatchObject({ indexesAdded: [] });
    expect((await runCli(['db', 'check', '--side', 'fc'], { env: dbs.env() })).code).toBe(0);
    await dbs.admin.query(
      `ALTER TABLE \`${dbs.fcName}\`.answer_delivery DROP INDEX IDX_DELIVERY_STATE_ERROR, ADD KEY idx_delivery_state_error (state, last_error, update_time, create_time)`,
    );
  });

  test('a long transaction on answer_delivery: db init gives up in seconds (exit 3, one line, version 4) instead of queueing the outbox writes behind its ALTER', async ({
    dbs,
  }) => {
    await asVersion4(dbs, '');
    // a service's open transaction that has read the outbox (holds its metadata lock until it ends)
    const holder = await mysql.createConnection({ uri: dbs.fcUrl });
    const writer = await mysql.createConnection({ uri: dbs.fcUrl });
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM answer_delivery LIMIT 1');
      const started = Date.now();
      // the transaction ends 8 s from now, whatever db init does
      const ended = new Promise<void>((r) => setTimeout(() => void holder.query('COMMIT').then(() => r()), 8000));
      const init = runCli(['--json', 'db', 'init', '--side', 'fc'], { env: dbs.env() }).then((r) => ({
        ...r,
        ms: Date.now() - started,
      }));
      await new Promise((r) => setTimeout(r, 800));
      // the service's next write meanwhile: it waits behind the ALTER's metadata lock request, briefly
      await writer.query('SET SESSION lock_wait_timeout = 20');
      const w0 = Date.now();
      await writer.query(
        'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, create_time) ' +
          "VALUES ('w1', 'UPSERT', 'a', 'k', 1, 1, 'f', 1, 'uw', 1, REPEAT('0', 64), NOW(), '{}', 'PENDING', NOW())",
      );
      const writeMs = Date.now() - w0;
      const r = await init;
      await ended;
      // (without the short lock wait, the INSERT waited ~7 s, until the transaction ended)
      expect(writeMs).toBeLessThan(4000);
      expect(r.ms).toBeLessThan(7500);
      expect(r.code).toBe(3);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(await fcVersion(dbs)).toBe(4);
    } finally {
      await holder.end().catch(() => undefined);
      await writer.end().catch(() => undefined);
    }
  });

  test('a database a newer fcctl set up (a version above this one): db init refuses, exit 3, one line, nothing changed', async ({
    dbs,
  }) => {
    const newer = SCHEMA_VERSION + 1;
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.fcctl_schema_version SET version = ?`, [newer]);
    await dbs.admin.query(
      `ALTER TABLE \`${dbs.fcName}\`.answer_delivery DROP INDEX IF EXISTS idx_delivery_state_error`,
    );
    for (const side of ['fc', 'all']) {
      const r = await runCli(['db', 'init', '--side', side], { env: dbs.env() });
      expect(r.code).toBe(3);
      expect(r.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `fc database is at fcctl schema version ${newer}, newer than this fcctl's ${SCHEMA_VERSION}.*nothing was changed`,
          ),
        ),
      ]);
    }
    expect(await fcVersion(dbs)).toBe(newer);
    const [idx] = await dbs.admin.query(
      `SHOW INDEX FROM \`${dbs.fcName}\`.answer_delivery WHERE Key_name = 'idx_delivery_state_error'`,
    );
    expect(idx).toEqual([]);
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.fcctl_schema_version SET version = 4`);
    expect((await runCli(['db', 'init', '--side', 'fc'], { env: dbs.env() })).code).toBe(0);
  });
});
