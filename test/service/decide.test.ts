import { describe, expect, it } from 'vitest';
import { addSummary, emptySummary } from '../../src/lib/apply-command/resolve-unknown/decide.js';
import { BrokerBlockedError, BrokerUnreachableError } from '../../src/lib/amqp/connect.js';
import { EnvironmentError } from '../../src/lib/cli/exit.js';
import { outageTarget } from '../../src/lib/deliveries/send/follow.js';
import { confirmLabel, isConfirm, reasonLabel } from '../../src/lib/deliveries/send/metrics.js';
import {
  backoffMs,
  type ConnectionState,
  type ConnectionTrack,
  connectionStep,
  failureKind,
  resultLabel,
  health,
  listenAddress,
  MISCONFIG_RECHECK_MS,
  retryDelayMs,
} from '../../src/lib/service/decide.js';

const coded = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('backoff: 1 s doubling to 30 s, a fifth of jitter at most', () => {
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [4, 8000],
    [5, 16000],
    [6, 30000],
    [50, 30000],
    [0, 1000],
  ])('try %i waits %i ms with no jitter', (attempt, ms) => expect(backoffMs(attempt, () => 0)).toBe(ms));
  it('the jitter only shortens, by a fifth at most', () => {
    expect(backoffMs(3, () => 1)).toBe(3200);
    expect(backoffMs(10, () => 0.5)).toBe(27000);
  });
  it('a misconfiguration is looked at every 30 s whatever the count; an outage backs off', () => {
    expect(retryDelayMs('misconfigured', 1, () => 0)).toBe(MISCONFIG_RECHECK_MS);
    expect(retryDelayMs('outage', 1, () => 0)).toBe(1000);
  });
});

describe('failureKind: an outage is waited out, a misconfiguration re-checked', () => {
  it.each([
    [coded('ECONNREFUSED'), 'outage'],
    [new EnvironmentError('cannot connect to FC database', { cause: coded('PROTOCOL_CONNECTION_LOST') }), 'outage'],
    [coded('ER_SERVER_SHUTDOWN'), 'outage'],
    [coded('PROTOCOL_SEQUENCE_TIMEOUT', 'FC database: no answer in 10 s'), 'outage'],
    [coded('ETIMEDOUT', 'connect ETIMEDOUT'), 'outage'],
    [coded('ER_LOCK_WAIT_TIMEOUT'), 'outage'],
    // the database refusing the settings: waiting cures nothing (issue 34 §8)
    [coded('ER_ACCESS_DENIED_ERROR'), 'misconfigured'],
    [
      new EnvironmentError('cannot connect to FC database at mysql://u:***@h/fc: ER_ACCESS_DENIED_ERROR', {
        cause: coded('ER_ACCESS_DENIED_ERROR'),
      }),
      'misconfigured',
    ],
    [coded('ER_DBACCESS_DENIED_ERROR'), 'misconfigured'],
    [coded('ER_TABLEACCESS_DENIED_ERROR'), 'misconfigured'],
    [coded('ER_BAD_DB_ERROR'), 'misconfigured'],
    [new EnvironmentError('exchange fc.answer.delivery.v2 does not exist on the broker'), 'misconfigured'],
    [new EnvironmentError('return probe failed: no return'), 'misconfigured'],
    [new Error('something fcctl does not know'), 'outage'],
    [new BrokerBlockedError('the broker is blocking publishes (low on memory: a resource alarm)'), 'outage'],
    [
      new BrokerUnreachableError(
        'cannot connect to RabbitMQ at amqp://u:***@h/v: Socket closed abruptly during opening handshake',
      ),
      'outage',
    ],
  ])('%s → %s', (err, kind) => expect(failureKind(err)).toBe(kind));
});

