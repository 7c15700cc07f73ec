import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { checkTimeZone, instantOffset, offsetAt, offsetOfMinutes } from '../../src/lib/time/zone.js';

/**
 * The offsets of wall-clock times, as Java's `ZonedDateTime.of(localDateTime, zone)` resolves them
 * (SPEC §10, the producer is a Java service). Expected values were taken from Java 25 (tzdata
 * 2026a); in a gap Java moves the wall time forward and prints the offset after it — fcctl keeps the
 * stored wall time and gives the offset before the gap: the same instant (`javaInstant`).
 */
const OFFSETS: ReadonlyArray<readonly [zone: string, local: string, offset: string, note: string]> = [
  ['UTC', '2026-10-21 10:05:00', '+00:00', 'UTC is +00:00, never Z'],
  ['Etc/UTC', '2026-01-01 00:00:00', '+00:00', 'an alias of UTC'],
  ['Asia/Shanghai', '2026-10-21 10:05:00', '+08:00', "seed 000's example"],
  ['Asia/Shanghai', '2026-07-01 00:00:00', '+08:00', 'no DST today'],
  ['Asia/Shanghai', '1988-07-01 12:00:00', '+09:00', 'China had DST 1986-1991'],
  ['Asia/Shanghai', '1988-04-10 02:30:00', '+08:00', 'China 1988: the gap (Java: 03:30+09:00)'],
  ['Asia/Shanghai', '1988-09-11 01:30:00', '+09:00', 'China 1988: the overlap takes the earlier offset'],
  ['Asia/Shanghai', '1900-01-01 00:00:00', '+08:05:43', 'local mean time keeps its seconds, as Java prints them'],
  ['America/New_York', '2026-01-15 12:00:00', '-05:00', 'winter'],
  ['America/New_York', '2026-07-01 12:00:00', '-04:00', 'summer'],
  ['America/New_York', '2026-03-08 01:59:59', '-05:00', 'the last second before the gap'],
  ['America/New_York', '2026-03-08 02:00:00', '-05:00', 'the gap starts (Java: 03:00-04:00)'],
  ['America/New_York', '2026-03-08 02:30:00', '-05:00', 'inside the gap (Java: 03:30-04:00)'],
  ['America/New_York', '2026-03-08 02:59:59', '-05:00', 'the gap ends (Java: 03:59:59-04:00)'],
  ['America/New_York', '2026-03-08 03:00:00', '-04:00', 'after the gap'],
  ['America/New_York', '2026-11-01 00:59:59', '-04:00', 'before the overlap'],
  ['America/New_York', '2026-11-01 01:00:00', '-04:00', 'the overlap starts: the earlier offset'],
  ['America/New_York', '2026-11-01 01:30:00', '-04:00', 'inside the overlap: the earlier offset'],
  ['America/New_York', '2026-11-01 01:59:59', '-04:00', 'the overlap ends: the earlier offset'],
  ['America/New_York', '2026-11-01 02:00:00', '-05:00', 'after the overlap'],
  ['Asia/Kolkata', '2026-10-21 10:05:00', '+05:30', 'a half-hour zone'],
  ['Asia/Kolkata', '2026-03-08 02:30:00', '+05:30', "New York's gap is no gap here"],
  ['Asia/Kathmandu', '2026-10-21 10:05:00', '+05:45', 'a quarter-hour zone'],
  ['Australia/Lord_Howe', '2026-10-04 01:59:59', '+10:30', 'a half-hour DST: before the gap'],
  ['Australia/Lord_Howe', '2026-10-04 02:15:00', '+10:30', 'a half-hour gap inside one hour (Java: 02:45+11:00)'],
  ['Australia/Lord_Howe', '2026-10-04 02:45:00', '+11:00', 'after the half-hour gap, same hour'],
  ['Australia/Lord_Howe', '2026-04-05 01:45:00', '+11:00', 'a half-hour overlap: the earlier offset'],
  ['Australia/Lord_Howe', '2026-04-05 02:00:00', '+10:30', 'after the half-hour overlap'],
  ['Europe/London', '2026-03-29 01:30:00', '+00:00', 'the gap (Java: 02:30+01:00)'],
  ['Europe/London', '2026-10-25 01:30:00', '+01:00', 'the overlap: the earlier offset'],
  ['Pacific/Apia', '2011-12-30 12:00:00', '-10:00', 'a whole day skipped (Java: 2011-12-31 12:00+14:00)'],
  ['Pacific/Apia', '2011-12-31 00:00:00', '+14:00', 'after the skipped day'],
  ['Pacific/Chatham', '2026-09-27 03:10:00', '+12:45', "a 45-minute zone's gap (Java: 04:10+13:45)"],
  ['asia/shanghai', '2026-10-21 10:05:00', '+08:00', 'Intl reads names without regard to case'],
  ['+08:00', '2026-10-21 10:05:00', '+08:00', 'a fixed offset'],
  ['-05:30', '2026-03-08 02:30:00', '-05:30', 'a fixed offset has no gap'],
  ['-00:00', '2026-10-21 10:05:00', '+00:00', 'negative zero is +00:00'],
  ['+18:00', '2026-10-21 10:05:00', '+18:00', "Java's largest offset"],
  ['-18:00', '2026-10-21 10:05:00', '-18:00', "Java's smallest offset"],
  ['America/New_York', '2026-11-01T01:30:00', '-04:00', 'a T between date and time'],
];

