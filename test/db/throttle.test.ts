import { describe, expect, it } from 'vitest';
import { EnvironmentError, UsageError } from '../../src/lib/cli/exit.js';
import type { Db } from '../../src/lib/db/connect.js';
import {
  lagOf,
  loadLimitProblem,
  mergeMaxLoad,
  openThrottle,
  parseMaxLoad,
  readingsProblem,
  throttledSeconds,
  throttleReason,
  type ThrottleEvent,
  type ThrottleLimits,
  type ThrottleReadings,
} from '../../src/lib/db/throttle.js';

describe('parseMaxLoad: VAR=N[,VAR=N…]', () => {
  it.each([
    ['Threads_running=25', [{ variable: 'Threads_running', max: 25 }]],
    ['Threads_running=1', [{ variable: 'Threads_running', max: 1 }]],
    // gauges a counter prefix must not catch
    [
      'Innodb_row_lock_current_waits=3,Innodb_buffer_pool_pages_dirty=1000,Open_tables=900,Innodb_data_pending_reads=5',
      [
        { variable: 'Innodb_row_lock_current_waits', max: 3 },
        { variable: 'Innodb_buffer_pool_pages_dirty', max: 1000 },
        { variable: 'Open_tables', max: 900 },
        { variable: 'Innodb_data_pending_reads', max: 5 },
      ],
    ],
    [
      'Threads_running=25,Threads_connected=400',
      [
        { variable: 'Threads_running', max: 25 },
        { variable: 'Threads_connected', max: 400 },
      ],
    ],
    [
      ' Threads_running = 25 , Innodb_row_lock_current_waits=3 ',
      [
        { variable: 'Threads_running', max: 25 },
        { variable: 'Innodb_row_lock_current_waits', max: 3 },
      ],
    ],
    // a valid identifier MariaDB may not have: the first check against the database tells (exit 2)
    ['No_such_variable=1', [{ variable: 'No_such_variable', max: 1 }]],
    ['_x9=007', [{ variable: '_x9', max: 7 }]],
  ])('%s', (value, limits) => expect(parseMaxLoad(value)).toEqual(limits));

  it.each([
    ['Threads_running', /expected STATUS_VARIABLE=N/],
    ['', /expected STATUS_VARIABLE=N/],
    ['Threads_running=', /whole number ≥ 0 after Threads_running=, got ""/],
    ['=5', /status variable name before "="/],
    ['Threads_running=-1', /whole number ≥ 0/],
    ['x=1.5', /whole number ≥ 0 after x=, got "1.5"/],
    ['x=1e3', /whole number/],
    ['x=abc', /whole number/],
    ['x=1=2', /whole number/],
    ['x=9999999999999999', /whole number/],
    ['9x=1', /status variable name/],
    ['Threads-running=1', /status variable name/],
    ["x'y=1", /status variable name/],
    ['Threads_running=5,', /expected STATUS_VARIABLE=N/],
    [',Threads_running=5', /expected STATUS_VARIABLE=N/],
    ['Threads_running=5,threads_RUNNING=6', /given twice/],
    ['Threads_running:5', /expected STATUS_VARIABLE=N/],
    // never met: the check's own SHOW GLOBAL STATUS runs
    [
      'Threads_running=0',
      /^Threads_running=0 can never be met: Threads_running counts the check's own query; give 1 or more$/,
    ],
    ['threads_RUNNING=0,Threads_connected=5', /Threads_running=0 can never be met/],
    // counters only grow: once over, throttled for ever
    [
      'Uptime=100',
      /^Uptime only grows \(a counter since the server started\): once over 100 it would throttle for ever; limit a gauge such as Threads_running or Threads_connected$/,
    ],
    ['Questions=1', /Questions only grows/],
    ['Threads_running=5,Com_select=1000', /Com_select only grows/],
    ['bytes_received=1', /bytes_received only grows/],
    ['Innodb_rows_read=1', /Innodb_rows_read only grows/],
    ['Handler_read_rnd_next=1', /only grows/],
    ['Innodb_row_lock_waits=1', /only grows/],
    ['Max_used_connections=1', /only grows/],
    ['Opened_tables=1', /only grows/],
  ])('%j is refused', (value, message) => expect(() => parseMaxLoad(value)).toThrow(message));

  it('repeated --max-load: the limits add up, a variable in two of them is refused', () => {
    expect(
      mergeMaxLoad(
        parseMaxLoad('Threads_running=25'),
        parseMaxLoad('Threads_connected=400,Innodb_row_lock_current_waits=3'),
      ),
    ).toEqual([
      { variable: 'Threads_running', max: 25 },
      { variable: 'Threads_connected', max: 400 },
      { variable: 'Innodb_row_lock_current_waits', max: 3 },
    ]);
    expect(mergeMaxLoad([], parseMaxLoad('Threads_running=2'))).toEqual([{ variable: 'Threads_running', max: 2 }]);
    expect(() => mergeMaxLoad(parseMaxLoad('Threads_running=25'), parseMaxLoad('threads_running=30'))).toThrow(
      'threads_running is given twice (in two --max-load options)',
    );
  });

  it('loadLimitProblem: only Threads_running below 1 and counters', () => {
    expect(loadLimitProblem('Threads_running', 1)).toBeNull();
    expect(loadLimitProblem('Threads_connected', 0)).toBeNull();
    expect(loadLimitProblem('No_such_variable', 1)).toBeNull();
    expect(loadLimitProblem('Threads_running', 0)).toMatch(/can never be met/);
    expect(loadLimitProblem('UPTIME', 5)).toMatch(/UPTIME only grows/);
  });
});

