/**
 * `fcctl explain`'s advice for a FAILED or DEAD outbox row, by every reason code `deliveries send`
 * writes (issue 36 §11), without I/O: a replay only where one will send the row (at once, or after
 * someone named sets something right), never for a row that fails on what it holds — then who must
 * act, and for a row whose snapshot or event is wrong the repair from FC when FC's answer is the row's.
 */
import { describe, expect, it } from 'vitest';
import type { FailReason } from '../../src/lib/deliveries/types.js';
import { verdictOf } from '../../src/lib/explain/decide.js';
import { REASON_ADVICE, reasonAdvice } from '../../src/lib/explain/reasons.js';
import type { OutboxRow, ProjectionFacts, VerdictFacts } from '../../src/lib/explain/types.js';

const A = '0a0b0c0d-0000-4000-8000-00000000000a';
const HASH = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const row = (r: Partial<OutboxRow>): OutboxRow => ({
  eventId: 'e1',
  eventType: 'created',
  consumerAppKey: 'k1',
  schId: '5',
  grantVersion: '1',
  formUuid: 'f',
  revision: '4',
  isDeleted: false,
  contentHash: HASH,
  generation: null,
  state: 'DEAD',
  retryCount: 8,
  lastError: null,
  nextRetryAt: null,
  nextRetryInSeconds: 10,
  brokerAcceptedAt: null,
  acceptedAgoSeconds: null,
  consumerAppliedAt: null,
  consumerOutcome: null,
  claimOwner: null,
  claimExpiresAt: null,
  claimLive: false,
  claimHolder: null,
  createTime: '2026-12-01 10:00:00',
  ...r,
});
const proj = (p: Partial<ProjectionFacts> = {}): ProjectionFacts => ({
  schId: '5',
  formUuid: 'f',
  revision: '3',
  contentHash: OTHER,
  isDeleted: false,
  linkState: 'LINKED',
  applyId: null,
  flowGuid: null,
  conflictFlag: false,
  projectionVersion: '1',
  createTime: null,
  updateTime: null,
  retiredAt: null,
  retireProofId: null,
  lastRepairProofId: null,
  lastRepairedAt: null,
  ...p,
});
const facts = (f: Partial<VerdictFacts>): VerdictFacts => ({
  answerUuid: A,
  consumerAppKey: 'k1',
  schId: '5',
  fc: { kind: 'found', schId: '5', revision: '4', contentHash: HASH, isDeleted: false },
  grant: {
    formUuid: 'f',
    consumerAppKey: 'k1',
    schId: '5',
    grantVersion: '1',
    read: true,
    subscribe: true,
    push: true,
    revoked: false,
  },
  newest: row({}),
  sh: { kind: 'absent' },
  ...f,
});
const REPLAY = `fcctl deliveries replay --consumer k1 --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e1:g0`;
const REPAIR_MISSING = `fcctl projection repair-authoritative --consumer k1 --school 5 --answer ${A} --expect-missing --proof-id explain:${A}:4`;

/** Each code, what a replay meets, and who (a word of the sentence) must act first or instead. */
const TABLE: ReadonlyArray<[FailReason, 'works' | 'after' | 'never', string]> = [
  ['NO_ROUTE', 'after', 'the consumer'],
  ['NACK', 'works', 'broker accepts messages again'],
  ['CONFIRM_TIMEOUT', 'works', 'confirms in time'],
  ['CHANNEL_CLOSED', 'works', 'connection is stable'],
  ['PUBLISH_ERROR', 'works', 'takes publishes'],
  ['ACCESS_REFUSED', 'after', "the broker's admin"],
  ['MESSAGE_TOO_LARGE', 'after', "the broker's admin"],
  ['PRECONDITION_FAILED', 'after', "the broker's admin"],
  ['NOT_FOUND', 'after', "the broker's admin"],
  ['RESOURCE_LOCKED', 'works', 'releases the locked resource'],
  ['BROKER_REFUSED', 'after', "the broker's admin"],
  ['RETRY_BUDGET_SPENT', 'works', 'a new one'],
  ['SOURCE_MISMATCH', 'after', 'whoever runs the relay'],
  ['REGISTRY_MISMATCH', 'after', 'the FC team'],
  ['REGISTRY_UNREACHABLE', 'works', 'FC registry again'],
  ['INVALID_ROUTING_KEY', 'never', 'the FC team'],
  ['INVALID_EVENT', 'never', 'the producer (FC team)'],
  ['SNAPSHOT_INVALID', 'never', 'the producer (FC team)'],
  ['SNAPSHOT_HASH_MISMATCH', 'never', 'the producer (FC team)'],
];

