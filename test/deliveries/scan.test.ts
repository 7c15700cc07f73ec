import { parseCsv } from '../helpers/csv.js';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { scanExitCode, shapeScan } from '../../src/lib/deliveries/scan/decide.js';
import { scanSql } from '../../src/lib/deliveries/scan/sql.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { readProm } from '../helpers/textfile.js';

const NACK = 'NACK: broker said "no", try later';
// `db init --dev` below, in the file's own hook
const test = servicesTest({ prefix: 'scan' });

describe('shapeScan (pure)', () => {
  test('lists every known state, converts counts and keeps a null age', () => {
    const r = shapeScan({
      now: '2026-11-30 10:00:00',
      states: [
        { state: 'PENDING', n: '3' },
        { state: 'WEIRD', n: 1 },
      ],
      open: { held: '0', due: '3', stuck: '0', oldest_pending_age: null },
      reasons: [],
      rows: [],
    });
    expect(r.states).toEqual({ PENDING: 3, BROKER_ACCEPTED: 0, FAILED: 0, DEAD: 0, GRANT_REVOKED: 0, WEIRD: 1 });
    expect(r).toMatchObject({ due: 3, held: 0, oldestPendingAgeSeconds: null, dead: 0 });
  });

  test('compares against one database now, passed as a parameter (no JS clock, no Date parsing)', () => {
    const q = scanSql.open('2026-11-30 10:00:00');
    expect(q.params).toEqual(Array(4).fill('2026-11-30 10:00:00'));
    expect(q.sql).not.toContain('NOW()');
    expect(q.sql).toContain(
      'LEFT JOIN form_consumer_grant g ON g.form_uuid = d.form_uuid AND g.consumer_school_id = d.consumer_school_id AND g.consumer_app_key = d.consumer_app_key',
    );
  });
});

describe('scanExitCode (pure)', () => {
  test.each([
    [0, false, 0],
    [3, false, 0],
    [0, true, 0],
    [3, true, 1],
  ])('%i DEAD rows, --fail-if-dead %s → exit %i', (dead, failIfDead, code) =>
    expect(scanExitCode({ dead }, { failIfDead })).toBe(code),
  );
});

