/**
 * `fcctl explain`'s verdict (issue 29 §1), without I/O: one row per situation of the chain (FC,
 * grant, the newest outbox row's state, SH), then every combination checked for what must hold.
 */
import { describe, expect, it } from 'vitest';
import {
  applyVerdict,
  duration,
  errorCode,
  explainExitCode,
  relative,
  repairCommand,
  replayCommand,
  requeueCommand,
  verdictOf,
} from '../../src/lib/explain/decide.js';
import { shellWord } from '../../src/lib/cli/shell.js';
import type {
  ApplyCommandFacts,
  GrantFacts,
  OutboxRow,
  ProjectionFacts,
  VerdictFacts,
} from '../../src/lib/explain/types.js';
import { decideReplay, type ReplayRow } from '../../src/lib/deliveries/replay/decide.js';
import type { GrantRow } from '../../src/lib/deliveries/types.js';
import { grantRefusal as repairGrantRefusal } from '../../src/lib/projection/repair-authoritative/decide.js';

const A = '0a0b0c0d-0000-4000-8000-00000000000a';
const HASH = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);

const grant = (g: Partial<GrantFacts> = {}): GrantFacts => ({
  formUuid: 'f',
  consumerAppKey: 'k1',
  schId: '5',
  grantVersion: '1',
  read: true,
  subscribe: true,
  push: true,
  revoked: false,
  ...g,
});
const row = (r: Partial<OutboxRow> = {}): OutboxRow => ({
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
  state: 'PENDING',
  retryCount: 0,
  lastError: null,
  nextRetryAt: null,
  nextRetryInSeconds: null,
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
  revision: '4',
  contentHash: HASH,
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
const facts = (f: Partial<VerdictFacts> = {}): VerdictFacts => ({
  answerUuid: A,
  consumerAppKey: 'k1',
  schId: '5',
  fc: { kind: 'found', revision: '4', contentHash: HASH, isDeleted: false },
  grant: grant(),
  newest: row(),
  sh: { kind: 'unread' },
  ...f,
});
/** The same row and grant as `deliveries replay` reads them. */
const replayRowOf = (r: OutboxRow): ReplayRow => ({
  id: '1',
  event_id: r.eventId,
  state: r.state as ReplayRow['state'],
  retry_count: r.retryCount,
  replay_op_digest: r.generation,
  answer_revision: r.revision,
  grant_version: r.grantVersion,
  form_uuid: r.formUuid,
  last_error: r.lastError,
  consumer_applied_at: r.consumerAppliedAt,
  consumer_outcome: r.consumerOutcome,
});
const grantRowOf = (g: GrantFacts): GrantRow => ({
  form_uuid: 'f',
  consumer_school_id: g.schId,
  consumer_app_key: g.consumerAppKey,
  grant_version: g.grantVersion,
  read_allowed: g.read ? 1 : 0,
  subscribe_allowed: g.subscribe ? 1 : 0,
  push_allowed: g.push ? 1 : 0,
  revoked: g.revoked ? 1 : 0,
});
const accepted = (r: Partial<OutboxRow> = {}) =>
  row({ state: 'BROKER_ACCEPTED', brokerAcceptedAt: '2026-12-01 10:00:01', acceptedAgoSeconds: 7200, ...r });
const applied = accepted({ consumerAppliedAt: '2026-12-01 10:00:05', consumerOutcome: 'APPLIED' });
const REPLAY = `fcctl deliveries replay --consumer k1 --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e1:g0`;
const repair = (expected: string) =>
  `fcctl projection repair-authoritative --consumer k1 --school 5 --answer ${A} ${expected} --proof-id explain:${A}:4`;

describe('verdictOf: one row per situation', () => {
  it.each<[string, Partial<VerdictFacts>, string, string, string | null]>([
    ['FC not read', { fc: { kind: 'unread' } }, 'UNKNOWN', 'FC not read', null],
    [
      'absent at FC, present at SH',
      { fc: { kind: 'absent' }, sh: { kind: 'found', row: proj({ revision: '3' }) } },
      'ABSENT_AT_FC',
      'absent at FC, present at SH (revision 3): see `fcctl retire-absent prove`',
      null,
    ],
    [
      'absent at FC, retired at SH',
      {
        fc: { kind: 'absent' },
        sh: { kind: 'found', row: proj({ retiredAt: '2026-12-01 03:00:00', retireProofId: 'p1' }) },
      },
      'RETIRED',
      'absent at FC, retired at SH on 2026-12-01 03:00:00 (proof p1)',
      null,
    ],
    [
      'absent at FC and SH',
      { fc: { kind: 'absent' }, sh: { kind: 'absent' } },
      'ABSENT_AT_FC',
      'absent at FC (outbox: revision 4, PENDING); absent at SH',
      null,
    ],
    [
      'absent at FC, SH not read, no row',
      { fc: { kind: 'absent' }, newest: null },
      'ABSENT_AT_FC',
      'absent at FC; SH not read',
      null,
    ],
    [
      'no row, grant fine',
      { newest: null },
      'NO_DELIVERY_ROW',
      'no outbox row: the producer has not written revision 4',
      null,
    ],
    ['no row, no grant', { newest: null, grant: null }, 'NO_GRANT', 'no grant and no outbox row', null],
    [
      'no row, grant revoked',
      { newest: null, grant: grant({ revoked: true }) },
      'NO_GRANT',
      'grant revoked (version 1) and no outbox row',
      null,
    ],
    [
      'outbox behind FC',
      { newest: accepted({ revision: '3' }) },
      'OUTBOX_BEHIND',
      'outbox behind FC: newest row revision 3 (BROKER_ACCEPTED), FC 4',
      null,
    ],
    ['PENDING due', {}, 'WAITING', 'waiting: due now (PENDING)', null],
    [
      'FAILED, next retry in 3m',
      { newest: row({ state: 'FAILED', retryCount: 2, lastError: 'NACK: nacked', nextRetryInSeconds: 180 }) },
      'WAITING',
      'waiting: next retry in 3m after NACK ×2',
      null,
    ],
    [
      'FAILED overdue',
      { newest: row({ state: 'FAILED', retryCount: 1, lastError: 'NO_ROUTE: x', nextRetryInSeconds: -30 }) },
      'WAITING',
      'waiting: due now after NO_ROUTE ×1',
      null,
    ],
    ['held', { grant: grant({ push: false }) }, 'HELD', 'held: push_allowed = 0 (PENDING)', null],
    [
      'held after failures',
      { grant: grant({ push: false }), newest: row({ state: 'FAILED', retryCount: 2, lastError: 'NACK' }) },
      'HELD',
      'held: push_allowed = 0 (FAILED after NACK ×2)',
      null,
    ],
    [
      'claimed by a live relay',
      {
        newest: row({
          claimOwner: 'h1:42:abc',
          claimLive: true,
          claimExpiresAt: '2026-12-01 10:01:00',
          claimHolder: {
            workerId: 'w',
            host: 'h1',
            pid: 42,
            state: 'running',
            lastBeatAt: 'x',
            stale: false,
            gone: false,
          },
        }),
      },
      'SENDING',
      'being sent: claimed by h1:42:abc until 2026-12-01 10:01:00 (h1 pid 42)',
      null,
    ],
    [
      'claimed, no registry row',
      { newest: row({ claimOwner: 'h1:42:abc', claimLive: true, claimExpiresAt: 't' }) },
      'SENDING',
      '(no registry row)',
      null,
    ],
    [
      'an expired claim is no claim',
      { newest: row({ claimOwner: 'h1:42:abc', claimLive: false }) },
      'WAITING',
      'waiting: due now',
      null,
    ],
    [
      'PENDING, grant revoked',
      { grant: grant({ revoked: true }) },
      'WILL_BE_REVOKED',
      'PENDING, but grant revoked (version 1): the next send marks it GRANT_REVOKED',
      null,
    ],
    [
      'PENDING, grant advanced',
      { grant: grant({ grantVersion: '2' }) },
      'WILL_BE_REVOKED',
      "grant version 2, the row's 1",
      null,
    ],
    [
      'PENDING, no subscribe',
      { grant: grant({ subscribe: false }) },
      'WILL_BE_REVOKED',
      'grant without subscribe',
      null,
    ],
    ['PENDING, no grant', { grant: null }, 'WILL_BE_REVOKED', 'no grant', null],
    [
      'DEAD',
      { newest: row({ state: 'DEAD', retryCount: 8, lastError: 'NO_ROUTE: unroutable' }) },
      'DEAD',
      'DEAD (NO_ROUTE ×8)',
      REPLAY,
    ],
    [
      'DEAD after a replay: the next generation',
      { newest: row({ state: 'DEAD', retryCount: 8, lastError: 'NACK', generation: 'c'.repeat(64) }) },
      'DEAD',
      'DEAD (NACK ×8)',
      REPLAY.replace('explain:e1:g0', `explain:e1:g${'c'.repeat(12)}`),
    ],
    [
      'DEAD, grant revoked',
      { grant: grant({ revoked: true }), newest: row({ state: 'DEAD', retryCount: 8, lastError: 'NACK' }) },
      'DEAD',
      'a replay would answer GRANT_REVOKED',
      null,
    ],
    [
      'DEAD, unroutable key',
      {
        consumerAppKey: 'k.1',
        newest: row({ consumerAppKey: 'k.1', state: 'DEAD', retryCount: 8, lastError: 'INVALID_ROUTING_KEY' }),
      },
      'DEAD',
      'cannot make a routing key',
      null,
    ],
    [
      'DEAD but applied',
      { newest: row({ state: 'DEAD', retryCount: 8, lastError: 'NACK', consumerAppliedAt: 't' }) },
      'DELIVERED_APPLIED',
      'but applied by the consumer at t',
      null,
    ],
    [
      'GRANT_REVOKED, the grant still revoked',
      { newest: row({ state: 'GRANT_REVOKED', lastError: 'GRANT_REVOKED: revoked' }), grant: grant({ revoked: true }) },
      'GRANT_REVOKED',
      'GRANT_REVOKED (GRANT_REVOKED) at grant version 1; now: grant revoked (version 1); `deliveries replay` would answer GRANT_REVOKED (a revoked row is never replayed)',
      null,
    ],
    [
      'GRANT_REVOKED, no grant now',
      { newest: row({ state: 'GRANT_REVOKED', lastError: 'GRANT_MISSING' }), grant: null },
      'GRANT_REVOKED',
      'GRANT_REVOKED (GRANT_MISSING) at grant version 1; now: no grant;',
      null,
    ],
    [
      'GRANT_REVOKED, re-granted at the same version',
      { newest: row({ state: 'GRANT_REVOKED', lastError: 'GRANT_REVOKED' }) },
      'REGRANTED',
      'GRANT_REVOKED (GRANT_REVOKED) at grant version 1; the grant is valid again at version 1: `deliveries replay` would answer GRANT_REVOKED (a revoked row is never replayed); revision 4 goes out only in a new outbox row the producer writes under version 1',
      null,
    ],
    [
      'GRANT_REVOKED, re-granted at a newer version',
      {
        newest: row({ state: 'GRANT_REVOKED', lastError: 'GRANT_VERSION_CHANGED' }),
        grant: grant({ grantVersion: '3' }),
      },
      'REGRANTED',
      'GRANT_REVOKED (GRANT_VERSION_CHANGED) at grant version 1; the grant is valid again at version 3:',
      null,
    ],
    [
      'GRANT_REVOKED, but applied by the consumer',
      {
        newest: row({
          state: 'GRANT_REVOKED',
          lastError: 'GRANT_REVOKED',
          consumerAppliedAt: 't',
          consumerOutcome: 'APPLIED',
        }),
      },
      'REGRANTED',
      '`deliveries replay` would answer ALREADY_DELIVERED (APPLIED at t)',
      null,
    ],
    [
      'applied, SH not read',
      { newest: applied },
      'DELIVERED_APPLIED',
      'delivered and applied (APPLIED at 2026-12-01 10:00:05)',
      null,
    ],
    [
      'applied, SH in step',
      { newest: applied, sh: { kind: 'found', row: proj() } },
      'DELIVERED_APPLIED',
      'delivered and applied',
      null,
    ],
    [
      'accepted 2h ago, not applied, SH not read',
      { newest: accepted() },
      'ACCEPTED_NOT_APPLIED',
      'accepted by the broker, not yet applied by the consumer (2h)',
      null,
    ],
    [
      'accepted 2m ago, SH stale: still in flight',
      { newest: accepted({ acceptedAgoSeconds: 120 }), sh: { kind: 'found', row: proj({ revision: '3' }) } },
      'ACCEPTED_NOT_APPLIED',
      'not yet applied by the consumer (2m)',
      null,
    ],
    [
      'applied, SH stale',
      { newest: applied, sh: { kind: 'found', row: proj({ revision: '3', contentHash: OTHER }) } },
      'SH_STALE',
      'SH stale (revision 3, FC 4)',
      repair(`--expected-revision 3 --expected-hash ${OTHER} --expected-is-deleted 0`),
    ],
    [
      'applied, SH stale, the grant revoked since: the repair would be DEFERRED, none suggested',
      {
        newest: applied,
        grant: grant({ revoked: true }),
        sh: { kind: 'found', row: proj({ revision: '3', contentHash: OTHER }) },
      },
      'SH_STALE',
      'SH stale (revision 3, FC 4); a repair under k1 would be DEFERRED: grant revoked (version 1)',
      null,
    ],
    [
      "applied, SH stale at a school other than the answer's: none suggested",
      {
        fc: { kind: 'found', schId: '9', revision: '4', contentHash: HASH, isDeleted: false },
        newest: applied,
        sh: { kind: 'found', row: proj({ revision: '3', contentHash: OTHER }) },
      },
      'SH_STALE',
      "SH stale (revision 3, FC 4); a repair under k1 would be DEFERRED: FC's answer belongs to school 9 (SCHOOL_MISMATCH)",
      null,
    ],
    [
      'applied, SH missing, no grant: none suggested',
      { newest: applied, grant: null, sh: { kind: 'absent' } },
      'SH_MISSING',
      'SH has no projection (FC revision 4); a repair under k1 would be DEFERRED: no grant',
      null,
    ],
    [
      'applied, SH stale, two consumers compared with it: the repair under this one, said to be one of two',
      {
        newest: applied,
        shConsumers: ['k1', 'k2'],
        sh: { kind: 'found', row: proj({ revision: '3', contentHash: OTHER }) },
      },
      'SH_STALE',
      "SH stale (revision 3, FC 4) — if SH is k1's: SH serves one consumer, and 2 at school 5 are compared with it (k1, k2); run only the repair under SH's own consumer key (or explain again with --consumer)",
      repair(`--expected-revision 3 --expected-hash ${OTHER} --expected-is-deleted 0`),
    ],
    [
      'accepted 2h ago, SH stale',
      { newest: accepted(), sh: { kind: 'found', row: proj({ revision: '3', contentHash: OTHER }) } },
      'SH_STALE',
      'SH stale (revision 3, FC 4)',
      repair(`--expected-revision 3 --expected-hash ${OTHER} --expected-is-deleted 0`),
    ],
    [
      'applied, SH missing',
      { newest: applied, sh: { kind: 'absent' } },
      'SH_MISSING',
      'SH has no projection (FC revision 4)',
      repair('--expect-missing'),
    ],
    [
      'applied, SH same revision other hash',
      { newest: applied, sh: { kind: 'found', row: proj({ contentHash: OTHER }) } },
      'SH_DIFFERS',
      'SH differs at revision 4',
      repair(`--expected-revision 4 --expected-hash ${OTHER} --expected-is-deleted 0`),
    ],
    [
      'applied, SH same revision other isDeleted',
      { newest: applied, sh: { kind: 'found', row: proj({ isDeleted: true }) } },
      'SH_DIFFERS',
      'SH differs at revision 4',
      repair(`--expected-revision 4 --expected-hash ${HASH} --expected-is-deleted 1`),
    ],
    [
      'applied, SH ahead',
      { newest: applied, sh: { kind: 'found', row: proj({ revision: '5' }) } },
      'SH_AHEAD',
      'SH ahead (revision 5, FC 4): never downgraded',
      null,
    ],
    [
      'applied, SH retired',
      { newest: applied, sh: { kind: 'found', row: proj({ retiredAt: 't', retireProofId: 'p' }) } },
      'RETIRED_PRESENT_AT_FC',
      'retired at SH (proof p) but present at FC (revision 4)',
      null,
    ],
    [
      'revisions beyond 2^53 compare exactly',
      {
        fc: { kind: 'found', revision: '9007199254740993', contentHash: HASH, isDeleted: false },
        newest: row({ revision: '9007199254740992' }),
      },
      'OUTBOX_BEHIND',
      'revision 9007199254740992',
      null,
    ],
  ])('%s', (_name, f, kind, text, command) => {
    const v = verdictOf(facts(f));
    expect(v.kind).toBe(kind);
    expect(v.text).toContain(text);
    expect(v.command).toBe(command);
    // the dry run, then the write: the same line with --execute (issue 36 §13)
    expect(v.execute).toBe(command === null ? null : `${command} --execute`);
    expect(v).toMatchObject({ consumerAppKey: f.consumerAppKey ?? 'k1', schId: '5' });
  });
});

describe('verdictOf: every state × grant × SH situation', () => {
  const states: Array<[string, OutboxRow | null]> = [
    ['none', null],
    ['PENDING', row()],
    ['FAILED', row({ state: 'FAILED', retryCount: 3, lastError: 'NACK', nextRetryInSeconds: 60 })],
    ['DEAD', row({ state: 'DEAD', retryCount: 8, lastError: 'NO_ROUTE' })],
    ['GRANT_REVOKED', row({ state: 'GRANT_REVOKED', lastError: 'GRANT_REVOKED' })],
    ['ACCEPTED recent', accepted({ acceptedAgoSeconds: 10 })],
    ['ACCEPTED old', accepted()],
    ['APPLIED', applied],
    ['REJECTED by the consumer', accepted({ consumerAppliedAt: '2026-12-01 10:00:05', consumerOutcome: 'REJECTED' })],
    [
      'DEAD, DEFERRED by the consumer',
      row({ state: 'DEAD', retryCount: 8, consumerAppliedAt: 't', consumerOutcome: 'DEFERRED' }),
    ],
    ['older revision', accepted({ revision: '3' })],
  ];
  const grants: Array<[string, GrantFacts | null]> = [
    ['ok', grant()],
    ['push 0', grant({ push: false })],
    ['revoked', grant({ revoked: true })],
    ['advanced', grant({ grantVersion: '9' })],
    ['none', null],
  ];
  const shs: Array<[string, VerdictFacts['sh']]> = [
    ['unread', { kind: 'unread' }],
    ['absent', { kind: 'absent' }],
    ['in step', { kind: 'found', row: proj() }],
    ['stale', { kind: 'found', row: proj({ revision: '3' }) }],
    ['ahead', { kind: 'found', row: proj({ revision: '5' }) }],
    ['differs', { kind: 'found', row: proj({ contentHash: OTHER }) }],
    ['retired', { kind: 'found', row: proj({ retiredAt: 't' }) }],
  ];
  const fcs: Array<[string, VerdictFacts['fc']]> = [
    ['found', { kind: 'found', revision: '4', contentHash: HASH, isDeleted: false }],
    ['absent', { kind: 'absent' }],
  ];
  const all = fcs.flatMap(([fn, fc]) =>
    states.flatMap(([sn, newest]) =>
      grants.flatMap(([gn, g]) =>
        shs.map(([hn, sh]) => [`${fn}/${sn}/${gn}/${hn}`, facts({ fc, newest, grant: g, sh })] as const),
      ),
    ),
  );

  it(`covers ${all.length} combinations, each with a sentence`, () => {
    expect(all).toHaveLength(2 * 11 * 5 * 7);
    for (const [name, f] of all) expect(verdictOf(f).text.length, name).toBeGreaterThan(10);
  });

  it('suggests a replay exactly when `deliveries replay` (seed 000 §8 replayAuthorized) would queue it and the consumer would take it then', () => {
    for (const [name, f] of all) {
      const v = verdictOf(f);
      const suggested = v.command?.startsWith('fcctl deliveries replay') ?? false;
      if (f.fc.kind !== 'found' || f.newest === null || f.newest.revision !== '4' || f.grant === 'unread') continue;
      // the newest row not taken in by the consumer: the replay's answer decides, unless SH needs a repair first
      if (['SH_STALE', 'SH_MISSING', 'SH_DIFFERS', 'SH_AHEAD', 'RETIRED_PRESENT_AT_FC'].includes(v.kind)) continue;
      const code = decideReplay({
        request: { answerUuid: A, consumerAppKey: 'k1', consumerSchoolId: '5', expectedRevision: '4', opDigest: 'x' },
        newest: replayRowOf(f.newest),
        grant: f.grant === null ? null : grantRowOf(f.grant),
        prior: null,
      }).code;
      // a consumer that refused the payload (REJECTED) or keeps another hash (CONFLICT) refuses the same row again
      const again = ['REJECTED', 'CONFLICT'].includes(f.newest.consumerOutcome ?? '');
      const worthIt = (f.newest.state === 'DEAD' || f.newest.consumerAppliedAt !== null) && !again;
      expect(suggested, `${name}: replay answers ${code}`).toBe(code === 'QUEUED' && worthIt);
    }
  });

  it('suggests a replay only for a DEAD or refused row whose grant lets it out, exactly as replay takes it', () => {
    for (const [name, f] of all) {
      const v = verdictOf(f);
      if (v.command?.startsWith('fcctl deliveries replay')) {
        expect(f.newest?.state === 'DEAD' || f.newest?.consumerOutcome === 'REJECTED', name).toBe(true);
        expect(f.fc.kind).toBe('found');
        expect(v.command).toBe(replayCommand(f.newest!, A).command);
      }
      if (f.fc.kind === 'found' && f.newest?.state === 'DEAD' && f.grant !== null && f.grant !== 'unread') {
        const g = f.grant;
        const free = !g.revoked && g.read && g.subscribe && g.grantVersion === '1';
        expect(v.command !== null, name).toBe(free);
      }
    }
  });

  it('suggests a repair once the delivery is settled and SH is missing or behind; SH different at FC’s revision at once', () => {
    for (const [name, f] of all) {
      const v = verdictOf(f);
      if (!v.command?.startsWith('fcctl projection repair-authoritative')) continue;
      expect(['SH_STALE', 'SH_MISSING', 'SH_DIFFERS'], name).toContain(v.kind);
      expect(f.newest?.state, name).toBe('BROKER_ACCEPTED');
      // no delivery in flight repairs the same revision with another hash (SPEC §6, issue 36 §12)
      if (v.kind !== 'SH_DIFFERS')
        expect(f.newest?.consumerAppliedAt !== null || (f.newest?.acceptedAgoSeconds ?? 0) >= 3600, name).toBe(true);
      // the repair's own grant check (SPEC §6), the snapshot built from FC under the grant's version
      const g = f.grant === null || f.grant === 'unread' ? null : grantRowOf(f.grant);
      expect(
        repairGrantRefusal(g, { formUuid: 'f', schId: '5', grantVersion: g?.grant_version ?? '' }, 'k1'),
        name,
      ).toBeNull();
    }
    const kinds = new Set(all.map(([, f]) => verdictOf(f).kind));
    for (const k of ['SH_STALE', 'SH_MISSING', 'SH_DIFFERS', 'SH_AHEAD', 'HELD', 'DEAD', 'WAITING', 'ABSENT_AT_FC'])
      expect(kinds).toContain(k);
  });

  it('FC absent never suggests a command and never reads the grant', () => {
    for (const [name, f] of all) if (f.fc.kind === 'absent') expect(verdictOf(f).command, name).toBeNull();
  });
});

describe('helpers', () => {
  it.each([
    [0, '0s'],
    [59, '59s'],
    [180, '3m'],
    [7200, '2h'],
    [172_800, '2d'],
  ])('duration(%d) = %s', (s, text) => expect(duration(s)).toBe(text));
  it('relative', () => {
    expect(relative(180)).toBe('in 3m');
    expect(relative(-300)).toBe('5m ago');
    expect(relative(0)).toBe('now');
    expect(relative(null)).toBeNull();
  });
  it('shellWord quotes what a shell would read', () => {
    expect(shellWord('explain:e1:g0')).toBe('explain:e1:g0');
    expect(shellWord("k'$x")).toBe(`'k'\\''$x'`);
  });
  it('errorCode', () => {
    expect(errorCode('NACK: nacked by broker')).toBe('NACK');
    expect(errorCode(null)).toBe('no error recorded');
  });
  it('repairCommand of a missing row', () => {
    expect(repairCommand('k1', '5', A, null, '4').command).toBe(repair('--expect-missing'));
  });
  it('explainExitCode', () => {
    expect(explainExitCode({ found: true, unreachable: 0 })).toBe(0);
    expect(explainExitCode({ found: false, unreachable: 0 })).toBe(1);
    expect(explainExitCode({ found: true, unreachable: 1 })).toBe(3);
    expect(explainExitCode({ found: false, unreachable: 1 })).toBe(3);
  });
});

describe('printed commands: a value that is not what it claims goes into none', () => {
  const local = proj({ revision: '3' });
  it.each([
    ['the consumer key', { consumerAppKey: 'k 1' }, 'an app key of a routing key'],
    ['the consumer key', { consumerAppKey: 'k.1' }, 'an app key of a routing key'],
    ['the school', { schId: '0' }, 'a positive whole number'],
    ['the school', { schId: '$(id)' }, 'a positive whole number'],
    ['the revision', { revision: '4;id' }, 'a whole number'],
    ['the event id', { eventId: 'e\u0007' }, 'fit for an operation id'],
  ] as const)('replay: %s %j', (what, r, should) => {
    const s = replayCommand(row(r), A);
    expect(s.command).toBeNull();
    const value = Object.values(r)[0]!;
    expect(s.problem).toBe(`${what} ${JSON.stringify(value)} is not ${should}: no command is printed with it`);
  });
  it.each(['$(touch /tmp/y)', A.toUpperCase().replace('A', 'G'), '', `${A} `])(
    'replay and repair: answer %j',
    (answer) => {
      expect(replayCommand(row(), answer)).toEqual({
        command: null,
        execute: null,
        problem: `the answer uuid ${JSON.stringify(answer)} is not a UUID: no command is printed with it`,
      });
      expect(repairCommand('k1', '5', answer, local, '4').command).toBeNull();
    },
  );
  it.each([
    ["SH's content_hash", proj({ contentHash: '$(touch /tmp/x)' }), '64 lowercase hex digits'],
    ["SH's content_hash", proj({ contentHash: 'A'.repeat(64) }), '64 lowercase hex digits'],
    ["SH's content_hash", proj({ contentHash: 'a'.repeat(63) }), '64 lowercase hex digits'],
    ["SH's revision", proj({ revision: '-1' }), 'a whole number'],
  ] as const)('repair: %s of %j', (what, p, should) => {
    const value = what === "SH's revision" ? p.revision : p.contentHash;
    expect(repairCommand('k1', '5', A, p, '4')).toEqual({
      command: null,
      execute: null,
      problem: `${what} ${JSON.stringify(value)} is not ${should}: no command is printed with it`,
    });
  });
  it('repair: a key with a space, a school not a number', () => {
    expect(repairCommand('k 1', '5', A, local, '4').problem).toContain('the consumer key "k 1" is not an app key');
    expect(repairCommand('k1', '5x', A, local, '4').problem).toContain(
      'the school "5x" is not a positive whole number',
    );
  });
  it('a fit value a shell would read is quoted, the verdict keeps its command', () => {
    const key = "k'$(id)`id`;x";
    const v = verdictOf(
      facts({ consumerAppKey: key, newest: row({ consumerAppKey: key, state: 'DEAD', retryCount: 8 }) }),
    );
    expect(v.command).toBe(
      `fcctl deliveries replay --consumer 'k'\\''$(id)\`id\`;x' --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e1:g0`,
    );
  });
  it('the verdict says why no command: the value as data', () => {
    const v = verdictOf(facts({ sh: { kind: 'found', row: proj({ contentHash: "'$(x)'" }) }, newest: applied }));
    expect(v).toMatchObject({ kind: 'SH_DIFFERS', command: null });
    expect(v.text).toContain(
      `SH's content_hash "'$(x)'" is not 64 lowercase hex digits: no command is printed with it`,
    );
  });
});

const command = (c: Partial<ApplyCommandFacts> = {}): ApplyCommandFacts => ({
  id: '7',
  bizType: 'honor_apply',
  bizId: 'A-1',
  state: 'DONE',
  lastBranch: null,
  remoteStatus: null,
  remoteInstanceId: null,
  retryCount: 0,
  nextRetryAt: null,
  nextRetryInSeconds: null,
  lastError: null,
  updateTime: '2026-12-01 10:00:00',
  flowStatus: null,
  schId: '5',
  ...c,
});
const REQUEUE =
  'fcctl apply-command requeue --biz-type honor_apply --biz-id A-1 --operation-id explain:requeue:7:20261201100000';

describe('applyVerdict: the apply command once delivered and applied', () => {
  const delivered = verdictOf(facts({ newest: applied, sh: { kind: 'found', row: proj() } }));
  it.each([
    ['DONE', null, null, null],
    ['NO_COMMAND', null, null, null],
    ['PENDING', null, 'APPLY_PENDING', null],
    ['UNKNOWN', 'REQUEUED: was DEAD', 'APPLY_UNKNOWN', null],
    ['FAILED', 'APPLY_HTTP_503: busy', 'APPLY_FAILED', null],
    ['DEAD', 'OWNERSHIP_MISMATCH: FI-9', 'APPLY_DEAD', null],
    ['DEAD', 'UNEXPECTED_BRANCH: RESTARTED', 'APPLY_DEAD', null],
    ['DEAD', 'INVALID_COMMAND: no flowGuid', 'APPLY_DEAD', null],
    ['DEAD', 'LOOKUP_TIMEOUT: 5000 ms', 'APPLY_DEAD', REQUEUE],
    ['DEAD', 'APPLY_NETWORK: ECONNREFUSED', 'APPLY_DEAD', REQUEUE],
    ['DEAD', 'LOOKUP_HTTP_503', 'APPLY_DEAD', REQUEUE],
    ['DEAD', 'APPLY_HTTP_400: bad request', 'APPLY_DEAD', REQUEUE],
    ['DEAD', 'LOOKUP_MALFORMED: not JSON', 'APPLY_DEAD', REQUEUE],
    // a reason resolve-unknown never writes (none, or its service's own): a person first, no requeue
    ['DEAD', null, 'APPLY_DEAD', null],
    ['DEAD', 'CANCELLED: withdrawn by the applicant', 'APPLY_DEAD', null],
    ['WEIRD', null, 'UNKNOWN', null],
  ] as const)('%s (%s): %s, command %s', (state, lastError, kind, cmd) => {
    const v = applyVerdict(command({ state, lastError, retryCount: 6 }), delivered);
    if (kind === null) {
      expect(v).toBeNull();
      return;
    }
    expect(v).toMatchObject({ consumerAppKey: 'k1', schId: '5', kind, command: cmd });
    expect(v!.text.startsWith(`${delivered.text}; flow apply command honor_apply/A-1 `)).toBe(true);
  });
  it('who acts on a DEAD one', () => {
    const text = (lastError: string) => applyVerdict(command({ state: 'DEAD', lastError }), delivered)!.text;
    expect(text('OWNERSHIP_MISMATCH: x')).toContain('a person must look at the flow instance');
    expect(text('UNEXPECTED_BRANCH: x')).toContain(
      'a requeue would look it up and, finding it, settle the command DONE with its status as it is',
    );
    expect(text('CANCELLED: x')).toContain(
      'not by a reason apply-command resolve-unknown writes: a person must find out why first',
    );
    expect(text('INVALID_COMMAND: x')).toContain('a person must correct it (its service), then requeue it');
    expect(text('LOOKUP_TIMEOUT: x')).toContain('once it answers again, requeue it — a dry run first');
    expect(text('APPLY_HTTP_403: x')).toContain('a person finds why there, then requeues it');
  });
  it('when resolve-unknown takes an UNKNOWN or FAILED one', () => {
    const text = (c: Partial<ApplyCommandFacts>) => applyVerdict(command(c), delivered)!.text;
    expect(text({ state: 'UNKNOWN', nextRetryInSeconds: null })).toMatch(
      /is UNKNOWN \(its send outcome unknown\): apply-command resolve-unknown settles it now \(due\)/,
    );
    expect(text({ state: 'FAILED', lastError: 'LOOKUP_NETWORK', retryCount: 2, nextRetryInSeconds: 180 })).toMatch(
      /is FAILED \(LOOKUP_NETWORK ×2\): apply-command resolve-unknown tries it again in 3m$/,
    );
  });
  it('a requeue: an operation id per DEAD episode; a key part requeue refuses goes into no command', () => {
    expect(requeueCommand(command({ updateTime: '2026-12-02 08:00:00' })).command).toContain(
      '--operation-id explain:requeue:7:20261202080000',
    );
    expect(requeueCommand(command({ bizId: ' A-1' }))).toEqual({
      command: null,
      execute: null,
      problem: 'the biz id " A-1" is not a key part requeue takes: no command is printed with it',
    });
    expect(requeueCommand(command({ bizType: 'x'.repeat(33) })).command).toBeNull();
    expect(requeueCommand(command({ bizId: "A'$(id)" })).command).toBe(
      `fcctl apply-command requeue --biz-type honor_apply --biz-id 'A'\\''$(id)' --operation-id explain:requeue:7:20261201100000`,
    );
  });
});

describe('verdictOf with the apply commands', () => {
  it('a DEAD command turns delivered and applied into APPLY_DEAD; any other verdict stays', () => {
    const dead = command({ state: 'DEAD', lastError: 'OWNERSHIP_MISMATCH: x' });
    const synced = { kind: 'found', row: proj() } as const;
    expect(verdictOf(facts({ newest: applied, sh: synced, applyCommands: [dead] })).kind).toBe('APPLY_DEAD');
    expect(verdictOf(facts({ newest: applied, sh: synced, applyCommands: [command(), dead] })).kind).toBe('APPLY_DEAD');
    expect(verdictOf(facts({ newest: applied, sh: synced, applyCommands: [command()] })).kind).toBe(
      'DELIVERED_APPLIED',
    );
    expect(verdictOf(facts({ newest: row(), applyCommands: [dead] })).kind).toBe('WAITING');
    const stale = { kind: 'found', row: proj({ revision: '3' }) } as const;
    expect(verdictOf(facts({ newest: applied, sh: stale, applyCommands: [dead] })).kind).toBe('SH_STALE');
  });
});
