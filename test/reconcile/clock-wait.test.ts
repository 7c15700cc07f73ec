import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/lib/db/connect.js';
import { runReconcile } from '../../src/lib/reconcile/run/run.js';
import { takeTaskStart, waitForFcClock } from '../../src/lib/reconcile/run/store.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'clock-wait' });

/**
 * A database whose clock is "past" a second only from the `passAt`-th poll on (Infinity: never);
 * `onPoll` runs at each poll (to send the stop signal while waiting).
 */
function fakeClock(passAt: number, onPoll: (n: number) => void = () => undefined): { db: Db; polls: () => number } {
  let polls = 0;
  const db = {
    label: 'fake',
    query: async (sql: string) => {
      if (sql.startsWith('SELECT CAST(NOW() AS CHAR)')) return [{ t: '2026-11-30 09:00:00', u: '2026-11-30 01:00:00' }];
      polls++;
      onPoll(polls);
      return [{ passed: polls >= passAt ? 1 : 0 }];
    },
  } as unknown as Db;
  return { db, polls: () => polls };
}

describe('waitForFcClock (an FC clock a little behind SH never refuses a run)', () => {
  it("waits until the FC UTC clock has passed the task start's second", async () => {
    const c = fakeClock(4);
    expect(await waitForFcClock(c.db, '2026-11-30 01:00:00')).toBe('passed');
    expect(c.polls()).toBe(4);
  });

  it('a clock still behind after 5 s is a real inversion: exit 4 before anything is scanned', {
    timeout: 15_000,
  }, async () => {
    const c = fakeClock(Infinity);
    await expect(waitForFcClock(c.db, '2026-11-30 01:00:00')).rejects.toMatchObject({
      exitCode: 4,
      message: expect.stringMatching(
        /^the FC database's clock \(UTC\) is still not past the task start 2026-11-30 01:00:00 UTC \(SH database clock\) after 5 s/,
      ),
    });
    expect(c.polls()).toBe(100);
  });

  it('the stop signal ends the wait: aborted, not an error', async () => {
    const ac = new AbortController();
    const c = fakeClock(Infinity, (n) => n === 2 && ac.abort());
    expect(await waitForFcClock(c.db, '2026-11-30 01:00:00', ac.signal)).toBe('aborted');
    expect(c.polls()).toBe(2);
  });
});

describe('takeTaskStart', () => {
  it('returns the SH NOW() and UTC_TIMESTAMP() of one instant once its clock has passed that second', async () => {
    const c = fakeClock(2);
    expect(await takeTaskStart(c.db)).toEqual({ local: '2026-11-30 09:00:00', utc: '2026-11-30 01:00:00' });
  });

  it('a stop signal while it waits is an interrupt (null), not "the clock did not advance" (was exit 3)', async () => {
    const ac = new AbortController();
    const c = fakeClock(Infinity, (n) => n === 3 && ac.abort());
    expect(await takeTaskStart(c.db, ac.signal)).toBeNull();
    expect(c.polls()).toBe(3);
  });
});

describe('runReconcile stopped while it waits for its task start', () => {
  test('is a stop (exit 1, stoppedBy "signal" in the command), with no run recorded', async ({ tmp: dir }) => {
    const ac = new AbortController();
    const sh = fakeClock(Infinity, (n) => n === 2 && ac.abort());
    const r = await runReconcile(
      {
        schId: '5',
        formUuid: 'f0000000-0000-4000-8000-000000000000',
        outDir: dir,
        size: 200,
        restart: false,
        fcDatabase: 'x:3306/fc',
        shDatabase: 'x:3306/sh',
      },
      {
        fcDb: async () => {
          throw new Error('the FC database is not used before the task start');
        },
        shDb: async () => sh.db,
        signal: ac.signal,
      },
    );
    expect(r).toMatchObject({ kind: 'stopped', phase: 'task-start', reason: 'signal', run: null, resumed: false });
    expect(existsSync(join(dir, 'run.json'))).toBe(false);
  });
});
