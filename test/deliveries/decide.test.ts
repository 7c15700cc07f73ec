import { describe, expect, it } from 'vitest';
import { adjudicate, afterFailure, DEFAULT_RETRY_POLICY, prePublish, routingKeyFor, type BrokerOutcome, type PublisherFacts } from '../../src/lib/deliveries/decide.js';
import { buildEnvelope, messageOptions, occurredAtIso } from '../../src/lib/deliveries/envelope.js';
import { compileWrite } from '../../src/lib/deliveries/sql.js';
import { planWrites } from '../../src/lib/deliveries/relay.js';
import type { DeliveryRow, GrantRow } from '../../src/lib/deliveries/types.js';
import { canonicalize } from '../../src/lib/canon/index.js';
import { snapshotOf } from '../helpers/deliveries.js';

const snapshot = snapshotOf(5);
const hash = (canonicalize(snapshot) as { hash: string }).hash;
const row = (over: Partial<DeliveryRow> = {}): DeliveryRow => ({
  id: '1', event_id: '5f0a0000-0000-4000-8000-000000000001', event_type: 'created', source_app_key: '100021', consumer_app_key: '100018',
  consumer_school_id: '5', grant_version: '7', form_uuid: 'f0e1', form_version: 4, answer_uuid: 'a1b2', answer_revision: '3', is_deleted: 0,
  content_hash: hash, occurred_at: '2026-10-21 10:05:00', snapshot_json: snapshot, state: 'PENDING', retry_count: 0, replay_op_digest: null, ...over,
});
const grant = (over: Partial<GrantRow> = {}): GrantRow => ({
  form_uuid: 'f0e1', consumer_school_id: '5', consumer_app_key: '100018', grant_version: '7', read_allowed: 1, subscribe_allowed: 1, push_allowed: 1, revoked: 0, ...over,
});
const publisher: PublisherFacts = { appKey: '100021', appCode: 'demo', registry: { id: '42', app_code: 'demo', app_key: '100021' } };