const limits = (over: Partial<ThrottleLimits> = {}): ThrottleLimits => ({
  maxLoad: [{ variable: 'Threads_running', max: 25 }],
  maxLagSeconds: null,
  ...over,
});
const readings = (status: Record<string, number>, lag?: ThrottleReadings['lag']): ThrottleReadings => ({
  status: new Map(Object.entries(status)),
  ...(lag ? { lag } : {}),
});

describe('throttleReason: over a limit is > (pt-osc), every exceeded limit named', () => {
  const both = limits({
    maxLoad: [
      { variable: 'Threads_running', max: 25 },
      { variable: 'Threads_connected', max: 100 },
    ],
    maxLagSeconds: 10,
  });
  it.each<[string, ThrottleReadings, ThrottleLimits, string | null]>([
    ['under', readings({ threads_running: 3 }), limits(), null],
    ['at the limit is not over', readings({ threads_running: 25 }), limits(), null],
    ['over', readings({ threads_running: 37 }), limits(), 'Threads_running=37 > 25'],
    [
      'a limit of 0: one running thread is over',
      readings({ threads_running: 1 }),
      limits({ maxLoad: [{ variable: 'Threads_running', max: 0 }] }),
      'Threads_running=1 > 0',
    ],
    [
      'two over, in the order given',
      readings({ threads_running: 30, threads_connected: 101 }, { seconds: 11, io: 'Yes', sql: 'Yes' }),
      both,
      'Threads_running=30 > 25, Threads_connected=101 > 100, replica lag 11 s > 10 s',
    ],
    [
      'lag at the limit',
      readings({ threads_running: 1, threads_connected: 1 }, { seconds: 10, io: 'Yes', sql: 'Yes' }),
      both,
      null,
    ],
    [
      'lag over only',
      readings({}, { seconds: 600, io: 'Yes', sql: 'Yes' }),
      limits({ maxLoad: [], maxLagSeconds: 0 }),
      'replica lag 600 s > 0 s',
    ],
    [
      'replication stopped (NULL lag)',
      readings({}, { seconds: null, io: 'No', sql: 'Yes' }),
      limits({ maxLoad: [], maxLagSeconds: 60 }),
      'replication stopped (Seconds_Behind_Master NULL, IO No, SQL Yes)',
    ],
    [
      'lag read but not limited',
      readings({ threads_running: 1 }, { seconds: 999, io: 'Yes', sql: 'Yes' }),
      limits(),
      null,
    ],
    ['a variable not read is no reason (the first check refuses it)', readings({}), limits(), null],
  ])('%s', (_, r, l, reason) => expect(throttleReason(r, l)).toBe(reason));
});

describe('readingsProblem: what the first check refuses (exit 2)', () => {
  it('a variable the database does not have, or one that is not a number', () => {
    expect(readingsProblem(readings({ threads_running: 1 }), limits(), 'FC database')).toBeNull();
    expect(readingsProblem(readings({}), limits({ maxLoad: [{ variable: 'Nope', max: 1 }] }), 'FC database')).toBe(
      '--max-load: FC database has no status variable Nope (SHOW GLOBAL STATUS)',
    );
    expect(
      readingsProblem(
        readings({ ssl_cipher: Number.NaN }),
        limits({ maxLoad: [{ variable: 'Ssl_cipher', max: 1 }] }),
        'SH database',
      ),
    ).toBe('--max-load: Ssl_cipher of SH database is not a number');
  });
});

