import { describe, expect, it } from 'vitest';
import {
  adjudicate,
  planWrites,
  prePublish,
  type BrokerOutcome,
  type PublisherFacts,
} from '../../src/lib/deliveries/send/decide.js';
import { afterFailure, DEFAULT_RETRY_POLICY } from '../../src/lib/deliveries/retry.js';
import { buildEnvelope, messageOptions, occurredAtIso, routingKeyFor } from '../../src/lib/deliveries/envelope.js';
import { compileWrite } from '../../src/lib/deliveries/send/sql.js';
import type { DeliveryRow, GrantRow } from '../../src/lib/deliveries/types.js';
import { canonicalize } from '../../src/lib/canon/index.js';
import { snapshotOf } from '../helpers/deliveries.js';

const snapshot = snapshotOf(5);
const hash = (canonicalize(snapshot) as { hash: string }).hash;
const row = (over: Partial<DeliveryRow> = {}): DeliveryRow => ({
  id: '1',
  event_id: '5f0a0000-0000-4000-8000-000000000001',
  event_type: 'created',
  source_app_key: '100021',
  consumer_app_key: '100018',
  consumer_school_id: '5',
  grant_version: '7',
  form_uuid: 'f0e1',
  form_version: 4,
  answer_uuid: 'a1b2',
  answer_revision: '3',
  is_deleted: 0,
  content_hash: hash,
  occurred_at: '2026-10-21 10:05:00',
  snapshot_json: snapshot,
  state: 'PENDING',
  retry_count: 0,
  replay_op_digest: null,
  ...over,
});
const grant = (over: Partial<GrantRow> = {}): GrantRow => ({
  form_uuid: 'f0e1',
  consumer_school_id: '5',
  consumer_app_key: '100018',
  grant_version: '7',
  read_allowed: 1,
  subscribe_allowed: 1,
  push_allowed: 1,
  revoked: 0,
  ...over,
});
const publisher: PublisherFacts = {
  appKey: '100021',
  appCode: 'demo',
  registry: { id: '42', app_code: 'demo', app_key: '100021' },
};

describe('adjudicate: the SPEC §5 / seed 004 table', () => {
  const table: Array<[BrokerOutcome, ReturnType<typeof adjudicate>]> = [
    [{ kind: 'ack', returned: false }, { kind: 'accept' }],
    [
      { kind: 'ack', returned: true },
      { kind: 'fail', reason: 'NO_ROUTE', detail: '' },
    ],
    [{ kind: 'nack' }, { kind: 'fail', reason: 'NACK', detail: '' }],
    [{ kind: 'timeout' }, { kind: 'fail', reason: 'CONFIRM_TIMEOUT', detail: '' }],
    [{ kind: 'closed' }, { kind: 'fail', reason: 'CHANNEL_CLOSED', detail: '' }],
    [
      { kind: 'error', detail: 'x' },
      { kind: 'fail', reason: 'PUBLISH_ERROR', detail: 'x' },
    ],
    // A refusal of this message alone: the broker's reason as a stable code, its text kept.
    [
      { kind: 'refused', code: 403, text: "ACCESS_REFUSED - write access to topic 'fc.snapshot.v2.k.5' refused" },
      {
        kind: 'fail',
        reason: 'ACCESS_REFUSED',
        detail: "ACCESS_REFUSED - write access to topic 'fc.snapshot.v2.k.5' refused",
      },
    ],
    [
      {
        kind: 'refused',
        code: 406,
        text: 'PRECONDITION_FAILED - message size 2000 is larger than configured max size 1024',
      },
      {
        kind: 'fail',
        reason: 'MESSAGE_TOO_LARGE',
        detail: 'PRECONDITION_FAILED - message size 2000 is larger than configured max size 1024',
      },
    ],
    [
      { kind: 'refused', code: 406, text: 'PRECONDITION_FAILED - something else' },
      { kind: 'fail', reason: 'PRECONDITION_FAILED', detail: 'PRECONDITION_FAILED - something else' },
    ],
    [
      { kind: 'refused', code: 404, text: 'NOT_FOUND - no exchange' },
      { kind: 'fail', reason: 'NOT_FOUND', detail: 'NOT_FOUND - no exchange' },
    ],
    [
      { kind: 'refused', code: 405, text: 'RESOURCE_LOCKED' },
      { kind: 'fail', reason: 'RESOURCE_LOCKED', detail: 'RESOURCE_LOCKED' },
    ],
    [
      { kind: 'refused', code: 540, text: 'NOT_IMPLEMENTED' },
      { kind: 'fail', reason: 'BROKER_REFUSED', detail: 'NOT_IMPLEMENTED' },
    ],
    // Its confirm lost to another message's refusal, or never sent: nothing charged.
    [{ kind: 'unknown' }, { kind: 'release', reason: 'OUTCOME_UNKNOWN' }],
    [{ kind: 'unsent' }, { kind: 'release', reason: 'NOT_SENT' }],
  ];
  for (const [outcome, expected] of table) {
    it(`${JSON.stringify(outcome)} → ${JSON.stringify(expected)}`, () => expect(adjudicate(outcome)).toEqual(expected));
  }
});