describe('adjudicate: the SPEC §5 / seed 004 table', () => {
  const table: Array<[BrokerOutcome, ReturnType<typeof adjudicate>]> = [
    [{ kind: 'ack', returned: false }, { kind: 'accept' }],
    [{ kind: 'ack', returned: true }, { kind: 'fail', reason: 'NO_ROUTE' }],
    [{ kind: 'nack' }, { kind: 'fail', reason: 'NACK' }],
    [{ kind: 'timeout' }, { kind: 'fail', reason: 'CONFIRM_TIMEOUT' }],
    [{ kind: 'closed' }, { kind: 'fail', reason: 'CHANNEL_CLOSED' }],
    [{ kind: 'error', detail: 'x' }, { kind: 'fail', reason: 'PUBLISH_ERROR' }],
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
    expect(seen.map((s) => s.state)).toEqual(['FAILED', 'FAILED', 'FAILED', 'FAILED', 'FAILED', 'FAILED', 'FAILED', 'DEAD']);
    expect(seen.map((s) => s.retryCount)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
  it('caps the backoff', () => {
    expect(afterFailure(5, { baseSeconds: 20, capSeconds: 100, maxRetries: 8 }).backoffSeconds).toBe(100);
  });
});

describe('routingKeyFor', () => {
  it('builds fc.snapshot.v2.<key>.<school>', () => expect(routingKeyFor('100018', '5')).toEqual({ ok: true, routingKey: 'fc.snapshot.v2.100018.5' }));
  for (const key of ['', 'a.b', 'a*', '#', 'a b', 'a\tb', '*.#', 'x\u3000y', 'ab\u0000c', 'a\u007fb']) {
    it(`refuses app key ${JSON.stringify(key)}`, () => expect(routingKeyFor(key, 5).ok).toBe(false));
  }
  for (const school of [0, -1, '05', '1.5', 'abc', '', '1e3']) {
    it(`refuses school ${JSON.stringify(school)}`, () => expect(routingKeyFor('k', school).ok).toBe(false));
  }
  it('refuses a routing key over 255 UTF-8 bytes (an AMQP short string), takes one of exactly 255', () => {
    // 60 four-byte characters fit a VARCHAR(64) key but make a 257-byte routing key
    expect(routingKeyFor('\u{1F600}'.repeat(60), 5)).toMatchObject({ ok: false, detail: expect.stringMatching(/255 bytes/) });
    const key = '\u00e9'.repeat(100); // 200 bytes
    const school = '1'.repeat(255 - 'fc.snapshot.v2..'.length - 200);
    expect(routingKeyFor(key, school)).toEqual({ ok: true, routingKey: `fc.snapshot.v2.${key}.${school}` });
    expect(routingKeyFor(key, `${school}1`).ok).toBe(false);
  });
});

describe('prePublish: checks in SPEC §5 order', () => {
  it('publishes a clean row', () => {
    expect(prePublish(row(), { publisher, grant: grant() })).toEqual({ kind: 'publish', routingKey: 'fc.snapshot.v2.100018.5' });
  });
  it('1. source and registry identity come first, even before a revoked grant', () => {
    expect(prePublish(row({ source_app_key: 'other' }), { publisher, grant: grant({ revoked: 1 }) })).toMatchObject({ kind: 'fail', reason: 'SOURCE_MISMATCH' });
    expect(prePublish(row(), { publisher: { ...publisher, registry: 'unreachable' }, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'REGISTRY_UNREACHABLE' });
    expect(prePublish(row(), { publisher: { ...publisher, registry: null }, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'REGISTRY_MISMATCH' });
    expect(prePublish(row(), { publisher: { ...publisher, registry: { id: '0', app_code: 'demo', app_key: '100021' } }, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'REGISTRY_MISMATCH' });
    expect(prePublish(row(), { publisher: { ...publisher, registry: { id: '42', app_code: 'demo', app_key: '999' } }, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'REGISTRY_MISMATCH' });
    // id ≠ app key is allowed (seed 004)
    expect(prePublish(row(), { publisher: { ...publisher, registry: { id: '7', app_code: 'demo', app_key: '100021' } }, grant: grant() }).kind).toBe('publish');
  });
  it('2. grant: missing, revoked, not readable, version changed → revoke; push disabled → hold', () => {
    expect(prePublish(row(), { publisher, grant: undefined })).toEqual({ kind: 'revoke', reason: 'GRANT_MISSING' });
    expect(prePublish(row(), { publisher, grant: grant({ revoked: 1 }) })).toEqual({ kind: 'revoke', reason: 'GRANT_REVOKED' });
    expect(prePublish(row(), { publisher, grant: grant({ subscribe_allowed: 0 }) })).toEqual({ kind: 'revoke', reason: 'GRANT_NOT_READABLE' });
    expect(prePublish(row(), { publisher, grant: grant({ read_allowed: 0 }) })).toEqual({ kind: 'revoke', reason: 'GRANT_NOT_READABLE' });
    expect(prePublish(row(), { publisher, grant: grant({ grant_version: '8' }) })).toEqual({ kind: 'revoke', reason: 'GRANT_VERSION_CHANGED' });
    expect(prePublish(row(), { publisher, grant: grant({ grant_version: '6' }) })).toEqual({ kind: 'revoke', reason: 'GRANT_VERSION_CHANGED' });
    expect(prePublish(row(), { publisher, grant: grant({ push_allowed: 0 }) })).toEqual({ kind: 'hold', reason: 'PUSH_DISABLED' });
    // a revoked grant wins over push disabled: revocation is terminal
    expect(prePublish(row(), { publisher, grant: grant({ push_allowed: 0, revoked: 1 }) }).kind).toBe('revoke');
  });
  it('3. routing key, event id and snapshot', () => {
    const g = (key: string, school: string) => grant({ consumer_app_key: key, consumer_school_id: school });
    expect(prePublish(row({ consumer_app_key: 'a.b' }), { publisher, grant: g('a.b', '5') })).toMatchObject({ kind: 'fail', reason: 'INVALID_ROUTING_KEY' });
    expect(prePublish(row({ consumer_school_id: '0' }), { publisher, grant: g('100018', '0') })).toMatchObject({ kind: 'fail', reason: 'INVALID_ROUTING_KEY' });
    expect(prePublish(row({ content_hash: '0'.repeat(64) }), { publisher, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'SNAPSHOT_HASH_MISMATCH' });
    expect(prePublish(row({ snapshot_json: '{"a":' }), { publisher, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'SNAPSHOT_INVALID' });
    const extra = snapshotOf(5, { extra: 1 });
    expect(prePublish(row({ snapshot_json: extra, content_hash: (canonicalize(extra) as { hash: string }).hash }), { publisher, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'SNAPSHOT_INVALID' });
    const withIntent = snapshotOf(5, { intent: { intentId: 'svchall-1', consumerAppKey: '100018', consumerSchoolId: 5 } });
    expect(prePublish(row({ snapshot_json: withIntent }), { publisher, grant: grant() }).kind).toBe('publish');
    // another consumer's intent is never sent (SPEC §4)
    const otherIntent = snapshotOf(5, { intent: { intentId: 'svchall-1', consumerAppKey: '100099', consumerSchoolId: 5 } });
    expect(prePublish(row({ snapshot_json: otherIntent }), { publisher, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'SNAPSHOT_INVALID' });
    expect(prePublish(row({ event_type: 'deleted' }), { publisher, grant: grant() })).toMatchObject({ kind: 'fail', reason: 'INVALID_EVENT' });
  });
});

describe('envelope', () => {
  it('has exactly the 15 members, the snapshot byte for byte and a verifying hash', () => {
    const r = row({ consumer_school_id: '9007199254740993', snapshot_json: '{"schId":5,"appCode":"demo","code":"c","submitterId":1,"subjectId":null,"status":"s","values":{"n":0.1000000000000000055511151231257827},"answerNo":null,"createTime":"2026-10-21T10:00:00","updateTime":null}' });
    const text = buildEnvelope(r).toString('utf8');
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['protocolVersion', 'eventId', 'eventType', 'sourceAppKey', 'consumerAppKey', 'consumerSchoolId', 'grantVersion', 'formUuid', 'formVersion', 'answerUuid', 'answerRevision', 'isDeleted', 'contentHash', 'occurredAt', 'snapshot']);
    expect(text).toContain('"consumerSchoolId":9007199254740993,');
    expect(text).toContain(`"snapshot":${r.snapshot_json}}`);
    expect(parsed['protocolVersion']).toBe('fc.answer.snapshot.v2');
    expect(parsed['isDeleted']).toBe(false);
    expect(parsed['occurredAt']).toMatch(/^2026-10-21T10:05:00[+-]\d{2}:\d{2}$/);
    expect(messageOptions(r)).toMatchObject({ mandatory: true, persistent: true, messageId: r.event_id, contentType: 'application/json', appId: '100021', type: 'created' });
  });
  it('occurredAt keeps the wall-clock fields', () => expect(occurredAtIso('2026-01-02 03:04:05').slice(0, 19)).toBe('2026-01-02T03:04:05'));
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
    expect(sql).toContain("id IN (?) AND claim_owner = ? AND state IN ('PENDING', 'FAILED') AND ((retry_count = ? AND replay_op_digest <=> ? AND id IN (?)))");
    expect(sql).toContain('broker_accepted_at = NULL');
    expect(params).toEqual(['FAILED', 4, 160, 'NO_ROUTE', ['2'], 'me', 3, 'd'.repeat(64), ['2']]);
    // one IN list per generation
    const mixed = compileWrite('me', { kind: 'accept', gens: [{ id: '1', retryCount: 0, replayOpDigest: null }, { id: '2', retryCount: 0, replayOpDigest: null }, { id: '3', retryCount: 2, replayOpDigest: 'x' }] });
    expect(mixed.params).toEqual([['1', '2', '3'], 'me', 0, null, ['1', '2'], 2, 'x', ['3']]);
    const accept = compileWrite('me', writes[0]!);
    expect(accept.sql).toContain('broker_accepted_at = COALESCE(broker_accepted_at, NOW())');
    expect(compileWrite('me', writes[2]!).sql.split(' WHERE ')[0]).not.toContain('retry_count');
  });
});