describe('reasonAdvice: every reason code send writes', () => {
  it('the table covers every code, and only those', () => {
    expect(TABLE.map(([c]) => c).sort()).toEqual(Object.keys(REASON_ADVICE).sort());
  });

  it.each(TABLE)('%s: a replay %s (%s)', (code, replay, who) => {
    const advice = reasonAdvice(code);
    expect(advice.replay).toBe(replay);
    const v = verdictOf(
      facts({
        newest: row({ lastError: `${code}: detail` }),
        sh: { kind: 'found', row: proj({ revision: '4', contentHash: HASH }) },
      }),
    );
    expect(v.kind).toBe('DEAD');
    expect(v.text).toContain(who);
    if (replay === 'never') {
      // the same row is sent again by a replay and refused for the same reason: no replay is printed
      expect(v.command).toBeNull();
      expect(v.text).toContain('a replay resends the same row and fails again');
    } else {
      expect(v.command).toBe(REPLAY);
      expect(v.execute).toBe(`${REPLAY} --execute`);
      if (replay === 'after') expect(v.text).toContain('then replay it');
    }
    // FAILED: the relay's own retry meets the same; never "waiting" for a row that can never go
    const failed = verdictOf(facts({ newest: row({ state: 'FAILED', retryCount: 2, lastError: code }) }));
    if (replay === 'never') {
      expect(failed.kind).toBe('CANNOT_SEND');
      expect(failed.text).not.toMatch(/^waiting/);
      expect(failed.text).toContain(who);
    } else {
      expect(failed.kind).toBe('WAITING');
      expect(failed.text).toContain(replay === 'after' ? `fails again until this is set right: ${who}` : 'it goes out');
    }
  });

  it('a code fcctl does not write: a person finds out why first', () => {
    expect(reasonAdvice('SOMETHING_ELSE')).toMatchObject({ replay: 'after' });
    expect(verdictOf(facts({ newest: row({ lastError: 'SOMETHING_ELSE' }) })).text).toContain(
      'a person must find out why first',
    );
  });
});