/** The instant Java's ZonedDateTime.of gives (epoch seconds), for the rows above that are in a gap. */
const JAVA_INSTANTS: ReadonlyArray<readonly [zone: string, local: string, epochSeconds: number]> = [
  ['America/New_York', '2026-03-08 02:00:00', 1772953200],
  ['America/New_York', '2026-03-08 02:30:00', 1772955000],
  ['America/New_York', '2026-11-01 01:30:00', 1793511000],
  ['Australia/Lord_Howe', '2026-10-04 02:15:00', 1791042300],
  ['Europe/London', '2026-03-29 01:30:00', 1774747800],
  ['Pacific/Apia', '2011-12-30 12:00:00', 1325282400],
  ['Asia/Shanghai', '1988-04-10 02:30:00', 576613800],
];

const secondsOf = (offset: string) => {
  const m = /^([+-])(\d\d):(\d\d)(?::(\d\d))?$/.exec(offset)!;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4] ?? 0));
};

describe('offsetAt: the offset of a wall-clock time in a zone', () => {
  it.each(OFFSETS)('%s %s → %s (%s)', (zone, local, offset) => {
    expect(offsetAt(local, zone)).toBe(offset);
    // cached: the same answer again
    expect(offsetAt(local, zone)).toBe(offset);
  });

  it.each(JAVA_INSTANTS)('%s %s: the wall time and offset name the instant Java picks', (zone, local, epochSeconds) => {
    const wall = Date.parse(`${local.replace(' ', 'T')}Z`) / 1000;
    expect(wall - secondsOf(offsetAt(local, zone))).toBe(epochSeconds);
  });

  it('an hour holding a transition is resolved per second, whatever was asked first', () => {
    const hour = ['2026-10-04 02:59:59', '2026-10-04 02:00:00', '2026-10-04 02:29:59', '2026-10-04 02:30:00'];
    expect(hour.map((l) => offsetAt(l, 'Australia/Lord_Howe'))).toEqual(['+11:00', '+10:30', '+10:30', '+11:00']);
  });

  it("never reads the process's TZ", () => {
    const saved = process.env['TZ'];
    try {
      for (const tz of ['UTC', 'Asia/Shanghai', 'America/New_York', 'Pacific/Kiritimati']) {
        process.env['TZ'] = tz;
        expect([
          offsetAt('2026-06-01 12:00:00', 'Asia/Kolkata'),
          offsetAt('2026-06-01 12:00:00', 'UTC'),
          offsetAt('2026-03-08 02:30:00', 'America/New_York'),
        ]).toEqual(['+05:30', '+00:00', '-05:00']);
      }
    } finally {
      if (saved === undefined) delete process.env['TZ'];
      else process.env['TZ'] = saved;
    }
  });

  it.each(['', '2026-10-21', '2026-10-21 10:05', '21.10.2026 10:05:00', 'abc'])(
    'refuses %j: not a DATETIME',
    (local) => {
      expect(() => offsetAt(local, 'UTC')).toThrow(/not a DATETIME/);
    },
  );

  it('refuses a zone that was not checked', () => {
    expect(() => offsetAt('2026-10-21 10:05:00', 'Mars/Olympus')).toThrow(
      /time zone "Mars\/Olympus" is not an IANA time zone name/,
    );
  });

  it('is cheap: once a zone and hour are known, a call asks Intl nothing (cached: no timing in a unit test)', () => {
    const locals = Array.from(
      { length: 1000 },
      (_, i) => `2026-10-${String(1 + (i % 28)).padStart(2, '0')} ${String(i % 24).padStart(2, '0')}:05:00`,
    );
    const first = locals.map((l) => offsetAt(l, 'America/New_York'));
    const asked = vi.spyOn(Intl.DateTimeFormat.prototype, 'formatToParts');
    try {
      for (let i = 0; i < 20_000; i++) expect(offsetAt(locals[i % 1000]!, 'America/New_York')).toBe(first[i % 1000]);
      expect(asked).not.toHaveBeenCalled();
    } finally {
      asked.mockRestore();
    }
  });
});