describe('health: healthy while the loop steps, ready only when running', () => {
  const at = (state: Parameters<typeof health>[0]['state'], lastProgressAt = 0, detail: string | null = null) => ({
    state,
    lastProgressAt,
    detail,
  });
  it.each([
    [at('running'), { healthy: true, ready: true, reason: 'ok' }],
    [at('outage', 0, 'ECONNREFUSED'), { healthy: true, ready: false, reason: 'outage: ECONNREFUSED' }],
    [at('paused', 0, 'maintenance'), { healthy: true, ready: false, reason: 'paused: maintenance' }],
    [
      at('misconfigured', 0, 'publisher identity'),
      { healthy: true, ready: false, reason: 'misconfigured: publisher identity' },
    ],
    [at('starting'), { healthy: true, ready: false, reason: 'starting: connecting and checking' }],
    [at('draining'), { healthy: true, ready: false, reason: 'draining: stopping' }],
    [
      { ...at('running'), blocked: 'low on memory' },
      { healthy: true, ready: false, reason: 'blocked: the broker is blocking publishes (low on memory)' },
    ],
    [
      { ...at('outage', 0, 'the session ended'), blocked: 'low on disk space' },
      { healthy: true, ready: false, reason: 'blocked: the broker is blocking publishes (low on disk space)' },
    ],
    [
      { ...at('running'), blocked: null },
      { healthy: true, ready: true, reason: 'ok' },
    ],
    [
      { ...at('draining'), blocked: 'low on memory' },
      { healthy: true, ready: false, reason: 'draining: stopping' },
    ],
  ])('%j', (snapshot, expected) => expect(health(snapshot, 1000, 60_000)).toEqual(expected));
  it('stuck: no step for longer than stuckAfterMs is unhealthy (a restart helps), whatever the state', () => {
    expect(health(at('running', 0), 60_001, 60_000)).toMatchObject({ healthy: false, ready: false });
    expect(health(at('running', 0), 60_000, 60_000)).toMatchObject({ healthy: true });
  });
});

describe('listenAddress', () => {
  it.each([
    [':9464', { host: '127.0.0.1', port: 9464 }],
    ['0.0.0.0:9464', { host: '0.0.0.0', port: 9464 }],
    ['localhost:1', { host: 'localhost', port: 1 }],
    ['[::1]:9464', { host: '::1', port: 9464 }],
    ['9464', null],
    [':0', null],
    [':65536', null],
    [':x', null],
    ['a b:80', null],
    ['', null],
    [':', null],
    ['-a:80', null],
    [':9464 ', null],
  ])('%j → %j', (text, expected) => expect(listenAddress(text)).toEqual(expected));
});

describe('the follow relay names the connection a failure is of, and labels outcomes of bounded sets', () => {
  it.each([
    [coded('ER_SERVER_SHUTDOWN'), 'fc_database'],
    [Object.assign(new Error('x'), { sqlState: '08S01' }), 'fc_database'],
    [
      new EnvironmentError('cannot connect to FC database at mysql://u:***@h/fc: ECONNREFUSED', {
        cause: coded('ECONNREFUSED'),
      }),
      'fc_database',
    ],
    [
      new EnvironmentError('cannot connect to RabbitMQ at amqp://u:***@h/v: ECONNREFUSED', {
        cause: coded('ECONNREFUSED'),
      }),
      'broker',
    ],
    [new Error('Channel closed'), 'broker'],
  ])('%s → %s', (err, target) => expect(outageTarget(err)).toBe(target));
  it.each([
    [{ kind: 'ack', returned: false }, 'ack'],
    [{ kind: 'ack', returned: true }, 'returned'],
    [{ kind: 'nack' }, 'nack'],
    [{ kind: 'timeout' }, 'timeout'],
    [{ kind: 'closed' }, 'lost'],
    [{ kind: 'unsent' }, 'lost'],
    [{ kind: 'refused' }, 'lost'],
  ])('%j → %s', (o, label) => expect(confirmLabel(o)).toBe(label));
  it.each([
    [{ kind: 'ack', returned: false }, true],
    [{ kind: 'ack', returned: true }, true],
    [{ kind: 'nack' }, true],
    [{ kind: 'timeout' }, false],
    [{ kind: 'closed' }, false],
    [{ kind: 'error' }, false],
    [{ kind: 'refused' }, false],
  ])('%j is a confirm (has a claim-to-confirm latency): %s', (o, confirm) => expect(isConfirm(o)).toBe(confirm));
  it('a reason label is its code, never its detail', () => {
    expect(reasonLabel({ kind: 'failed', reason: 'NACK: the broker said no to event 123' })).toBe('NACK');
    expect(reasonLabel({ kind: 'accepted' })).toBe('');
  });
});