describe('a row that fails on its snapshot or event: the repair from FC, when FC has the row’s content', () => {
  const dead = (code: string) => row({ lastError: `${code}: recomputed ${OTHER}` });
  it.each(['SNAPSHOT_HASH_MISMATCH', 'SNAPSHOT_INVALID', 'INVALID_EVENT'])(
    '%s, FC hashes to the row’s hash, SH missing: repair-authoritative, dry run then write',
    (code) => {
      const v = verdictOf(facts({ newest: dead(code) }));
      expect(v.kind).toBe('DEAD');
      expect(v.text).toContain("FC's answer hashes to the row's content_hash at revision 4");
      expect(v.command).toBe(REPAIR_MISSING);
      expect(v.execute).toBe(`${REPAIR_MISSING} --execute`);
    },
  );
  it('SH already holds FC’s revision and hash: nothing to run', () => {
    const v = verdictOf(
      facts({
        newest: dead('SNAPSHOT_HASH_MISMATCH'),
        sh: { kind: 'found', row: proj({ revision: '4', contentHash: HASH }) },
      }),
    );
    expect(v).toMatchObject({ kind: 'DEAD', command: null, execute: null });
    expect(v.text).toContain('SH already holds revision 4 as FC has it');
  });
  it('FC’s answer is not the row’s content: no command, the FC team acts', () => {
    const v = verdictOf(
      facts({
        newest: dead('SNAPSHOT_HASH_MISMATCH'),
        fc: { kind: 'found', schId: '5', revision: '4', contentHash: OTHER, isDeleted: false },
      }),
    );
    expect(v).toMatchObject({ kind: 'DEAD', command: null });
    expect(v.text).toContain('no repair from FC brings the row');
  });
  it('INVALID_ROUTING_KEY is never repaired through that consumer', () => {
    const v = verdictOf(
      facts({ newest: row({ schId: '5', lastError: 'INVALID_ROUTING_KEY: routing key is over 255 bytes' }) }),
    );
    expect(v).toMatchObject({ kind: 'DEAD', command: null });
  });
  it('FAILED SNAPSHOT_HASH_MISMATCH: CANNOT_SEND, with the repair, and the relay retrying it until DEAD', () => {
    const v = verdictOf(
      facts({ newest: row({ state: 'FAILED', retryCount: 3, lastError: 'SNAPSHOT_HASH_MISMATCH' }) }),
    );
    expect(v.kind).toBe('CANNOT_SEND');
    expect(v.command).toBe(REPAIR_MISSING);
    expect(v.text).toContain('until its budget is spent (DEAD)');
  });
});

describe('SH at FC’s revision with another hash, a delivery of that revision in flight (issue 36 §12)', () => {
  const inFlight = row({ state: 'BROKER_ACCEPTED', brokerAcceptedAt: 't', acceptedAgoSeconds: 30 });
  it('is reported at once with its repair', () => {
    const v = verdictOf(
      facts({ newest: inFlight, sh: { kind: 'found', row: proj({ revision: '4', contentHash: OTHER }) } }),
    );
    expect(v.kind).toBe('SH_DIFFERS');
    expect(v.command).toContain('fcctl projection repair-authoritative --consumer k1 --school 5');
    expect(v.command).toContain(`--expected-revision 4 --expected-hash ${OTHER} --expected-is-deleted 0`);
  });
  it('SH behind stays in flight within the grace', () => {
    const v = verdictOf(facts({ newest: inFlight, sh: { kind: 'found', row: proj({ revision: '3' }) } }));
    expect(v).toMatchObject({ kind: 'ACCEPTED_NOT_APPLIED', command: null });
  });
});

describe('a receipt the consumer gave (seed 000 §7.2): a replay only where the consumer would take it then', () => {
  const refused = (outcome: string, state = 'BROKER_ACCEPTED') =>
    row({ state, brokerAcceptedAt: 't', acceptedAgoSeconds: 7200, consumerAppliedAt: 't', consumerOutcome: outcome });
  it('DEFERRED (the grant could not be confirmed): the replay, dry run then write', () => {
    const v = verdictOf(facts({ newest: refused('DEFERRED'), sh: { kind: 'unread' } }));
    expect(v).toMatchObject({ kind: 'CONSUMER_REFUSED', command: REPLAY, execute: `${REPLAY} --execute` });
  });
  it.each([
    ['REJECTED', 'the producer (FC team) must find why'],
    ['CONFLICT', 'only projection repair-authoritative repairs it'],
  ])(
    '%s: no replay (the consumer refuses the same row again); the repair from FC where SH lacks it',
    (outcome, who) => {
      for (const state of ['BROKER_ACCEPTED', 'DEAD']) {
        const unread = verdictOf(facts({ newest: refused(outcome, state), sh: { kind: 'unread' } }));
        expect(unread.command).toBeNull();
        expect(unread.text).toContain(who);
        const missing = verdictOf(facts({ newest: refused(outcome, state), sh: { kind: 'absent' } }));
        expect(missing.command).toBe(REPAIR_MISSING);
      }
    },
  );
});
