import { describe, expect, it } from 'vitest';
import {
  countResult,
  emptySummary,
  leaseProblem,
  progressReason,
  rowEvent,
  sendExitCode,
  sendRunOutcome,
  sendStopError,
  summarizeSend,
  vhostProblem,
} from '../../src/lib/deliveries/send/decide.js';
import type { RowResult, SendSummary } from '../../src/lib/deliveries/send/types.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';

const summary = (over: Partial<SendSummary> = {}): SendSummary => ({ ...emptySummary(), ...over });

describe('sendExitCode: how a finished send ends (SPEC §2)', () => {
  const table: Array<[string, Partial<SendSummary>, number]> = [
    ['drained, all accepted', { claimed: 3, accepted: 3 }, 0],
    ['held, revoked and skipped rows are not failures', { held: 1, revoked: 1, skipped: 1 }, 0],
    ['a failed row', { failed: 1 }, 1],
    ['a DEAD row', { dead: 1 }, 1],
    ['a signal ended it early', { stoppedBy: 'signal' }, 1],
    ['max-rows and max-seconds are a normal end', { stoppedBy: 'max-seconds' }, 0],
    ['broker lost', { stoppedBy: 'broker-lost', brokerLost: 'ECONNRESET', failed: 2 }, 3],
    ['broker blocked', { stoppedBy: 'broker-blocked', brokerBlocked: 'low on memory' }, 3],
    ['publisher identity', { stoppedBy: 'publisher-identity', publisherIdentity: 'publisher identity: x' }, 3],
  ];
  it.each(table)('%s → %i', (_, over, code) => expect(sendExitCode(summary(over))).toBe(code));
});

describe('sendStopError: the error line after the summary', () => {
  const table: Array<[string, Partial<SendSummary>, string | null]> = [
    ['drained', {}, null],
    ['signal', { stoppedBy: 'signal' }, null],
    [
      'publisher identity, as reported',
      { stoppedBy: 'publisher-identity', publisherIdentity: 'publisher identity: bad key; claimed no more rows' },
      'publisher identity: bad key; claimed no more rows',
    ],
    [
      'broker refusing',
      { stoppedBy: 'broker-refusing', brokerLost: 'ACCESS_REFUSED' },
      'the broker takes no message on fc.answer.delivery.v2 any more (ACCESS_REFUSED); unconfirmed rows were released without a retry charged',
    ],
    [
      'broker lost',
      { stoppedBy: 'broker-lost', brokerLost: 'ECONNRESET' },
      'broker connection lost during the run (ECONNRESET); unconfirmed rows were marked FAILED and will be resent',
    ],
    [
      'broker blocked',
      { stoppedBy: 'broker-blocked', brokerBlocked: 'low on memory' },
      'the broker is blocking publishes (low on memory: a resource alarm); stopped claiming, unconfirmed rows were marked FAILED and will be resent',
    ],
  ];
  it.each(table)('%s', (_, over, line) => expect(sendStopError(summary(over))).toBe(line));
});

describe('summarizeSend: the summary, key by key', () => {
  const s = summary({
    claimed: 10,
    published: 9,
    accepted: 8,
    failed: 1,
    dead: 0,
    revoked: 1,
    held: 0,
    skipped: 0,
    wouldPublish: 0,
    stale: 0,
    brokerRefusals: 0,
    failedByReason: { NACK: 1 },
  });
  it('keeps the order cron parsers and the README show; no wouldPublish outside a dry run', () => {
    expect(Object.keys(summarizeSend(s, { dryRun: false }, 2, 'Asia/Shanghai'))).toEqual([
      'command',
      'exitCode',
      'dryRun',
      'claimed',
      'published',
      'accepted',
      'failed',
      'dead',
      'revoked',
      'held',
      'skipped',
      'stale',
      'brokerRefusals',
      'failedByReason',
      'released',
      'releasedByReason',
      'stoppedBy',
      'serviceTimeZone',
      'seconds',
      'rowsPerSecond',
      'throttledSeconds',
    ]);
  });
  it('a dry run reports wouldPublish after skipped', () => {
    const keys = Object.keys(summarizeSend(summary({ wouldPublish: 4 }), { dryRun: true }, 1, '+08:00'));
    expect(keys.slice(keys.indexOf('skipped'), keys.indexOf('skipped') + 3)).toEqual([
      'skipped',
      'wouldPublish',
      'stale',
    ]);
    expect(summarizeSend(summary({ wouldPublish: 4 }), { dryRun: true }, 1, '+08:00')).toMatchObject({
      dryRun: true,
      wouldPublish: 4,
      exitCode: 0,
    });
  });
  it.each([
    [2, 2, 5],
    [0.04, 0, 250],
    [3.26, 3.3, 3],
    [0, 0, 0],
  ])('%d s → seconds %d, rate from the unrounded time: %d rows/s', (seconds, rounded, rate) => {
    expect(summarizeSend(s, { dryRun: false }, seconds, 'UTC')).toMatchObject({
      command: 'deliveries send',
      exitCode: 1,
      seconds: rounded,
      rowsPerSecond: rate,
      serviceTimeZone: 'UTC',
      failedByReason: { NACK: 1 },
    });
  });
});