describe('addSummary: a follow resolver adds each pass into its total', () => {
  it('sums counts, merges reasons, keeps the last stop', () => {
    const total = emptySummary();
    addSummary(total, {
      ...emptySummary(),
      claimed: 3,
      done: 2,
      failed: 1,
      failedByReason: { LOOKUP_TIMEOUT: 1 },
      branches: { CREATED: 1 },
    });
    addSummary(total, {
      ...emptySummary(),
      claimed: 2,
      done: 2,
      failedByReason: {},
      branches: { CREATED: 2 },
      stoppedBy: 'flow-center-errors',
    });
    expect(total).toMatchObject({
      claimed: 5,
      done: 4,
      failed: 1,
      failedByReason: { LOOKUP_TIMEOUT: 1 },
      branches: { CREATED: 3 },
      stoppedBy: 'flow-center-errors',
    });
  });
});

describe('the one result vocabulary (issue 36 §3)', () => {
  it.each([
    [{ kind: 'accepted' }, 'done'],
    [{ kind: 'done' }, 'done'],
    [{ kind: 'failed', dead: false }, 'retry'],
    [{ kind: 'failed', dead: true }, 'dead'],
    [{ kind: 'dead' }, 'dead'],
    [{ kind: 'held' }, 'held'],
    [{ kind: 'revoked' }, 'revoked'],
    [{ kind: 'skipped' }, 'released'],
    [{ kind: 'skipped', reason: 'OUTCOME_UNKNOWN' }, 'released'],
    // the relay's write found another worker had moved the row on: the resolver's "stale", not a release
    [{ kind: 'skipped', reason: 'STALE' }, 'stale'],
    [{ kind: 'released' }, 'released'],
    [{ kind: 'stale' }, 'stale'],
    [{ kind: 'would-publish' }, null],
    [{ kind: 'would-post' }, null],
  ])('%j → %s', (r, label) => expect(resultLabel(r)).toBe(label));
});

describe('the connection state and its reconnects (issue 36 §4)', () => {
  /** The reconnects counted along a sequence of reports. */
  const along = (states: ConnectionState[]) => {
    let track: ConnectionTrack | null = null;
    return states.map((s) => {
      const step = connectionStep(track, s);
      track = step.track;
      return step.reconnect;
    });
  };
  it.each<[string, ConnectionState[], boolean[]]>([
    ['the first connect', ['connected'], [false]],
    ['down at start, then connected: a first connect', ['lost', 'lost', 'connected'], [false, false, false]],
    ['a pause and a resume', ['connected', 'closed', 'connected'], [false, false, false]],
    ['a loss and its recovery', ['connected', 'lost', 'connected'], [false, false, true]],
    [
      'a loss, a pause meanwhile, then connected',
      ['connected', 'lost', 'closed', 'connected'],
      [false, false, false, true],
    ],
    [
      'reported connected again: counted once',
      ['connected', 'lost', 'connected', 'connected'],
      [false, false, true, false],
    ],
    ['two losses', ['connected', 'lost', 'connected', 'lost', 'connected'], [false, false, true, false, true]],
  ])('%s', (_what, states, reconnects) => expect(along(states)).toEqual(reconnects));
});