describe('afterFailure: 20 s × 2^n backoff, DEAD at the 8th', () => {
  it('doubles from 20 s and dies when retry_count reaches 8', () => {
    const seen = [];
    for (let n = 0; n < 8; n++) seen.push(afterFailure(n, DEFAULT_RETRY_POLICY));
    expect(seen.map((s) => s.backoffSeconds)).toEqual([20, 40, 80, 160, 320, 640, 1280, null]);
    expect(seen.map((s) => s.state)).toEqual([
      'FAILED',
      'FAILED',
      'FAILED',
      'FAILED',
      'FAILED',
      'FAILED',
      'FAILED',
      'DEAD',
    ]);
    expect(seen.map((s) => s.retryCount)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
  it('caps the backoff', () => {
    expect(afterFailure(5, { baseSeconds: 20, capSeconds: 100, maxRetries: 8 }).backoffSeconds).toBe(100);
  });
});

describe('routingKeyFor', () => {
  it('builds fc.snapshot.v2.<key>.<school>', () =>
    expect(routingKeyFor('100018', '5')).toEqual({ ok: true, routingKey: 'fc.snapshot.v2.100018.5' }));
  for (const key of ['', 'a.b', 'a*', '#', 'a b', 'a\tb', '*.#', 'x\u3000y', 'ab\u0000c', 'a\u007fb']) {
    it(`refuses app key ${JSON.stringify(key)}`, () => expect(routingKeyFor(key, 5).ok).toBe(false));
  }
  for (const school of [0, -1, '05', '1.5', 'abc', '', '1e3']) {
    it(`refuses school ${JSON.stringify(school)}`, () => expect(routingKeyFor('k', school).ok).toBe(false));
  }
  it('refuses a routing key over 255 UTF-8 bytes (an AMQP short string), takes one of exactly 255', () => {
    // 60 four-byte characters fit a VARCHAR(64) key but make a 257-byte routing key
    expect(routingKeyFor('\u{1F600}'.repeat(60), 5)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/255 bytes/),
    });
    const key = '\u00e9'.repeat(100); // 200 bytes
    const school = '1'.repeat(255 - 'fc.snapshot.v2..'.length - 200);
    expect(routingKeyFor(key, school)).toEqual({ ok: true, routingKey: `fc.snapshot.v2.${key}.${school}` });
    expect(routingKeyFor(key, `${school}1`).ok).toBe(false);
  });
});

describe('prePublish: checks in SPEC §5 order', () => {
  it('a FAILED row at or over the retry budget goes DEAD unsent, after the grant checks (revoked stays revoked, held stays held); PENDING rows are not judged by it', () => {
    expect(prePublish(row({ state: 'FAILED', retry_count: 5 }), { publisher, grant: grant(), maxRetries: 5 })).toEqual({
      kind: 'exhausted',
    });
    expect(
      prePublish(row({ state: 'FAILED', retry_count: 9, content_hash: '0'.repeat(64) }), {
        publisher,
        grant: grant(),
        maxRetries: 8,
      }),
    ).toEqual({ kind: 'exhausted' });
    expect(
      prePublish(row({ state: 'FAILED', retry_count: 9 }), { publisher, grant: grant({ revoked: 1 }), maxRetries: 8 }),
    ).toEqual({ kind: 'revoke', reason: 'GRANT_REVOKED' });
    expect(
      prePublish(row({ state: 'FAILED', retry_count: 9 }), {
        publisher,
        grant: grant({ push_allowed: 0 }),
        maxRetries: 8,
      }),
    ).toEqual({ kind: 'hold', reason: 'PUSH_DISABLED' });
    expect(
      prePublish(row({ state: 'FAILED', retry_count: 4 }), { publisher, grant: grant(), maxRetries: 5 }).kind,
    ).toBe('publish');
    expect(
      prePublish(row({ state: 'PENDING', retry_count: 5 }), { publisher, grant: grant(), maxRetries: 5 }).kind,
    ).toBe('publish');
  });
  it('a zero or impossible occurred_at is INVALID_EVENT, never sent', () => {
    for (const bad of [
      '0000-00-00 00:00:00',
      '2026-00-10 10:00:00',
      '2026-13-01 10:00:00',
      '2026-10-32 10:00:00',
      '2026-10-21 24:00:00',
      'yesterday',
    ]) {
      expect(prePublish(row({ occurred_at: bad }), { publisher, grant: grant(), maxRetries: 8 }), bad).toMatchObject({
        kind: 'fail',
        reason: 'INVALID_EVENT',
        detail: expect.stringMatching(/occurred_at .* is not a valid DATETIME/),
      });
    }
    expect(
      prePublish(row({ occurred_at: '2026-10-21 23:59:59' }), { publisher, grant: grant(), maxRetries: 8 }).kind,
    ).toBe('publish');
  });
  it('publishes a clean row', () => {
    expect(prePublish(row(), { publisher, grant: grant(), maxRetries: 8 })).toEqual({
      kind: 'publish',
      routingKey: 'fc.snapshot.v2.100018.5',
    });
  });
  it('1. source and registry identity come first, even before a revoked grant', () => {
    expect(
      prePublish(row({ source_app_key: 'other' }), { publisher, grant: grant({ revoked: 1 }), maxRetries: 8 }),
    ).toMatchObject({ kind: 'fail', reason: 'SOURCE_MISMATCH' });
    expect(
      prePublish(row(), { publisher: { ...publisher, registry: 'unreachable' }, grant: grant(), maxRetries: 8 }),
    ).toMatchObject({ kind: 'fail', reason: 'REGISTRY_UNREACHABLE' });
    expect(
      prePublish(row(), { publisher: { ...publisher, registry: null }, grant: grant(), maxRetries: 8 }),
    ).toMatchObject({ kind: 'fail', reason: 'REGISTRY_MISMATCH' });
    expect(
      prePublish(row(), {
        publisher: { ...publisher, registry: { id: '0', app_code: 'demo', app_key: '100021' } },
        grant: grant(),
        maxRetries: 8,
      }),
    ).toMatchObject({ kind: 'fail', reason: 'REGISTRY_MISMATCH' });
    expect(
      prePublish(row(), {
        publisher: { ...publisher, registry: { id: '42', app_code: 'demo', app_key: '999' } },
        grant: grant(),
        maxRetries: 8,
      }),
    ).toMatchObject({ kind: 'fail', reason: 'REGISTRY_MISMATCH' });
    // id ≠ app key is allowed (seed 004)
    expect(
      prePublish(row(), {
        publisher: { ...publisher, registry: { id: '7', app_code: 'demo', app_key: '100021' } },
        grant: grant(),
        maxRetries: 8,
      }).kind,
    ).toBe('publish');
  });
  it('2. grant: missing, revoked, not readable, version changed → revoke; push disabled → hold', () => {
    expect(prePublish(row(), { publisher, grant: undefined, maxRetries: 8 })).toEqual({
      kind: 'revoke',
      reason: 'GRANT_MISSING',
    });
    expect(prePublish(row(), { publisher, grant: grant({ revoked: 1 }), maxRetries: 8 })).toEqual({
      kind: 'revoke',
      reason: 'GRANT_REVOKED',
    });
    expect(prePublish(row(), { publisher, grant: grant({ subscribe_allowed: 0 }), maxRetries: 8 })).toEqual({
      kind: 'revoke',
      reason: 'GRANT_NOT_READABLE',
    });
    expect(prePublish(row(), { publisher, grant: grant({ read_allowed: 0 }), maxRetries: 8 })).toEqual({
      kind: 'revoke',
      reason: 'GRANT_NOT_READABLE',
    });
    expect(prePublish(row(), { publisher, grant: grant({ grant_version: '8' }), maxRetries: 8 })).toEqual({
      kind: 'revoke',
      reason: 'GRANT_VERSION_CHANGED',
    });
    expect(prePublish(row(), { publisher, grant: grant({ grant_version: '6' }), maxRetries: 8 })).toEqual({
      kind: 'revoke',
      reason: 'GRANT_VERSION_CHANGED',
    });
    expect(prePublish(row(), { publisher, grant: grant({ push_allowed: 0 }), maxRetries: 8 })).toEqual({
      kind: 'hold',
      reason: 'PUSH_DISABLED',
    });
    // a revoked grant wins over push disabled: revocation is terminal
    expect(prePublish(row(), { publisher, grant: grant({ push_allowed: 0, revoked: 1 }), maxRetries: 8 }).kind).toBe(
      'revoke',
    );
  });
  it('3. routing key, event id and snapshot', () => {
    const g = (key: string, school: string) => grant({ consumer_app_key: key, consumer_school_id: school });
    expect(
      prePublish(row({ consumer_app_key: 'a.b' }), { publisher, grant: g('a.b', '5'), maxRetries: 8 }),
    ).toMatchObject({ kind: 'fail', reason: 'INVALID_ROUTING_KEY' });
    expect(
      prePublish(row({ consumer_school_id: '0' }), { publisher, grant: g('100018', '0'), maxRetries: 8 }),
    ).toMatchObject({ kind: 'fail', reason: 'INVALID_ROUTING_KEY' });
    expect(
      prePublish(row({ content_hash: '0'.repeat(64) }), { publisher, grant: grant(), maxRetries: 8 }),
    ).toMatchObject({ kind: 'fail', reason: 'SNAPSHOT_HASH_MISMATCH' });
    expect(prePublish(row({ snapshot_json: '{"a":' }), { publisher, grant: grant(), maxRetries: 8 })).toMatchObject({
      kind: 'fail',
      reason: 'SNAPSHOT_INVALID',
    });
    const extra = snapshotOf(5, { extra: 1 });
    expect(
      prePublish(row({ snapshot_json: extra, content_hash: (canonicalize(extra) as { hash: string }).hash }), {
        publisher,
        grant: grant(),
        maxRetries: 8,
      }),
    ).toMatchObject({ kind: 'fail', reason: 'SNAPSHOT_INVALID' });
    const withIntent = snapshotOf(5, {
      intent: { intentId: 'svchall-1', consumerAppKey: '100018', consumerSchoolId: 5 },
    });
    expect(prePublish(row({ snapshot_json: withIntent }), { publisher, grant: grant(), maxRetries: 8 }).kind).toBe(
      'publish',
    );
    // another consumer's intent is never sent (SPEC §4)
    const otherIntent = snapshotOf(5, {
      intent: { intentId: 'svchall-1', consumerAppKey: '100099', consumerSchoolId: 5 },
    });
    expect(prePublish(row({ snapshot_json: otherIntent }), { publisher, grant: grant(), maxRetries: 8 })).toMatchObject(
      { kind: 'fail', reason: 'SNAPSHOT_INVALID' },
    );
    expect(prePublish(row({ event_type: 'deleted' }), { publisher, grant: grant(), maxRetries: 8 })).toMatchObject({
      kind: 'fail',
      reason: 'INVALID_EVENT',
    });
  });
});

describe('envelope', () => {
  it('has exactly the 15 members, the snapshot byte for byte and a verifying hash', () => {
    const r = row({
      consumer_school_id: '9007199254740993',
      snapshot_json:
        '{"schId":5,"appCode":"demo","code":"c","submitterId":1,"subjectId":null,"status":"s","values":{"n":0.1000000000000000055511151231257827},"answerNo":null,"createTime":"2026-10-21T10:00:00","updateTime":null}',
    });
    const text = buildEnvelope(r, 'Asia/Shanghai').toString('utf8');
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual([
      'protocolVersion',
      'eventId',
      'eventType',
      'sourceAppKey',
      'consumerAppKey',
      'consumerSchoolId',
      'grantVersion',
      'formUuid',
      'formVersion',
      'answerUuid',
      'answerRevision',
      'isDeleted',
      'contentHash',
      'occurredAt',
      'snapshot',
    ]);
    expect(text).toContain('"consumerSchoolId":9007199254740993,');
    expect(text).toContain(`"snapshot":${r.snapshot_json}}`);
    expect(parsed['protocolVersion']).toBe('fc.answer.snapshot.v2');
    expect(parsed['isDeleted']).toBe(false);
    expect(parsed['occurredAt']).toBe('2026-10-21T10:05:00+08:00');
    expect(messageOptions(r)).toMatchObject({
      mandatory: true,
      persistent: true,
      messageId: r.event_id,
      contentType: 'application/json',
      appId: '100021',
      type: 'created',
    });
  });
  it('occurredAt keeps the wall-clock fields', () =>
    expect(occurredAtIso('2026-01-02 03:04:05', 'America/New_York').slice(0, 19)).toBe('2026-01-02T03:04:05'));
  // SPEC §10: the offset is the service zone's at that wall time, never this process's TZ
  it.each([
    ['2026-10-21 10:05:00', 'Asia/Shanghai', '2026-10-21T10:05:00+08:00'],
    ['2026-10-21 10:05:00', 'UTC', '2026-10-21T10:05:00+00:00'],
    ['2026-07-01 12:00:00', 'America/New_York', '2026-07-01T12:00:00-04:00'],
    ['2026-01-15 12:00:00', 'America/New_York', '2026-01-15T12:00:00-05:00'],
    ['2026-11-01 01:30:00', 'America/New_York', '2026-11-01T01:30:00-04:00'],
    ['2026-10-21 10:05:00', 'Asia/Kolkata', '2026-10-21T10:05:00+05:30'],
    ['2026-10-21 10:05:00', '-05:30', '2026-10-21T10:05:00-05:30'],
    ['2026-10-21T10:05:00', '+08:00', '2026-10-21T10:05:00+08:00'],
  ])('occurredAtIso(%j, %j) = %j', (local, zone, iso) => expect(occurredAtIso(local, zone)).toBe(iso));
  it('the same row in two zones differs in occurredAt only', () => {
    const a = buildEnvelope(row(), 'Asia/Shanghai').toString('utf8');
    const b = buildEnvelope(row(), 'UTC').toString('utf8');
    expect(a.replace('"occurredAt":"2026-10-21T10:05:00+08:00"', '')).toBe(
      b.replace('"occurredAt":"2026-10-21T10:05:00+00:00"', ''),
    );
    expect(a).not.toBe(b);
  });
});

describe('planWrites and compileWrite', () => {
  it('groups by transition and guards every write by claim, state and generation', () => {
    const a = row({ id: '1' });
    const b = row({ id: '2', retry_count: 3, replay_op_digest: 'd'.repeat(64) });
    const c = row({ id: '3' });
    const d = row({ id: '4' });
    const { writes, results } = planWrites(
      [
        { row: a, decision: { kind: 'publish', routingKey: 'k' }, outcome: { kind: 'ack', returned: false } },
        { row: b, decision: { kind: 'publish', routingKey: 'k' }, outcome: { kind: 'ack', returned: true } },
        { row: c, decision: { kind: 'hold', reason: 'PUSH_DISABLED' } },
        { row: d, decision: { kind: 'publish', routingKey: 'k' }, outcome: { kind: 'unsent' } },
      ],
      DEFAULT_RETRY_POLICY,
      60,
    );
    expect(results.map((r) => r.result.kind)).toEqual(['accepted', 'failed', 'held', 'skipped']);
    expect(writes.map((w) => w.kind)).toEqual(['accept', 'fail', 'hold', 'release']);
    const fail = writes[1]!;
    expect(fail).toMatchObject({ state: 'FAILED', retryCount: 4, backoffSeconds: 160, lastError: 'NO_ROUTE' });
    const { sql, params } = compileWrite('me', fail);
    // one generation: the top-level id list is the only one
    expect(sql).toMatch(
      / WHERE id IN \(\?\) AND claim_owner = \? AND state IN \('PENDING', 'FAILED'\) AND retry_count = \? AND replay_op_digest <=> \?$/,
    );
    expect(sql).toContain('broker_accepted_at = NULL');
    expect(params).toEqual(['FAILED', 4, 160, 'NO_ROUTE', ['2'], 'me', 3, 'd'.repeat(64)]);
    // one IN list per generation
    const mixed = compileWrite('me', {
      kind: 'accept',
      gens: [
        { id: '1', retryCount: 0, replayOpDigest: null },
        { id: '2', retryCount: 0, replayOpDigest: null },
        { id: '3', retryCount: 2, replayOpDigest: 'x' },
      ],
    });
    expect(mixed.params).toEqual([['1', '2', '3'], 'me', 0, null, ['1', '2'], 2, 'x', ['3']]);
    expect(mixed.sql).toContain(
      "AND state IN ('PENDING', 'FAILED') AND ((retry_count = ? AND replay_op_digest <=> ? AND id IN (?)) OR (retry_count = ? AND replay_op_digest <=> ? AND id IN (?)))",
    );
    const accept = compileWrite('me', writes[0]!);
    expect(accept.sql).toContain('broker_accepted_at = COALESCE(broker_accepted_at, NOW())');
    expect(compileWrite('me', writes[2]!).sql.split(' WHERE ')[0]).not.toContain('retry_count');
  });
  it("a refused message fails alone with the broker's code and text; lost confirms are released uncharged; a spent budget is buried as it stands", () => {
    const culprit = row({ id: '1', retry_count: 2 });
    const lost = row({ id: '2' });
    const spent = row({ id: '3', state: 'FAILED', retry_count: 8 });
    const text = "ACCESS_REFUSED - write access to topic 'fc.snapshot.v2.k.5' refused";
    const { writes, results } = planWrites(
      [
        { row: culprit, decision: { kind: 'publish', routingKey: 'k' }, outcome: { kind: 'refused', code: 403, text } },
        { row: lost, decision: { kind: 'publish', routingKey: 'k' }, outcome: { kind: 'unknown' } },
        { row: spent, decision: { kind: 'exhausted' } },
      ],
      DEFAULT_RETRY_POLICY,
      600,
    );
    expect(results.map((r) => r.result)).toEqual([
      { kind: 'failed', reason: 'ACCESS_REFUSED', dead: false },
      { kind: 'skipped', reason: 'OUTCOME_UNKNOWN' },
      { kind: 'failed', reason: 'RETRY_BUDGET_SPENT', dead: true },
    ]);
    expect(writes).toEqual([
      {
        kind: 'fail',
        gens: [{ id: '1', retryCount: 2, replayOpDigest: null }],
        state: 'FAILED',
        retryCount: 3,
        backoffSeconds: 80,
        lastError: `ACCESS_REFUSED: ${text}`,
      },
      { kind: 'bury', gens: [{ id: '3', retryCount: 8, replayOpDigest: null }] },
      { kind: 'release', gens: [{ id: '2', retryCount: 0, replayOpDigest: null }] },
    ]);
    // buried: DEAD, its retry count and last error as they were
    const bury = compileWrite('me', writes[1]!);
    expect(bury.sql.split(' WHERE ')[0]).toBe(
      "UPDATE answer_delivery SET state = 'DEAD', next_retry_at = NULL, claim_owner = NULL, claim_expires_at = NULL, update_time = NOW()",
    );
    expect(compileWrite('me', writes[2]!).sql.split(' WHERE ')[0]).toBe(
      'UPDATE answer_delivery SET claim_owner = NULL, claim_expires_at = NULL',
    );
  });
});
