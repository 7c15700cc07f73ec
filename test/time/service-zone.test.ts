import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/lib/config/config.js';
import { type Db, openDb } from '../../src/lib/db/connect.js';
import { serviceTimeZoneCheck } from '../../src/lib/doctor/run.js';
import {
  configuredServiceTimeZone,
  readServerZone,
  resolveServiceTimeZone,
  SERVICE_ZONE_MAX_AGE_MS,
  type ServerZoneFacts,
  serviceZoneReader,
  zoneFromServer,
} from '../../src/lib/time/service-zone.js';
import { selectServerZone } from '../../src/lib/time/sql.js';
import { testMysqlUrl } from '../helpers/db.js';

const facts = (over: Partial<ServerZoneFacts>): ServerZoneFacts => ({
  sessionZone: 'SYSTEM',
  globalZone: 'SYSTEM',
  systemZone: 'UTC',
  utcNow: '2026-07-01 12:00:00',
  offsetMinutes: 0,
  ...over,
});

/** What the FC server says → the zone used and its source (pure; the shared server's own zone is never changed). */
const SERVER_CASES: ReadonlyArray<
  readonly [name: string, facts: Partial<ServerZoneFacts>, zone: string, source: 'fc-database' | 'fc-database-offset']
> = [
  [
    'a named zone',
    { sessionZone: 'Asia/Shanghai', globalZone: 'Asia/Shanghai', systemZone: 'CST', offsetMinutes: 480 },
    'Asia/Shanghai',
    'fc-database',
  ],
  [
    'a named zone with DST',
    { sessionZone: 'America/New_York', globalZone: 'America/New_York', systemZone: 'UTC', offsetMinutes: -240 },
    'America/New_York',
    'fc-database',
  ],
  [
    'a fixed offset',
    { sessionZone: '+08:00', globalZone: '+08:00', systemZone: 'UTC', offsetMinutes: 480 },
    '+08:00',
    'fc-database',
  ],
  [
    'a negative half-hour offset',
    { sessionZone: '-05:30', globalZone: '-05:30', offsetMinutes: -330 },
    '-05:30',
    'fc-database',
  ],
  ['an offset written +8:00', { globalZone: '+8:00', offsetMinutes: 480 }, '+08:00', 'fc-database'],
  ['SYSTEM, the OS in UTC', {}, 'UTC', 'fc-database'],
  ['SYSTEM, the OS in GMT', { systemZone: 'GMT' }, 'GMT', 'fc-database'],
  [
    'SYSTEM, the OS giving an IANA name',
    { systemZone: 'Asia/Shanghai', offsetMinutes: 480 },
    'Asia/Shanghai',
    'fc-database',
  ],
  [
    'SYSTEM, CST (China, Cuba or US Central): the current offset',
    { systemZone: 'CST', offsetMinutes: 480 },
    '+08:00',
    'fc-database-offset',
  ],
  [
    'SYSTEM, CST in Chicago: the current offset, not a guess',
    { systemZone: 'CST', offsetMinutes: -360 },
    '-06:00',
    'fc-database-offset',
  ],
  [
    'SYSTEM, EST in New York (DST would be lost): the current offset',
    { systemZone: 'EST', offsetMinutes: -300 },
    '-05:00',
    'fc-database-offset',
  ],
  ['SYSTEM, IST: the current offset', { systemZone: 'IST', offsetMinutes: 330 }, '+05:30', 'fc-database-offset'],
  ['SYSTEM, a Windows name', { systemZone: 'China Standard Time', offsetMinutes: 480 }, '+08:00', 'fc-database-offset'],
  ['SYSTEM, empty', { systemZone: '', offsetMinutes: 60 }, '+01:00', 'fc-database-offset'],
  [
    'SYSTEM, UTC by name but another offset now',
    { systemZone: 'UTC', offsetMinutes: 60 },
    '+01:00',
    'fc-database-offset',
  ],
  [
    "SYSTEM, an IANA name whose offset now is not the server's",
    { systemZone: 'Asia/Shanghai', offsetMinutes: 540 },
    '+09:00',
    'fc-database-offset',
  ],
  ['a named zone Intl does not know', { globalZone: 'posix/Mars', offsetMinutes: 120 }, '+02:00', 'fc-database-offset'],
  [
    'a session zone differing from the global one is ignored',
    { sessionZone: '+05:30', globalZone: 'SYSTEM', systemZone: 'UTC', offsetMinutes: 0 },
    'UTC',
    'fc-database',
  ],
];

describe('selectServerZone', () => {
  it("reads the three zone values and the global zone's offset, never NOW() (a session zone would hide the server's)", () => {
    expect(selectServerZone()).toEqual({
      sql:
        'SELECT @@session.time_zone AS session_zone, @@global.time_zone AS global_zone, @@system_time_zone AS system_zone, UTC_TIMESTAMP() AS utc_now, ' +
        "TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), CONVERT_TZ(UTC_TIMESTAMP(), '+00:00', @@global.time_zone)) AS offset_minutes",
      params: [],
    });
    expect(selectServerZone().sql).not.toMatch(/NOW\(\)/);
  });
});