describe('lagOf: a SHOW REPLICA STATUS row', () => {
  it.each<[string, Record<string, unknown>, ReturnType<typeof lagOf>]>([
    [
      'MariaDB, running',
      { Seconds_Behind_Master: '3', Slave_IO_Running: 'Yes', Slave_SQL_Running: 'Yes' },
      { seconds: 3, io: 'Yes', sql: 'Yes' },
    ],
    [
      'MariaDB, stopped',
      { Seconds_Behind_Master: null, Slave_IO_Running: 'No', Slave_SQL_Running: 'No' },
      { seconds: null, io: 'No', sql: 'No' },
    ],
    [
      'MySQL 8 names',
      { Seconds_Behind_Source: 0, Replica_IO_Running: 'Yes', Replica_SQL_Running: 'Yes' },
      { seconds: 0, io: 'Yes', sql: 'Yes' },
    ],
    ['no lag column at all', {}, { seconds: null, io: '?', sql: '?' }],
  ])('%s', (_, row, lag) => expect(lagOf(row)).toEqual(lag));
});

/** A database that answers SHOW GLOBAL STATUS and SHOW REPLICA STATUS from scripted readings, one per query. */
function fakeDb(script: {
  status?: Array<Record<string, string>>;
  replica?: Array<Record<string, unknown> | null>;
  oldServer?: boolean;
}): Db & { queries: string[] } {
  const queries: string[] = [];
  let s = 0;
  let r = 0;
  const db = {
    label: 'fake',
    queries,
    query: async (sql: string) => {
      queries.push(sql);
      if (sql.startsWith('SHOW GLOBAL STATUS')) {
        const row = script.status![Math.min(s++, script.status!.length - 1)]!;
        return Object.entries(row).map(([Variable_name, Value]) => ({ Variable_name, Value }));
      }
      if (sql === 'SHOW REPLICA STATUS' && script.oldServer)
        throw Object.assign(new Error('syntax'), { code: 'ER_PARSE_ERROR' });
      const row = script.replica![Math.min(r++, script.replica!.length - 1)];
      return row ? [row] : [];
    },
  };
  return db as unknown as Db & { queries: string[] };
}

