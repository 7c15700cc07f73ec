import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { openDb } from '../../src/lib/db/connect.js';
import { describeServiceTimeZone, readServerZone, zoneFromServer } from '../../src/lib/time/service-zone.js';
import { cleanEnv, jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'zonedoc', init: 'fc' });

/** `serviceTimeZone` as `config show` and `doctor` print it (SPEC §10). */

const dir = mkdtempSync(join(tmpdir(), 'fcctl-zone-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config show lists serviceTimeZone like every setting, connecting nothing', () => {
  const shown = async (argv: string[], env: Record<string, string> = {}) => {
    // no database configured: config show must not need one
    const r = await runCli(['--json', ...argv, 'config', 'show'], { env: cleanEnv(env) });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    return jsonLines(r.stdout).find((l) => l['type'] === 'row' && l['setting'] === 'serviceTimeZone');
  };

  test('unset: says what will happen', async () => {
    expect(await shown([])).toMatchObject({
      value: "(unset: the FC database's zone)",
      source: 'unset',
      env: 'FCCTL_SERVICE_TIME_ZONE',
    });
  });
  test('from the flag, the environment and the config file', async () => {
    const cfg = join(dir, 'zone.json');
    writeFileSync(cfg, JSON.stringify({ serviceTimeZone: 'Asia/Kolkata' }));
    expect(await shown(['--service-time-zone', 'Asia/Shanghai'], { FCCTL_SERVICE_TIME_ZONE: 'UTC' })).toMatchObject({
      value: 'Asia/Shanghai',
      source: 'flag',
    });
    expect(await shown([], { FCCTL_SERVICE_TIME_ZONE: '+08:00' })).toMatchObject({ value: '+08:00', source: 'env' });
    expect(await shown(['--config', cfg])).toMatchObject({ value: 'Asia/Kolkata', source: 'config' });
  });
  test('on a terminal, in the table', async () => {
    const r = await runCli(['config', 'show'], { env: cleanEnv(), tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/serviceTimeZone\s+\(unset: the FC database's zone\)\s+unset\s+FCCTL_SERVICE_TIME_ZONE/);
  });
});

describe('doctor prints the effective zone and its source', () => {
  let dbs: TestDatabases;
  test.beforeAll(({ dbs: services }) => {
    dbs = services;
  });
  const zoneLine = async (argv: string[], env: Record<string, string | undefined>) => {
    const r = await runCli(['--json', ...argv, 'doctor'], { env });
    const lines = jsonLines(r.stdout).filter((l) => l['type'] === 'check');
    // right after the database checks
    const names = lines.map((l) => String(l['check']));
    expect(names.indexOf('service time zone')).toBe(names.findLastIndex((n) => /^(FC|SH) database/.test(n)) + 1);
    return { code: r.code, line: lines.find((l) => l['check'] === 'service time zone') };
  };

  test("unset: the FC database's zone (the local MariaDB: UTC from SYSTEM)", async () => {
    const db = await openDb('FC database', dbs.fcUrl);
    const expected = zoneFromServer(await readServerZone(db).finally(() => db.close()));
    const { line } = await zoneLine([], dbs.env());
    expect(line).toMatchObject({
      status: expected.source === 'fc-database' ? 'ok' : 'warn',
      detail: describeServiceTimeZone(expected),
    });
    if (expected.from.endsWith('system_time_zone UTC'))
      expect(line!['detail']).toBe('UTC (from the FC database: time_zone SYSTEM, system_time_zone UTC)');
  });
  test('configured: the value and where it came from', async () => {
    expect((await zoneLine([], dbs.env({ FCCTL_SERVICE_TIME_ZONE: 'Asia/Shanghai' }))).line).toMatchObject({
      status: 'ok',
      detail: 'Asia/Shanghai (from FCCTL_SERVICE_TIME_ZONE)',
    });
    expect((await zoneLine(['--service-time-zone', '-05:30'], dbs.env())).line).toMatchObject({
      status: 'ok',
      detail: '-05:30 (from --service-time-zone)',
    });
  });
  test('a bad value is a failed check naming it (exit 3, as every failed check)', async () => {
    const { code, line } = await zoneLine(['--service-time-zone', 'Mars/Olympus'], dbs.env());
    expect(code).toBe(3);
    expect(line).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        /^serviceTimeZone from --service-time-zone: "Mars\/Olympus" is not an IANA time zone name/,
      ),
    });
  });
  test('neither set nor an FC database to read: skipped', async () => {
    const { line } = await zoneLine([], cleanEnv({ FCCTL_SH_DATABASE_URL: dbs.shUrl }));
    expect(line).toMatchObject({ status: 'skipped' });
  });
});