describe('zoneFromServer: @@global.time_zone, @@system_time_zone and the current offset → the zone', () => {
  it.each(SERVER_CASES)('%s', (_name, over, zone, source) => {
    expect(zoneFromServer(facts(over))).toMatchObject({ zone, source });
  });

  it('says where the zone came from, and what to do when only an offset is known', () => {
    expect(zoneFromServer(facts({})).from).toBe('from the FC database: time_zone SYSTEM, system_time_zone UTC');
    expect(zoneFromServer(facts({ globalZone: 'Asia/Shanghai', sessionZone: 'Asia/Shanghai' })).from).toBe(
      'from the FC database: time_zone Asia/Shanghai',
    );
    expect(zoneFromServer(facts({ sessionZone: '+05:30' })).from).toMatch(/this session's \+05:30 ignored/);
    expect(zoneFromServer(facts({ systemZone: 'CST', offsetMinutes: 480 })).from).toBe(
      'the FC database\'s current offset: time_zone SYSTEM, system_time_zone CST; "CST" is no IANA zone name. Set serviceTimeZone if the service\'s zone has daylight saving time',
    );
  });

  it('no offset and no usable name: exit 3 asking for the setting', () => {
    expect(() => zoneFromServer(facts({ systemZone: 'CST', offsetMinutes: null }))).toThrow(
      /cannot tell the FC database's time zone .*set serviceTimeZone \(FCCTL_SERVICE_TIME_ZONE\)/,
    );
  });
});

const configOf = (flags: Record<string, unknown>, env: Record<string, string> = {}) =>
  resolveConfig({ flags, env, readFile: () => '{"serviceTimeZone":"Asia/Kolkata"}' });

describe('configuredServiceTimeZone: the setting, checked, naming its source', () => {
  it.each([
    [{ serviceTimeZone: 'Asia/Shanghai' }, {}, 'Asia/Shanghai', 'flag', 'from --service-time-zone'],
    [{}, { FCCTL_SERVICE_TIME_ZONE: '+08:00' }, '+08:00', 'env', 'from FCCTL_SERVICE_TIME_ZONE'],
    [{}, { FCCTL_SERVICE_TIME_ZONE: '-00:00' }, '+00:00', 'env', 'from FCCTL_SERVICE_TIME_ZONE'],
    [{ config: 'c.json' }, {}, 'Asia/Kolkata', 'config', 'from the config file'],
    [{ config: 'c.json', serviceTimeZone: 'UTC' }, {}, 'UTC', 'flag', 'from --service-time-zone'],
  ] as const)('%j %j → %s', (flags, env, zone, source, from) => {
    expect(configuredServiceTimeZone(configOf(flags, env))).toEqual({ zone, source, from });
  });

  it('unset: undefined (the FC database decides)', () => {
    expect(configuredServiceTimeZone(configOf({}, { FCCTL_SERVICE_TIME_ZONE: '' }))).toBeUndefined();
  });

  it.each([
    [
      { serviceTimeZone: 'Mars/Olympus' },
      {},
      /^serviceTimeZone from --service-time-zone: "Mars\/Olympus" is not an IANA time zone name/,
    ],
    [
      {},
      { FCCTL_SERVICE_TIME_ZONE: '+25:00' },
      /^serviceTimeZone from FCCTL_SERVICE_TIME_ZONE: "\+25:00" is not an offset ±HH:MM/,
    ],
    [{}, { FCCTL_SERVICE_TIME_ZONE: 'CST' }, /^serviceTimeZone from FCCTL_SERVICE_TIME_ZONE: "CST" is an abbreviation/],
    [{}, { FCCTL_SERVICE_TIME_ZONE: 'a\nb' }, /^serviceTimeZone from FCCTL_SERVICE_TIME_ZONE: "a\\nb" is not/],
    [{ serviceTimeZone: 'x'.repeat(10_000) }, {}, /^serviceTimeZone from --service-time-zone: "x{80}…" is not/],
  ] as const)('refuses %j %j with exit 2', (flags, env, message) => {
    let err: unknown;
    try {
      configuredServiceTimeZone(configOf(flags, env));
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ name: 'UsageError', exitCode: 2 });
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('\n');
  });

  it('a configured zone is checked without connecting anything', async () => {
    const never = () => Promise.reject(new Error('connected'));
    await expect(resolveServiceTimeZone(configOf({ serviceTimeZone: 'Asia/Shanghai' }), never)).resolves.toMatchObject({
      zone: 'Asia/Shanghai',
      source: 'flag',
    });
    await expect(resolveServiceTimeZone(configOf({ serviceTimeZone: 'Mars/Olympus' }), never)).rejects.toMatchObject({
      exitCode: 2,
    });
    await expect(
      serviceTimeZoneCheck(configOf({ serviceTimeZone: '+25:00' }), never, (e) => (e as Error).message),
    ).resolves.toMatchObject({ status: 'fail', detail: expect.stringMatching(/not an offset/) });
    await expect(serviceTimeZoneCheck(configOf({}), never, (e) => (e as Error).message)).resolves.toMatchObject({
      status: 'skipped',
    });
  });
});

