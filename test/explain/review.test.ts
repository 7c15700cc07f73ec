/**
 * explain's advice under the states a review found it wrong in (issue 36 §11–12, review), without I/O:
 * a replay of a DEAD row whose grant has push_allowed = 0 is queued and then held, never sent; an
 * outbox row newer than FC's answer as read means FC changed while explain read it — SH holding that
 * newer revision is no "SH ahead, a person decides"; SH behind FC with a newer revision in flight is
 * SH_STALE in flight (not said at once).
 */
import { describe, expect, it } from 'vitest';
import { verdictOf } from '../../src/lib/explain/decide.js';
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
const GRANT = {
  formUuid: 'f',
  consumerAppKey: 'k1',
  schId: '5',
  grantVersion: '1',
  read: true,
  subscribe: true,
  push: true,
  revoked: false,
};
const facts = (f: Partial<VerdictFacts>): VerdictFacts => ({
  answerUuid: A,
  consumerAppKey: 'k1',
  schId: '5',
  fc: { kind: 'found', schId: '5', revision: '4', contentHash: HASH, isDeleted: false },
  grant: GRANT,
  newest: row({}),
  sh: { kind: 'absent' },
  ...f,
});
const inFlight = (revision: string) =>
  row({ revision, state: 'BROKER_ACCEPTED', brokerAcceptedAt: '2026-12-01 10:00:00', acceptedAgoSeconds: 1 });

describe('DEAD for a passing cause, push_allowed = 0 now', () => {
  it.each(['NACK: broker nack', 'NO_ROUTE: returned'])(
    '%s: the replay is not said to send it; the hold is said',
    (e) => {
      const v = verdictOf(facts({ newest: row({ lastError: e }), grant: { ...GRANT, push: false } }));
      expect(v.kind).toBe('DEAD');
      expect(v.text).not.toMatch(/a replay sends it/);
      expect(v.text).toContain('push_allowed = 0');
      // the replay is still the step that queues it (send holds it, then sends it once push is allowed)
      expect(v.command).toMatch(/^fcctl deliveries replay /);
    },
  );
});

describe('an outbox row newer than FC as read: FC changed while explain read it', () => {
  it('SH holds that newer revision, the delivery in flight: not SH_AHEAD "a person decides"', () => {
    const v = verdictOf(
      facts({ newest: inFlight('5'), sh: { kind: 'found', row: proj({ revision: '5', contentHash: OTHER }) } }),
    );
    expect(v.kind).not.toBe('SH_AHEAD');
    expect(v.text).not.toContain('a person decides');
    expect(v.text).toContain('explain again');
    expect(v).toMatchObject({ command: null, execute: null });
  });
});

describe('SH legitimately behind, a newer revision in flight: SH_STALE waits for the delivery', () => {
  it.each([
    ['behind, same hash as its revision had', proj({ revision: '3', contentHash: OTHER })],
    ['behind, deleted', proj({ revision: '3', isDeleted: true })],
  ])('%s', (_n, sh) => {
    const v = verdictOf(facts({ newest: inFlight('4'), sh: { kind: 'found', row: sh } }));
    expect(v.kind).toBe('ACCEPTED_NOT_APPLIED');
    expect(v.command).toBeNull();
  });
});

describe('the grant not read (its section failed): no claim about a grant explain did not see', () => {
  it.each([
    ['DEAD', row({ lastError: 'NACK: broker nack' })],
    ['FAILED', row({ state: 'FAILED', retryCount: 1, lastError: 'NACK: broker nack' })],
    ['PENDING', row({ state: 'PENDING', retryCount: 0 })],
  ])('%s', (_n, r) => {
    const v = verdictOf(facts({ newest: r, grant: 'unread' }));
    expect(v.text).not.toContain('no grant');
    expect(v.kind).not.toBe('WILL_BE_REVOKED');
    expect(v.text).not.toContain('would answer GRANT_REVOKED');
    expect(v.text).toContain('grant was not read');
  });
});

describe('DEAD SNAPSHOT_HASH_MISMATCH: the repair from FC only where it would be APPLIED', () => {
  const shm = (r: Partial<OutboxRow> = {}) => row({ lastError: 'SNAPSHOT_HASH_MISMATCH: recomputed x', ...r });
  it('SH lacking it, the grant valid: the repair (dry run, then the write)', () => {
    const v = verdictOf(facts({ newest: shm() }));
    expect(v.command).toMatch(/^fcctl projection repair-authoritative .* --expect-missing --proof-id \S+$/);
    expect(v.execute).toBe(`${v.command} --execute`);
  });
  it.each([
    ['the grant revoked', facts({ newest: shm(), grant: { ...GRANT, revoked: true } })],
    ['the grant at a newer version', facts({ newest: shm(), grant: { ...GRANT, grantVersion: '2' } })],
    ['no grant', facts({ newest: shm(), grant: null })],
    ['a consumer school other than the answer’s (SCHOOL_MISMATCH)', facts({ schId: '6', newest: shm({ schId: '6' }) })],
    [
      'FC at a newer revision (the outbox behind)',
      facts({ newest: shm(), fc: { kind: 'found', schId: '5', revision: '5', contentHash: OTHER, isDeleted: false } }),
    ],
    [
      'FC at the row’s revision with another hash',
      facts({ newest: shm(), fc: { kind: 'found', schId: '5', revision: '4', contentHash: OTHER, isDeleted: false } }),
    ],
    ['SH ahead', facts({ newest: shm(), sh: { kind: 'found', row: proj({ revision: '5' }) } })],
    [
      'SH already holding it',
      facts({ newest: shm(), sh: { kind: 'found', row: proj({ revision: '4', contentHash: HASH }) } }),
    ],
  ])('%s: no command', (_n, f) => {
    const v = verdictOf(f);
    expect(v).toMatchObject({ command: null, execute: null });
    expect(v.text).not.toMatch(/a replay sends it/);
  });
});