describe('fcctl deliveries scan (real MariaDB)', () => {
  let dbs: TestDatabases;
  let tmp: string;
  const ids: Record<string, string> = {};
  const fc = (sql: string) => sql.replaceAll('fc.', `\`${dbs.fcName}\`.`);
  const exec = (sql: string, params: unknown[] = []) => dbs.admin.query(fc(sql), params);
  const scan = (args: string[] = [], tty = false) =>
    runCli([...(tty ? [] : ['--json']), 'deliveries', 'scan', ...args], { env: dbs.env(), tty });

  test.beforeAll(async ({ dbs: d, tmp: t }) => {
    dbs = d;
    tmp = t;
    expect((await runCli(['db', 'init', '--side', 'fc', '--dev'], { env: dbs.env() })).code).toBe(0);
  });

  test('an empty outbox: all zero, no oldest pending (0 in the metrics file)', async () => {
    const metrics = join(tmp, 'empty.prom');
    const r = await scan(['--metrics-file', metrics]);
    expect(r.code).toBe(0);
    expect(jsonLines(r.stdout)).toEqual([
      expect.objectContaining({
        type: 'summary',
        command: 'deliveries scan',
        exitCode: 0,
        due: 0,
        held: 0,
        oldestPendingAgeSeconds: null,
        stuckClaims: 0,
        dead: 0,
        reasons: [],
        listed: 0,
      }),
    ]);
    expect(readProm(metrics)).toContain('\nfcctl_deliveries_oldest_pending_age_seconds 0\n');
  });

  test('arranged rows: states, due, held, stuck claims, oldest pending, reasons, newest rows', async () => {
    const seed = await runCli(
      ['--json', 'dev', 'seed', '--answers', '10', '--consumer-keys', 'k1,k2', '--schools', '1', '--no-grant-mix'],
      { env: dbs.env() },
    );
    expect(seed.code).toBe(0);
    const [rowsRaw] = await exec(
      'SELECT id, event_id, consumer_app_key, form_uuid FROM fc.answer_delivery ORDER BY id',
    );
    const rows = rowsRaw as Array<{ id: string; event_id: string; consumer_app_key: string; form_uuid: string }>;
    expect(rows).toHaveLength(20);
    const k1 = rows.filter((r) => r.consumer_app_key === 'k1');
    const k2 = rows.filter((r) => r.consumer_app_key === 'k2');
    const forms = [...new Set(k2.map((r) => r.form_uuid))];
    expect(k2.filter((r) => r.form_uuid === forms[0]).length).toBe(4); // answers 0, 3, 6, 9
    const grant = (form: string, set: string) =>
      exec(`UPDATE fc.form_consumer_grant SET ${set} WHERE form_uuid = ? AND consumer_app_key = 'k2'`, [form]);
    const row = (r: { id: string }, set: string) => exec(`UPDATE fc.answer_delivery SET ${set} WHERE id = ?`, [r.id]);

    await exec("UPDATE fc.answer_delivery SET create_time = NOW() - INTERVAL 100 SECOND WHERE state = 'PENDING'");
    // k2, form 0: push disabled → its 4 rows are held (one of them FAILED and due by time).
    await grant(forms[0]!, 'push_allowed = 0');
    const heldRows = k2.filter((r) => r.form_uuid === forms[0]);
    await row(heldRows[0]!, 'create_time = NOW() - INTERVAL 9999 SECOND'); // held: not the oldest pending
    await row(
      heldRows[3]!,
      "state = 'FAILED', retry_count = 1, next_retry_at = NOW() - INTERVAL 60 SECOND, last_error = 'NO_ROUTE', update_time = NOW() - INTERVAL 40 SECOND",
    );
    // k2, forms 1 and 2: revoked / advanced grants with push disabled are not held (send revokes them first): due.
    await grant(forms[1]!, 'revoked = 1, push_allowed = 0');
    await grant(forms[2]!, 'grant_version = grant_version + 1, push_allowed = 0');
    // k1 rows, one role each.
    await row(k1[0]!, "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW()");
    await row(k1[1]!, "state = 'BROKER_ACCEPTED', broker_accepted_at = NOW()");
    await row(k1[2]!, "state = 'GRANT_REVOKED'");
    await row(
      k1[3]!,
      "state = 'DEAD', retry_count = 8, last_error = 'NO_ROUTE', update_time = NOW() - INTERVAL 10 SECOND",
    );
    await row(
      k1[4]!,
      "state = 'DEAD', retry_count = 8, last_error = 'NO_ROUTE', update_time = NOW() - INTERVAL 5 SECOND",
    );
    await row(
      k1[5]!,
      "state = 'FAILED', retry_count = 2, next_retry_at = NOW() - INTERVAL 60 SECOND, last_error = 'NO_ROUTE', update_time = NOW() - INTERVAL 20 SECOND",
    );
    await exec(
      "UPDATE fc.answer_delivery SET state = 'FAILED', retry_count = 1, next_retry_at = NOW() + INTERVAL 1 HOUR, last_error = ?, update_time = NOW() - INTERVAL 30 SECOND WHERE id = ?",
      [NACK, k1[6]!.id],
    );
    await row(k1[7]!, "claim_owner = 'live-worker', claim_expires_at = NOW() + INTERVAL 5 MINUTE");
    await row(k1[8]!, "claim_owner = 'dead-worker', claim_expires_at = NOW() - INTERVAL 5 MINUTE");
    await row(k1[9]!, 'create_time = NOW() - INTERVAL 500 SECOND');
    Object.assign(ids, {
      dead3: k1[3]!.event_id,
      dead4: k1[4]!.event_id,
      failed5: k1[5]!.event_id,
      nack: k1[6]!.event_id,
      heldFailed: heldRows[3]!.event_id,
    });

    const r = await scan();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = jsonLines(r.stdout);
    const summary = lines.at(-1)!;
    expect(summary).toMatchObject({
      type: 'summary',
      command: 'deliveries scan',
      exitCode: 0,
      states: { PENDING: 12, FAILED: 3, DEAD: 2, BROKER_ACCEPTED: 2, GRANT_REVOKED: 1 },
      held: 4,
      due: 9, // 6 k2 rows of revoked/advanced grants, the expired claim, the plain PENDING, the due FAILED
      stuckClaims: 1,
      dead: 2,
      listed: 5,
      reasons: [
        { state: 'DEAD', lastError: 'NO_ROUTE', count: 2 },
        { state: 'FAILED', lastError: 'NO_ROUTE', count: 2 },
        { state: 'FAILED', lastError: NACK, count: 1 },
      ],
    });
    expect(summary['oldestPendingAgeSeconds']).toBeGreaterThanOrEqual(500);
    expect(summary['oldestPendingAgeSeconds']).toBeLessThan(530);
    expect(summary['dbNow']).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    const listed = lines.filter((l) => l['type'] === 'row');
    expect(listed.map((l) => l['eventId'])).toEqual([
      ids['dead4'],
      ids['dead3'],
      ids['failed5'],
      ids['nack'],
      ids['heldFailed'],
    ]);
  });

  test('--limit N lists the newest N FAILED/DEAD rows', async () => {
    const r = await scan(['--limit', '3']);
    expect(r.code).toBe(0);
    expect(
      jsonLines(r.stdout)
        .filter((l) => l['type'] === 'row')
        .map((l) => l['eventId']),
    ).toEqual([ids['dead4'], ids['dead3'], ids['failed5']]);
  });

  test('--format csv: stdout is only the CSV, and it parses', async () => {
    const r = await scan(['--format', 'csv']);
    expect(r.code).toBe(0);
    const table = parseCsv(r.stdout);
    expect(table[0]).toEqual([
      'event id',
      'state',
      'consumer',
      'school',
      'answer',
      'rev',
      'retries',
      'next retry',
      'last error',
      'updated',
    ]);
    expect(table.slice(1).map((cells) => cells[0])).toEqual([
      ids['dead4'],
      ids['dead3'],
      ids['failed5'],
      ids['nack'],
      ids['heldFailed'],
    ]);
    expect(table.every((cells) => cells.length === 10)).toBe(true);
    const nack = table.find((cells) => cells[0] === ids['nack'])!;
    expect(nack[1]).toBe('FAILED');
    expect(nack[8]).toBe(NACK);
    expect(nack[7]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  test('--format table on a terminal shows the states, reasons and rows', async () => {
    const r = await scan([], true);
    expect(r.code).toBe(0);
    for (const text of [
      'answer_delivery by state',
      'FAILED/DEAD reasons',
      'newest FAILED/DEAD rows',
      'NO_ROUTE',
      'stuckClaims',
    ])
      expect(r.stdout).toContain(text);
  });

  test('--metrics-file writes the gauges atomically', async () => {
    const path = join(tmp, 'scan.prom');
    const before = Math.floor(Date.now() / 1000);
    const r = await scan(['--metrics-file', path]);
    expect(r.code).toBe(0);
    const text = readProm(path);
    for (const line of [
      'fcctl_deliveries_rows{state="PENDING"} 12',
      'fcctl_deliveries_rows{state="FAILED"} 3',
      'fcctl_deliveries_rows{state="DEAD"} 2',
      'fcctl_deliveries_rows{state="BROKER_ACCEPTED"} 2',
      'fcctl_deliveries_rows{state="GRANT_REVOKED"} 1',
      'fcctl_deliveries_due 9',
      'fcctl_deliveries_held 4',
      'fcctl_deliveries_stuck_claims 1',
      'fcctl_deliveries_dead 2',
      'fcctl_run_exit_code{command="deliveries scan"} 0',
      '# TYPE fcctl_deliveries_due gauge',
    ])
      expect(text.split('\n')).toContain(line);
    const age = Number(/^fcctl_deliveries_oldest_pending_age_seconds (\d+)$/m.exec(text)?.[1]);
    expect(age).toBeGreaterThanOrEqual(500);
    const last = Number(/^fcctl_last_success_timestamp_seconds\{command="deliveries scan"\} (\d+)$/m.exec(text)?.[1]);
    expect(last).toBeGreaterThanOrEqual(before);
    expect(last).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(text).toMatch(/^fcctl_run_duration_seconds\{command="deliveries scan"\} [\d.]+$/m);
  });

  test('is read-only: tables unchanged by any scan', async () => {
    const before = await checksumTables(dbs.admin, dbs.fcName);
    await scan();
    await scan(['--format', 'csv', '--limit', '1']);
    await scan(['--fail-if-dead', '--metrics-file', join(tmp, 'ro.prom')]);
    expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(before);
  });

  test.each([[['--limit', '0']], [['--limit', 'abc']], [['--limit', '-3']], [['--format', 'xml']]])(
    'bad input %j: exit 2, one line, database unchanged',
    async (args) => {
      const before = await checksumTables(dbs.admin, dbs.fcName);
      const r = await scan(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
      expect(r.stdout).toBe('');
      expect(await checksumTables(dbs.admin, dbs.fcName)).toBe(before);
    },
  );

  test('an unwritable --metrics-file is exit 3, one line, and no summary claiming success', async () => {
    const r = await scan(['--metrics-file', join(tmp, 'missing-dir', 'x.prom')]);
    expect(r.code).toBe(3);
    // found before the scan runs (issue 17): the directory is named
    expect(r.stderr).toMatch(
      /^fcctl: cannot write --metrics-file .*x\.prom: directory .*missing-dir does not exist; nothing was done\n$/,
    );
    expect(r.stdout).toBe('');
  });

  test('--fail-if-dead exits 1 while any row is DEAD, 0 once none is', async () => {
    const path = join(tmp, 'dead.prom');
    const r = await scan(['--fail-if-dead', '--metrics-file', path]);
    expect(r.code).toBe(1);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ exitCode: 1, dead: 2 });
    expect(readProm(path)).toContain('fcctl_run_exit_code{command="deliveries scan"} 1\n');
    expect((await scan()).code).toBe(0); // without the flag, DEAD rows are reported, not failed
    await exec("UPDATE fc.answer_delivery SET state = 'FAILED', retry_count = 7 WHERE state = 'DEAD'");
    const after = await scan(['--fail-if-dead']);
    expect(after.code).toBe(0);
    expect(jsonLines(after.stdout).at(-1)).toMatchObject({ exitCode: 0, dead: 0 });
  });
});