describe("the server's zone, read from the real MariaDB", () => {
  let db: Db;
  let admin: mysql.Connection;
  beforeAll(async () => {
    // one connection, so a session setting made below applies to every later query
    db = await openDb('FC database', testMysqlUrl(), { connectionLimit: 1 });
    admin = await mysql.createConnection({ uri: testMysqlUrl(), dateStrings: true });
  });
  afterAll(async () => {
    await db?.close();
    await admin?.end();
  });

  it('reads what the server says (the local MariaDB: SYSTEM, system_time_zone UTC → UTC)', async () => {
    const f = await readServerZone(db);
    const [rows] = await admin.query(
      'SELECT @@global.time_zone AS g, @@system_time_zone AS s, TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW()) AS o',
    );
    const row = (rows as Array<{ g: string; s: string; o: number | string }>)[0]!;
    expect(f).toMatchObject({ sessionZone: row.g, globalZone: row.g, systemZone: row.s, offsetMinutes: Number(row.o) });
    expect(f.utcNow).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(await resolveServiceTimeZone(resolveConfig({ flags: {}, env: {} }), async () => db)).toEqual(
      zoneFromServer(f),
    );
    if (f.globalZone === 'SYSTEM' && f.systemZone === 'UTC') {
      expect(zoneFromServer(f)).toEqual({
        zone: 'UTC',
        source: 'fc-database',
        from: 'from the FC database: time_zone SYSTEM, system_time_zone UTC',
      });
    }
  });

  it("a session zone (set here on fcctl's own connection only) hides nothing: the offset is the global zone's", async () => {
    const before = await readServerZone(db);
    await db.query("SET SESSION time_zone = '+05:30'");
    const after = await readServerZone(db);
    expect(after).toMatchObject({
      sessionZone: '+05:30',
      globalZone: before.globalZone,
      systemZone: before.systemZone,
      offsetMinutes: before.offsetMinutes,
    });
    expect(zoneFromServer(after).zone).toBe(zoneFromServer(before).zone);
  });
});

describe("serviceZoneReader: a long-running service reads the server's zone again (issue 34 §9)", () => {
  let db: Db;
  beforeAll(async () => {
    db = await openDb('FC database', testMysqlUrl(), { connectionLimit: 1 });
  });
  afterAll(async () => {
    await db?.close();
  });

  it('reads when fresh or older than a minute, keeps the last zone through a failed read, fails without one', async () => {
    let now = 0;
    let opens = 0;
    let down = false;
    const fcDb = async () => {
      opens++;
      if (down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return db;
    };
    const changes: string[] = [];
    const read = serviceZoneReader(resolveConfig({ flags: {}, env: {} }), fcDb, {
      clock: () => now,
      onChange: (z, was) => changes.push(`${was?.zone ?? '-'}→${z.zone}`),
    });
    const server = zoneFromServer(await readServerZone(db));
    expect(await read(true)).toEqual(server);
    expect(opens).toBe(1);
    now = SERVICE_ZONE_MAX_AGE_MS - 1;
    await read();
    expect(opens).toBe(1);
    now = SERVICE_ZONE_MAX_AGE_MS;
    await read();
    expect(opens).toBe(2);
    await read(true);
    expect(opens).toBe(3);
    expect(changes).toEqual([`-→${server.zone}`]);
    down = true;
    now += SERVICE_ZONE_MAX_AGE_MS;
    expect(await read()).toEqual(server);
    await expect(read(true)).rejects.toThrow(/ECONNREFUSED/);
    const cold = serviceZoneReader(resolveConfig({ flags: {}, env: {} }), fcDb, { clock: () => now });
    await expect(cold()).rejects.toThrow(/ECONNREFUSED/);
  });

  it('a configured zone is never read from the server', async () => {
    const never = async (): Promise<Db> => {
      throw new Error('the FC database was opened');
    };
    const read = serviceZoneReader(
      resolveConfig({ flags: {}, env: { FCCTL_SERVICE_TIME_ZONE: 'Asia/Shanghai' } }),
      never,
      {
        clock: () => 0,
      },
    );
    expect((await read(true)).zone).toBe('Asia/Shanghai');
    expect((await read()).source).toBe('env');
  });
});