describe('checkTimeZone: an IANA name Intl knows, or a fixed offset', () => {
  it.each([
    ['Asia/Shanghai', 'Asia/Shanghai'],
    ['UTC', 'UTC'],
    ['America/New_York', 'America/New_York'],
    ['Asia/Kolkata', 'Asia/Kolkata'],
    ['Etc/GMT-8', 'Etc/GMT-8'],
    ['EST', 'EST'],
    ['CET', 'CET'],
    ['PRC', 'PRC'],
    ['+08:00', '+08:00'],
    ['-05:30', '-05:30'],
    ['-00:00', '+00:00'],
    ['+18:00', '+18:00'],
  ])('accepts %j as %j', (value, zone) => {
    expect(checkTimeZone(value)).toEqual({ ok: true, zone });
  });

  it.each([
    ['Mars/Olympus', /not an IANA time zone name/],
    ['Asia/Shanghai ', /not an IANA time zone name/],
    [' UTC', /not an IANA time zone name/],
    ['Asia/Shanghai\u0000', /not an IANA time zone name/],
    ["'; DROP TABLE answer; --", /not an IANA time zone name/],
    ['Z', /not an IANA time zone name/],
    ['08:00', /not an IANA time zone name/],
    ['CST', /abbreviation/],
    ['cst', /abbreviation/],
    ['IST', /abbreviation/],
    ['BST', /abbreviation/],
    ['PST', /abbreviation/],
    ['+25:00', /not an offset/],
    ['+18:01', /not an offset/],
    ['+08:60', /not an offset/],
    ['+8:00', /not an offset/],
    ['+08', /not an offset/],
    ['+0800', /not an offset/],
    ['+08:00:00', /not an offset/],
    ['-', /not an offset/],
    ['+Asia/Shanghai', /not an offset/],
    ['', /is empty/],
  ])('refuses %j', (value, reason) => {
    const r = checkTimeZone(value);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });
});

describe('instantOffset and offsetOfMinutes', () => {
  it.each([
    [Date.UTC(2026, 6, 1, 12), 'America/New_York', '-04:00'],
    [Date.UTC(2026, 0, 1, 12), 'America/New_York', '-05:00'],
    // 06:30 UTC on the day clocks go back is 01:30 the second time, at -05:00
    [Date.UTC(2026, 10, 1, 6, 30), 'America/New_York', '-05:00'],
    [Date.UTC(2026, 10, 1, 5, 30), 'America/New_York', '-04:00'],
    [Date.UTC(2026, 9, 21, 2, 5), 'Asia/Shanghai', '+08:00'],
    [Date.UTC(2026, 9, 21, 2, 5, 0, 999), 'UTC', '+00:00'],
    [Date.UTC(2026, 9, 21), '-05:30', '-05:30'],
  ])('%s in %s → %s', (ms, zone, offset) => {
    expect(instantOffset(ms, zone)).toBe(offset);
  });

  it.each([
    [0, '+00:00'],
    [480, '+08:00'],
    [-330, '-05:30'],
    [345, '+05:45'],
    [-720, '-12:00'],
    [840, '+14:00'],
  ])('%i minutes → %s', (minutes, offset) => {
    expect(offsetOfMinutes(minutes)).toBe(offset);
  });
});

describe("the module's types", () => {
  it('takes and gives strings; a check is a tagged result', () => {
    expectTypeOf(offsetAt).toEqualTypeOf<(local: string, zone: string) => string>();
    expectTypeOf(checkTimeZone).returns.toEqualTypeOf<
      { readonly ok: true; readonly zone: string } | { readonly ok: false; readonly reason: string }
    >();
    expectTypeOf(instantOffset).parameters.toEqualTypeOf<[ms: number, zone: string]>();
  });
});