describe('sendRunOutcome: what the metrics file counts', () => {
  it('rows by result, and an interrupt', () => {
    expect(
      sendRunOutcome(
        summary({
          accepted: 5,
          failed: 1,
          dead: 2,
          revoked: 3,
          held: 4,
          skipped: 6,
          wouldPublish: 9,
          stoppedBy: 'signal',
        }),
      ),
    ).toEqual({
      exitCode: 1,
      rowsByResult: { done: 5, retry: 1, dead: 2, revoked: 3, held: 4, released: 6, stale: 0 },
      interrupted: true,
      extraGauges: [
        expect.objectContaining({
          name: 'fcctl_paused',
          samples: [{ labels: { command: 'deliveries send' }, value: 0 }],
        }),
      ],
    });
    expect(sendRunOutcome(summary()).interrupted).toBe(false);
  });
  it('rows whose write found them moved on by another worker (skipped STALE) are "stale", as the resolver counts them, not released', () => {
    expect(sendRunOutcome(summary({ skipped: 6, stale: 2, released: 1 })).rowsByResult).toMatchObject({
      released: 5,
      stale: 2,
    });
  });
  it('a paused run: exit 0, fcctl_paused 1, and its last-success time is not advanced', () => {
    const o = sendRunOutcome(summary({ accepted: 5, stoppedBy: 'paused' }));
    expect(o).toMatchObject({ exitCode: 0, interrupted: true });
    expect(o.extraGauges[0]!.samples).toEqual([{ labels: { command: 'deliveries send' }, value: 1 }]);
  });
});

describe('rowEvent and progressReason: what each result shows', () => {
  const row = {
    event_id: 'e-1',
    answer_uuid: 'a-1',
    consumer_app_key: '100018',
    consumer_school_id: 5 as unknown as string,
  } as DeliveryRow;
  const table: Array<[RowResult, Record<string, unknown> | null, string | undefined]> = [
    [{ kind: 'accepted' }, null, undefined],
    [{ kind: 'held' }, null, undefined],
    [{ kind: 'failed', reason: 'NACK', dead: false }, { kind: 'failed', reason: 'NACK', dead: false }, 'NACK'],
    [{ kind: 'revoked', reason: 'GRANT_REVOKED' }, { kind: 'revoked', reason: 'GRANT_REVOKED' }, 'GRANT_REVOKED'],
    [{ kind: 'skipped', reason: 'STALE' }, { kind: 'skipped', reason: 'STALE' }, undefined],
    [{ kind: 'released', reason: 'PAUSED' }, null, undefined],
    [{ kind: 'would-publish' }, { kind: 'would-publish' }, undefined],
  ];
  it.each(table)('%j', (result, event, reason) => {
    expect(rowEvent(row, result)).toEqual(
      event && { eventId: 'e-1', answerUuid: 'a-1', consumerAppKey: '100018', consumerSchoolId: '5', ...event },
    );
    expect(progressReason(result)).toBe(reason);
  });
});

describe('leaseProblem and vhostProblem: settings refused before anything is claimed', () => {
  it.each([
    [120, 15_000, false],
    [30, 15_000, false],
    [29, 15_000, true],
    [5, 2_501, true],
  ])('lease %i s, confirm timeout %i ms → refused %s', (leaseSeconds, confirmTimeoutMs, refused) => {
    expect(leaseProblem({ leaseSeconds, confirmTimeoutMs }) !== null).toBe(refused);
  });
  it.each([
    ['amqp://u:p@h:5672/fcctl', false, false, null],
    ['amqp://u:p@h:5672/%2F', false, false, 'default'],
    ['amqp://u:p@h:5672/%2F', true, false, null],
    ['amqp://u:p@h:5672/%2F', false, true, null],
  ])('%s, dry run %s, --allow-default-vhost %s', (url, dryRun, allowDefaultVhost, problem) => {
    const p = vhostProblem(url, { dryRun, allowDefaultVhost });
    if (problem === null) expect(p).toBeNull();
    else expect(p).toMatch(/^amqpUrl names the default vhost "\/": .*--allow-default-vhost$/);
  });
});

describe('countResult: each result counted once, failures by reason', () => {
  const table: Array<[RowResult, Partial<SendSummary>]> = [
    [{ kind: 'accepted' }, { accepted: 1 }],
    [
      { kind: 'failed', reason: 'NACK', dead: false },
      { failed: 1, failedByReason: { NACK: 1 } },
    ],
    [
      { kind: 'failed', reason: 'NO_ROUTE', dead: true },
      { dead: 1, failedByReason: { NO_ROUTE: 1 } },
    ],
    [{ kind: 'revoked', reason: 'GRANT_REVOKED' }, { revoked: 1 }],
    [{ kind: 'held' }, { held: 1 }],
    [{ kind: 'skipped', reason: 'STALE' }, { skipped: 1 }],
    [
      { kind: 'released', reason: 'PAUSED' },
      { released: 1, releasedByReason: { PAUSED: 1 } },
    ],
    [{ kind: 'would-publish' }, { wouldPublish: 1 }],
  ];
  it.each(table)('%j', (result, counted) => {
    const s = emptySummary();
    countResult(s, result);
    expect(s).toEqual(summary(counted));
  });
  it('reasons add up', () => {
    const s = emptySummary();
    for (const dead of [false, true, false]) countResult(s, { kind: 'failed', reason: 'NACK', dead });
    expect(s).toMatchObject({ failed: 2, dead: 1, failedByReason: { NACK: 3 } });
  });
});