describe('openThrottle and wait (scripted database, fake clock)', () => {
  it('no limit: null, nothing read', async () => {
    const db = fakeDb({ status: [] });
    expect(
      await openThrottle(
        { maxLoad: [], maxLagSeconds: null },
        { db: async () => db, label: 'FC database', signal: new AbortController().signal },
      ),
    ).toBeNull();
    expect(db.queries).toEqual([]);
  });
  it('under the limit: ok at once, no event, one status read per wait', async () => {
    const db = fakeDb({ status: [{ Threads_running: '2' }] });
    const events: ThrottleEvent[] = [];
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'FC database',
      signal: new AbortController().signal,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    expect(await t.wait()).toBe('ok');
    expect(await t.wait()).toBe('ok');
    expect(events).toEqual([]);
    expect(t.throttledMs).toBe(0);
    expect(db.queries).toEqual(Array(3).fill('SHOW GLOBAL STATUS WHERE Variable_name IN (?)'));
  });
  it('a reading under the limits stands checkEveryMs: waits within it read nothing; one over is read again at once', async () => {
    let now = 0;
    const db = fakeDb({
      status: [{ Threads_running: '2' }, { Threads_running: '2' }, { Threads_running: '99' }, { Threads_running: '1' }],
    });
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'FC database',
      signal: new AbortController().signal,
      clock: () => now,
      checkEveryMs: 500,
      pollMs: 1,
    }))!;
    expect(db.queries).toHaveLength(1);
    now = 499;
    expect(await t.wait()).toBe('ok');
    expect(db.queries).toHaveLength(1);
    now = 500;
    expect(await t.wait()).toBe('ok');
    expect(db.queries).toHaveLength(2);
    now = 1000;
    expect(await t.wait()).toBe('ok'); // over (99), then under (1) on the next poll
    expect(db.queries).toHaveLength(4);
    expect(await t.wait()).toBe('ok');
    expect(db.queries).toHaveLength(4);
  });
  it('over: a start event with the reason, polls until under, an end event with the seconds; the time adds up', async () => {
    const db = fakeDb({
      status: [
        { Threads_running: '1' },
        { Threads_running: '40' },
        { Threads_running: '30' },
        { Threads_running: '5' },
      ],
    });
    const events: ThrottleEvent[] = [];
    // each status query takes 250 ms of this clock
    const clock = () => db.queries.length * 250;
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'SH database',
      signal: new AbortController().signal,
      clock,
      pollMs: 1,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    expect(await t.wait()).toBe('ok');
    expect(events).toEqual([
      { state: 'start', database: 'SH database', reason: 'Threads_running=40 > 25' },
      { state: 'end', database: 'SH database', reason: 'Threads_running=40 > 25', seconds: 0.5, aborted: false },
    ]);
    expect(t.throttledMs).toBe(500);
    expect(throttledSeconds([t, null, undefined, t])).toBe(1);
  });
  it('runners waiting at once share one wait: one start and one end, the time counted once', async () => {
    const db = fakeDb({
      status: [
        { Threads_running: '1' },
        { Threads_running: '40' },
        { Threads_running: '40' },
        { Threads_running: '2' },
      ],
    });
    const events: ThrottleEvent[] = [];
    const clock = () => db.queries.length * 100;
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'SH database',
      signal: new AbortController().signal,
      clock,
      pollMs: 1,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    expect(await Promise.all([t.wait(), t.wait(), t.wait()])).toEqual(['ok', 'ok', 'ok']);
    expect(events.map((e) => e.state)).toEqual(['start', 'end']);
    expect(db.queries).toHaveLength(4);
    expect(t.throttledMs).toBe(200);
  });
  it('a user without the privilege to read the replica status: exit 3 naming it', async () => {
    const db = fakeDb({ status: [{ Threads_running: '1' }] });
    db.query = async () => {
      throw Object.assign(
        new Error('Access denied; you need (at least one of) the SUPER, SLAVE MONITOR privilege(s)'),
        { code: 'ER_SPECIFIC_ACCESS_DENIED_ERROR' },
      );
    };
    await expect(
      openThrottle(
        { maxLoad: [], maxLagSeconds: 5 },
        { db: async () => db, label: 'FC database', signal: new AbortController().signal },
      ),
    ).rejects.toThrow(
      /^--max-lag: FC database refuses SHOW REPLICA STATUS: its user needs the REPLICA MONITOR privilege/,
    );
  });
  it('the stop signal ends a wait at once: aborted, with its end event', async () => {
    const db = fakeDb({ status: [{ Threads_running: '1' }, { Threads_running: '99' }] });
    const ac = new AbortController();
    const events: ThrottleEvent[] = [];
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'FC database',
      signal: ac.signal,
      pollMs: 60_000,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    const started = Date.now();
    const waiting = t.wait();
    setTimeout(() => ac.abort(new Error('stopped by SIGTERM')), 50);
    expect(await waiting).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(events.map((e) => e.state)).toEqual(['start', 'end']);
    expect(events[1]).toMatchObject({ aborted: true });
    // an aborted signal: no read at all
    expect(await t.wait()).toBe('aborted');
  });
  it('a deadline ends a wait at it (deadline), with its end event; a deadline already past reads nothing', async () => {
    const db = fakeDb({ status: [{ Threads_running: '1' }, { Threads_running: '99' }] });
    const events: ThrottleEvent[] = [];
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'FC database',
      signal: new AbortController().signal,
      pollMs: 60_000,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    const started = Date.now();
    expect(await t.wait({ deadline: started + 150 })).toBe('deadline');
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(140);
    expect(took).toBeLessThan(2000);
    expect(events.map((e) => e.state)).toEqual(['start', 'end']);
    expect(events[1]).toMatchObject({ aborted: true, endedBy: 'deadline' });
    const reads = db.queries.length;
    expect(await t.wait({ deadline: Date.now() - 1 })).toBe('deadline');
    expect(db.queries).toHaveLength(reads);
  });
  it('the pause switch is read on every poll while throttled: a pause ends the wait (paused); not read while under the limits', async () => {
    const db = fakeDb({ status: [{ Threads_running: '1' }, { Threads_running: '99' }] });
    const events: ThrottleEvent[] = [];
    let now = 0;
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'FC database',
      signal: new AbortController().signal,
      clock: () => now,
      pollMs: 1,
      checkEveryMs: 500,
      onEvent: (e) => events.push(e),
    }))!;
    let probes = 0;
    const paused = async () => ++probes >= 3;
    expect(await t.wait({ paused })).toBe('ok'); // the first check's reading stands: no probe
    expect(probes).toBe(0);
    now = 1000;
    expect(await t.wait({ paused })).toBe('paused');
    expect(probes).toBe(3); // at the start of the wait, then after each poll
    expect(events.at(-1)).toMatchObject({ state: 'end', aborted: true, endedBy: 'paused' });
  });
  it('runners sharing a wait leave it each on its own pause switch or deadline; the others wait on until under', async () => {
    const db = fakeDb({
      status: [{ Threads_running: '1' }, ...Array(6).fill({ Threads_running: '99' }), { Threads_running: '2' }],
    });
    const events: ThrottleEvent[] = [];
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'SH database',
      signal: new AbortController().signal,
      pollMs: 5,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    let probes = 0;
    const results = await Promise.all([
      t.wait({ paused: async () => ++probes >= 2 }),
      t.wait({ deadline: Date.now() + 10 }),
      t.wait(),
    ]);
    expect(results).toEqual(['paused', 'deadline', 'ok']);
    expect(events.map((e) => e.state)).toEqual(['start', 'end']);
    expect(events[1]).toMatchObject({ aborted: false });
  });
  it('a pause switch that fails fails its own wait only', async () => {
    const db = fakeDb({
      status: [
        { Threads_running: '1' },
        { Threads_running: '99' },
        { Threads_running: '99' },
        { Threads_running: '2' },
      ],
    });
    const t = (await openThrottle(limits(), {
      db: async () => db,
      label: 'SH database',
      signal: new AbortController().signal,
      pollMs: 1,
      checkEveryMs: 0,
    }))!;
    const failing = t.wait({ paused: async () => Promise.reject(new Error('pause table gone')) });
    const other = t.wait();
    await expect(failing).rejects.toThrow('pause table gone');
    expect(await other).toBe('ok');
  });
  it('the first check refuses a variable the database does not have (exit 2) and a non-replica for --max-lag (exit 3)', async () => {
    const signal = new AbortController().signal;
    const none = fakeDb({ status: [{}] });
    await expect(
      openThrottle(limits({ maxLoad: [{ variable: 'Nope', max: 1 }] }), {
        db: async () => none,
        label: 'FC database',
        signal,
      }),
    ).rejects.toThrow(UsageError);
    const primary = fakeDb({ status: [{ Threads_running: '1' }], replica: [null] });
    const refused = openThrottle(limits({ maxLagSeconds: 5 }), {
      db: async () => primary,
      label: 'FC database',
      signal,
    });
    await expect(refused).rejects.toThrow(EnvironmentError);
    await expect(refused).rejects.toThrow(
      '--max-lag: FC database is not a replica (SHOW REPLICA STATUS is empty); give --replica-url, or leave --max-lag out',
    );
  });
  it('lag: read on the replica when one is given (SHOW SLAVE STATUS on an older server); stopped replication throttles', async () => {
    const read = fakeDb({ status: [{ Threads_running: '1' }] });
    const replica = fakeDb({
      oldServer: true,
      replica: [
        { Seconds_Behind_Master: '0', Slave_IO_Running: 'Yes', Slave_SQL_Running: 'Yes' },
        { Seconds_Behind_Master: null, Slave_IO_Running: 'Yes', Slave_SQL_Running: 'No' },
        { Seconds_Behind_Master: '2', Slave_IO_Running: 'Yes', Slave_SQL_Running: 'Yes' },
      ],
    });
    const events: ThrottleEvent[] = [];
    const t = (await openThrottle(limits({ maxLagSeconds: 5 }), {
      db: async () => read,
      label: 'FC database',
      replica: { db: async () => replica, label: 'replica database r:3306/fc' },
      signal: new AbortController().signal,
      pollMs: 1,
      checkEveryMs: 0,
      onEvent: (e) => events.push(e),
    }))!;
    expect(await t.wait()).toBe('ok');
    expect(events[0]).toEqual({
      state: 'start',
      database: 'FC database',
      reason: 'replication stopped (Seconds_Behind_Master NULL, IO Yes, SQL No)',
    });
    expect(replica.queries.filter((q) => q === 'SHOW SLAVE STATUS')).toHaveLength(3);
    expect(read.queries.every((q) => q.startsWith('SHOW GLOBAL STATUS'))).toBe(true);
  });
});
