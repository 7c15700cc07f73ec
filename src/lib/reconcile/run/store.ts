/** store.ts: this verb's executed statements (from sql.ts) and their rows mapped to domain rows. */
import { databaseNow } from '../../db/clock.js';
import { SafetyError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import { selectClockPassed, selectUtcClockPassed } from '../sql.js';

/** Polls of a database clock: every 50 ms, at most 100 times (5 s). */
const CLOCK_POLLS = 100;
const CLOCK_POLL_MS = 50;

/**
 * Waits until `statement` (one `passed` column, 0 or 1) says a database's clock is past a second:
 * 'passed', 'aborted' (the stop signal; checked between polls) or 'timeout'.
 */
async function waitForClock(
  db: Db,
  statement: Statement,
  signal: AbortSignal | undefined,
): Promise<'passed' | 'aborted' | 'timeout'> {
  for (let i = 0; i < CLOCK_POLLS; i++) {
    const [{ passed } = { passed: 0 }] = await db.query<{ passed: number | string }>(statement.sql, statement.params);
    if (Number(passed) === 1) return 'passed';
    if (signal?.aborted) return 'aborted';
    await new Promise((r) => setTimeout(r, CLOCK_POLL_MS));
  }
  return 'timeout';
}

/**
 * The task start: the SH database's NOW() and UTC_TIMESTAMP() (one instant), after waiting for its
 * clock to pass that second, so that every row the scans can see created after the start has a
 * createTime strictly after it (DATETIME has whole seconds; without the wait, a row created in the
 * same second would be "not after" the start). Null when the stop signal ended the wait: an
 * interrupt, not an error (exit 1).
 * @example const taskStart = await takeTaskStart(shDb) // { local: '2026-11-30 09:00:00', utc: '2026-11-30 01:00:00' }
 */
export async function takeTaskStart(db: Db, signal?: AbortSignal): Promise<{ local: string; utc: string } | null> {
  const t = await databaseNow(db).catch((err: Error) => {
    throw new Error(`the SH database's clock: ${err.message}`);
  });
  const waited = await waitForClock(db, selectClockPassed(t.local), signal);
  if (waited === 'passed') return t;
  if (waited === 'aborted') return null;
  throw new Error("the SH database's clock did not advance past the task start");
}

/**
 * Before the FC scan begins: waits (at most 5 s, stopped by the signal) until the FC database's
 * UTC clock has passed the task start's UTC second, so that an FC clock a little behind SH's never
 * makes the FC scan's start "not after" the task start. A clock still behind after the wait is a
 * real inversion: exit 4 before anything is scanned.
 * @example await waitForFcClock(fcDb, '2026-11-30 01:00:00', signal) // 'passed'
 */
export async function waitForFcClock(
  db: Db,
  taskStartUtc: string,
  signal?: AbortSignal,
): Promise<'passed' | 'aborted'> {
  const waited = await waitForClock(db, selectUtcClockPassed(taskStartUtc), signal);
  if (waited !== 'timeout') return waited;
  throw new SafetyError(
    `the FC database's clock (UTC) is still not past the task start ${taskStartUtc} UTC (SH database clock) after ${(CLOCK_POLLS * CLOCK_POLL_MS) / 1000} s: the FC clock is behind the SH clock by more than that; fix the clocks (NTP) before reconciling`,
  );
}
