import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type Authoritative,
  type AuthoritativeSnapshot,
  DRY_RUN_RESULTS,
  decideRepair,
  envelopeAgainstFc,
  type FreshGrant,
  isRefused,
  MISSING,
  type ObservedLocal,
  type RepairDecision,
  REASON_CODES,
  REPAIR_RESULTS,
  type RepairResult,
  resultsFor,
  type Triple,
} from '../../src/lib/projection/repair-authoritative/decide.js';
import { UsageError } from '../../src/lib/cli/exit.js';
import { LineError } from '../../src/lib/files/record-file.js';
import { checkProofId, parsePlan, singleAnswerOf } from '../../src/lib/projection/repair-authoritative/input.js';
import { repairEventId } from '../../src/lib/projection/repair-authoritative/decide.js';
import { auditSql, projectionSql } from '../../src/lib/projection/repair-authoritative/sql.js';

const FORM = 'f0000000-0000-4000-8000-000000000001';
const ANSWER = 'a0000000-0000-4000-8000-000000000001';
const H = (c: string) => c.repeat(64);

const snapshot: AuthoritativeSnapshot = {
  source: 'fc',
  eventId: 'e0000000-0000-4000-8000-000000000001',
  answerUuid: ANSWER,
  schId: '5',
  formUuid: FORM,
  formVersion: '4',
  revision: '3',
  contentHash: H('a'),
  isDeleted: false,
  grantVersion: '2',
  snapshotJson: '{}',
};
const grant: FreshGrant = {
  form_uuid: FORM,
  consumer_school_id: '5',
  consumer_app_key: '100100',
  grant_version: '2',
  read_allowed: 1,
  subscribe_allowed: 1,
  push_allowed: 1,
  revoked: 0,
};
const ready = (g: Partial<FreshGrant> | null = {}): Authoritative => ({
  kind: 'ready',
  snapshot,
  consumerAppKey: '100100',
  grant: g === null ? null : { ...grant, ...g },
});
const local = (over: Partial<ObservedLocal> = {}): ObservedLocal => ({
  answerUuid: ANSWER,
  schId: '5',
  formUuid: FORM,
  formVersion: '4',
  revision: '3',
  hash: H('a'),
  isDeleted: false,
  linkState: 'LINKED',
  conflictFlag: false,
  projectionVersion: '7',
  retiredAt: null,
  retireProofId: null,
  ...over,
});
const triple = (l: ObservedLocal): Extract<Triple, { revision: string }> => ({
  revision: l.revision,
  hash: l.hash,
  isDeleted: l.isDeleted,
});

describe('decideRepair: every result from every local state', () => {
  const older = local({ revision: '2', hash: H('b') });
  const conflict = local({ hash: H('c'), conflictFlag: true });
  const deletedSameRev = local({ isDeleted: true });
  const newer = local({ revision: '4', hash: H('d') });
  const retired = local({ revision: '2', hash: H('b'), retiredAt: '2026-11-01 00:00:00', retireProofId: 'p-1' });
  const otherForm = local({ revision: '2', formUuid: 'f0000000-0000-4000-8000-00000000000f' });
  const cases: Array<
    [string, Authoritative, Triple, ObservedLocal | null, RepairResult, string, RepairDecision['write']]
  > = [
    ['missing, expected missing', ready(), MISSING, null, 'APPLIED', 'INSERTED', { kind: 'insert' }],
    ['equal', ready(), triple(local()), local(), 'APPLIED', 'ALREADY_CURRENT', undefined],
    ['older', ready(), triple(older), older, 'APPLIED', 'STALE_REPAIRED', { kind: 'update', expected: triple(older) }],
    [
      'same revision, other hash',
      ready(),
      triple(conflict),
      conflict,
      'APPLIED',
      'HASH_CONFLICT_REPAIRED',
      { kind: 'update', expected: triple(conflict) },
    ],
    [
      'same revision and hash, other isDeleted',
      ready(),
      triple(deletedSameRev),
      deletedSameRev,
      'APPLIED',
      'HASH_CONFLICT_REPAIRED',
      { kind: 'update', expected: triple(deletedSameRev) },
    ],
    ['newer', ready(), triple(newer), newer, 'LOCAL_AHEAD', 'LOCAL_REVISION_AHEAD', undefined],
    [
      'newer than expected and than FC (moved ahead)',
      ready(),
      triple(older),
      newer,
      'LOCAL_AHEAD',
      'LOCAL_REVISION_AHEAD',
      undefined,
    ],
    ['retired', ready(), triple(retired), retired, 'DEFERRED', 'LOCAL_RETIRED', undefined],
    [
      'changed (expected older, local now other)',
      ready(),
      { revision: '1', hash: H('e'), isDeleted: false },
      older,
      'LOCAL_CHANGED',
      'EXPECTED_MISMATCH',
      undefined,
    ],
    [
      'changed (expected missing, local now present)',
      ready(),
      MISSING,
      older,
      'LOCAL_CHANGED',
      'EXPECTED_MISMATCH',
      undefined,
    ],
    [
      'changed (expected present, local now missing)',
      ready(),
      triple(older),
      null,
      'LOCAL_CHANGED',
      'EXPECTED_MISMATCH',
      undefined,
    ],
    ['other form', ready(), triple(otherForm), otherForm, 'DEFERRED', 'FORM_MISMATCH', undefined],
    ['grant missing', ready(null), triple(older), older, 'DEFERRED', 'GRANT_MISSING', undefined],
    ['grant revoked', ready({ revoked: 1 }), triple(older), older, 'DEFERRED', 'GRANT_REVOKED', undefined],
    ['grant not readable', ready({ subscribe_allowed: 0 }), MISSING, null, 'DEFERRED', 'GRANT_NOT_READABLE', undefined],
    [
      'grant of another school',
      ready({ consumer_school_id: '6' }),
      MISSING,
      null,
      'DEFERRED',
      'GRANT_MISMATCH',
      undefined,
    ],
    [
      'grant of another consumer',
      ready({ consumer_app_key: '100101' }),
      MISSING,
      null,
      'DEFERRED',
      'GRANT_MISMATCH',
      undefined,
    ],
    [
      'grant of another form',
      ready({ form_uuid: 'f0000000-0000-4000-8000-00000000000f' }),
      MISSING,
      null,
      'DEFERRED',
      'GRANT_MISMATCH',
      undefined,
    ],
    ['grant advanced', ready({ grant_version: '3' }), MISSING, null, 'DEFERRED', 'GRANT_VERSION_CHANGED', undefined],
    [
      'grant of a future epoch is no pass either',
      ready({ grant_version: '1' }),
      MISSING,
      null,
      'DEFERRED',
      'GRANT_VERSION_CHANGED',
      undefined,
    ],
    [
      'grant revoked beats local ahead',
      ready({ revoked: 1 }),
      triple(newer),
      newer,
      'DEFERRED',
      'GRANT_REVOKED',
      undefined,
    ],
    [
      'answer absent at FC',
      { kind: 'unavailable', code: 'ANSWER_NOT_AT_FC', detail: 'x' },
      MISSING,
      null,
      'DEFERRED',
      'ANSWER_NOT_AT_FC',
      undefined,
    ],
  ];
  for (const [name, auth, expected, observed, result, code, write] of cases) {
    it(`${name} → ${result} (${code})`, () => {
      const d = decideRepair(auth, expected, observed);
      expect(d.result).toBe(result);
      expect(d.code).toBe(code);
      expect(d.reason.startsWith(`${code}: `)).toBe(true);
      expect(d.write).toEqual(write);
      expect(isRefused(d.result)).toBe(result !== 'APPLIED');
    });
  }

  /** What a dry run says instead: never a label that reads as done. */
  const DRY_CODE: Record<string, string> = {
    INSERTED: 'WOULD_INSERT',
    STALE_REPAIRED: 'WOULD_REPAIR_STALE',
    HASH_CONFLICT_REPAIRED: 'WOULD_REPAIR_HASH_CONFLICT',
  };
  for (const [name, auth, expected, observed, result, code, write] of cases) {
    it(`dry run: ${name} → ${result === 'APPLIED' ? 'WOULD_APPLY' : result} (${DRY_CODE[code] ?? code}), the same write planned`, () => {
      const d = decideRepair(auth, expected, observed, 'dry-run');
      const executed = decideRepair(auth, expected, observed, 'execute');
      expect(d.result).toBe(result === 'APPLIED' ? 'WOULD_APPLY' : result);
      expect(d.code).toBe(DRY_CODE[code] ?? code);
      expect(d.write).toEqual(write);
      expect(isRefused(d.result)).toBe(result !== 'APPLIED');
      // no reason of a dry run claims a write: "inserted", "repaired" or "nothing written" of a write are the executed run's words
      expect(d.reason).not.toMatch(/\binserted\b|REPAIRED|INSERTED/);
      if (write) expect(d.reason).toMatch(/: would (insert|update) /);
      if (result !== 'APPLIED') expect(d.reason).toBe(executed.reason);
    });
  }

  it('the results each mode reports, in order; the dry-run codes are in the closed set', () => {
    expect(resultsFor('execute')).toEqual(REPAIR_RESULTS);
    expect(resultsFor('dry-run')).toEqual(['WOULD_APPLY', 'LOCAL_CHANGED', 'LOCAL_AHEAD', 'DEFERRED']);
    expect(DRY_RUN_RESULTS).not.toContain('APPLIED');
    for (const c of Object.values(DRY_CODE)) expect(REASON_CODES).toContain(c);
  });

  it('push-disabled grants still authorize a repair (a repair is a read, not a push)', () => {
    expect(decideRepair(ready({ push_allowed: 0 }), MISSING, null).result).toBe('APPLIED');
  });

  it('never downgrades: for any local revision above FC, whatever was expected, no write', () => {
    for (const rev of ['4', '10', '9223372036854775807']) {
      for (const expected of [MISSING, triple(older), { revision: rev, hash: H('d'), isDeleted: true }] as Triple[]) {
        const d = decideRepair(ready(), expected, local({ revision: rev, hash: H('d'), isDeleted: true }));
        expect(d.result).toBe('LOCAL_AHEAD');
        expect(d.write).toBeUndefined();
      }
    }
  });

  it('revisions compare as numbers, not text ("10" > "9")', () => {
    const auth: Authoritative = { ...ready(), snapshot: { ...snapshot, revision: '10' } } as Authoritative;
    const l = local({ revision: '9', hash: H('b') });
    expect(decideRepair(auth, triple(l), l).code).toBe('STALE_REPAIRED');
  });

  it('types: results are a closed union', () => {
    expectTypeOf<RepairResult>().toEqualTypeOf<'APPLIED' | 'LOCAL_CHANGED' | 'LOCAL_AHEAD' | 'DEFERRED'>();
  });
});

describe("envelopeAgainstFc: an --envelope is written only while it is FC's current answer", () => {
  const envelope: AuthoritativeSnapshot = {
    ...snapshot,
    source: 'envelope',
    eventId: 'e-sent',
    grantVersion: '1',
    snapshotJson: '{"sent":1}',
  };
  it('the same form, revision, hash and isDeleted: the envelope, with the grant read now', () => {
    const r = envelopeAgainstFc(envelope, ready({ grant_version: '2' }));
    expect(r).toEqual({
      kind: 'ready',
      snapshot: envelope,
      consumerAppKey: '100100',
      grant: { ...grant, grant_version: '2' },
    });
    // and the grant check still decides on the envelope's own grant version
    expect(decideRepair(r, MISSING, null)).toMatchObject({ result: 'DEFERRED', code: 'GRANT_VERSION_CHANGED' });
  });
  it.each([
    ['form', { formUuid: 'f0000000-0000-4000-8000-000000000002' }, /form f0000000-0000-4000-8000-000000000002/],
    // the content hash does not cover formVersion: it must be compared on its own, or a wrong form_version is written
    ['form version', { formVersion: '5' }, /form version 5 \(the envelope 4\)/],
    ['form version, lower', { formVersion: '3' }, /form version 3 \(the envelope 4\)/],
    ['revision', { revision: '4' }, /revision 4/],
    ['hash', { contentHash: H('b') }, /hash bbbbbbbbbbbb…/],
    ['isDeleted', { isDeleted: true }, /isDeleted 1/],
  ] as const)('FC now has another %s → DEFERRED ENVELOPE_NOT_CURRENT, nothing written', (_what, fcNow, detail) => {
    const fc: Authoritative = { kind: 'ready', snapshot: { ...snapshot, ...fcNow }, consumerAppKey: '100100', grant };
    const r = envelopeAgainstFc(envelope, fc);
    expect(r).toMatchObject({ kind: 'unavailable', code: 'ENVELOPE_NOT_CURRENT' });
    expect(r.kind === 'unavailable' && r.detail).toMatch(detail);
    const d = decideRepair(r, MISSING, null);
    expect(d).toMatchObject({ result: 'DEFERRED', code: 'ENVELOPE_NOT_CURRENT' });
    expect(d.write).toBeUndefined();
  });
  it('FC has no such answer (or another school, no grant…): that refusal stands', () => {
    const gone: Authoritative = { kind: 'unavailable', code: 'ANSWER_NOT_AT_FC', detail: 'FC has no answer' };
    expect(envelopeAgainstFc(envelope, gone)).toBe(gone);
  });
});

describe('SQL builders', () => {
  it('the update writes only snapshot columns, repair evidence, conflict_flag and projection_version, guarded by the triple', () => {
    const s = projectionSql.update(snapshot, { revision: '2', hash: H('b'), isDeleted: false }, 'proof-1');
    const set = /SET (.*) WHERE/.exec(s.sql)![1]!;
    const columns = set.split(', ').map((p) => p.split(' = ')[0]);
    expect(columns).toEqual([
      'form_version',
      'answer_revision',
      'content_hash',
      'is_deleted',
      'snapshot_json',
      'update_time',
      'conflict_flag',
      'last_repair_proof_id',
      'last_repaired_at',
      'projection_version',
    ]);
    expect(s.sql).toContain('projection_version = projection_version + 1');
    expect(s.sql).toMatch(
      /WHERE answer_uuid = \? AND sch_id = \? AND form_uuid = \? AND answer_revision = \? AND content_hash = \? AND is_deleted = \? AND retired_at IS NULL AND answer_revision <= \?$/,
    );
    for (const never of [
      'biz_ext_json',
      'intent_id',
      'apply_id',
      'flow_guid',
      'link_state',
      'retired_at =',
      'retire_proof_id',
      'create_time',
    ])
      expect(set).not.toContain(never);
    expect(s.params.filter((p) => typeof p === 'bigint').map(String)).toEqual(['4', '3', '5', '2', '3']);
    expect(set).toContain('update_time = NOW()');
  });

  it('the insert is UNLINKED, projection_version 1, without intent, apply, flow or business columns', () => {
    const s = projectionSql.insert(snapshot, 'proof-1');
    expect(s.sql).toContain("'UNLINKED', 0, 1, NOW()");
    for (const never of ['biz_ext_json', 'intent_id', 'apply_id', 'flow_guid', 'retired_at'])
      expect(s.sql).not.toContain(never);
  });

  it('the audit row is REPAIR_AUTHORITATIVE with the reason cut to the column', () => {
    const s = auditSql.insert({
      outcome: 'APPLIED',
      reason: 'x'.repeat(300),
      proofId: 'p',
      runId: 'r',
      host: 'h',
      schId: '5',
      answerUuid: ANSWER,
      expectedJson: '{}',
      observedJson: '{}',
    });
    expect(s.params[0]).toBe('REPAIR_AUTHORITATIVE');
    expect((s.params[2] as string).length).toBe(255);
  });
});

describe('inputs', () => {
  it('repair event ids are 36-character name-based UUIDs, stable for the same repair', () => {
    const a = repairEventId('p', '100100', '5', ANSWER, '3', H('a'));
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(repairEventId('p', '100100', '5', ANSWER, '3', H('a'))).toBe(a);
    expect(repairEventId('q', '100100', '5', ANSWER, '3', H('a'))).not.toBe(a);
  });

  it('proof ids: 1–128 characters, no control characters or surrounding spaces', () => {
    expect(checkProofId('x'.repeat(128), 0)).toHaveLength(128);
    for (const bad of ['', 'x'.repeat(129), ' p', 'p\n', 'a\u0000b'])
      expect(() => checkProofId(bad, 0)).toThrow(LineError);
  });

  it('one answer from its flags, read by name: a misspelt flag is a compile error, not an undefined read', () => {
    expect(
      singleAnswerOf({ answer: ANSWER, expectedRevision: '2', expectedHash: H('b'), expectedIsDeleted: '0' }),
    ).toEqual({ answerUuid: ANSWER, expected: { revision: '2', hash: H('b'), isDeleted: false } });
    expect(singleAnswerOf({ answer: ANSWER, expectMissing: true, envelope: 'e.json' })).toEqual({
      answerUuid: ANSWER,
      expected: MISSING,
      envelope: 'e.json',
    });
    // @ts-expect-error expectedRevison is no flag of repair-authoritative
    expect(() => singleAnswerOf({ answer: ANSWER, expectedRevison: '2' })).toThrow(UsageError);
    // @ts-expect-error --envelope is a path (string)
    expect(() => singleAnswerOf({ answer: ANSWER, expectMissing: true, envelope: 1 })).not.toThrow();
  });

  const line = (o: Record<string, unknown> = {}) =>
    JSON.stringify({
      category: 'STALE_LOCAL',
      answerUuid: ANSWER,
      schId: '5',
      formUuid: FORM,
      expectedRevision: '2',
      expectedHash: H('b'),
      expectedIsDeleted: false,
      fcRevision: '3',
      fcContentHash: H('a'),
      fcIsDeleted: false,
      ...o,
    });

  it('a plan line becomes an item; an empty plan is valid', () => {
    expect(
      parsePlan(
        `${line()}\r\n\n${line({ category: 'MISSING_LOCAL', answerUuid: 'a0000000-0000-4000-8000-000000000002', expectedRevision: null, expectedHash: null, expectedIsDeleted: null })}\n`,
      ),
    ).toEqual([
      expect.objectContaining({
        line: 1,
        answerUuid: ANSWER,
        schId: '5',
        expected: { revision: '2', hash: H('b'), isDeleted: false },
      }),
      expect.objectContaining({ line: 3, expected: MISSING }),
    ]);
    expect(parsePlan('')).toEqual([]);
  });

  const bad: Array<[string, string, string | undefined, RegExp]> = [
    ['not JSON', '{"category":', undefined, /line 1: malformed JSON/],
    ['not an object', '[1]', undefined, /not a JSON object/],
    [
      'a local-ahead line',
      line({ category: 'LOCAL_AHEAD' }),
      undefined,
      /category "LOCAL_AHEAD" is not one a repair plan holds/,
    ],
    [
      'a retire candidate',
      JSON.stringify({ category: 'ABSENT_AT_FC', answerUuid: ANSWER }),
      undefined,
      /member schId is missing/,
    ],
    ['non-UUID answer', line({ answerUuid: 'a1' }), undefined, /answerUuid "a1" is not a UUID/],
    ['school 0', line({ schId: '0' }), undefined, /schId "0" is not a positive whole number/],
    ['half-null triple', line({ expectedHash: null }), undefined, /all null/],
    ['MISSING_LOCAL with a triple', line({ category: 'MISSING_LOCAL' }), undefined, /must have a null expected triple/],
    [
      'STALE_LOCAL without a triple',
      line({ expectedRevision: null, expectedHash: null, expectedIsDeleted: null }),
      undefined,
      /must have an expected triple/,
    ],
    ['bad hash', line({ expectedHash: H('A') }), undefined, /64 lowercase hex/],
    ['bad revision', line({ expectedRevision: '-1' }), undefined, /not a whole number/],
    ['the same answer twice', `${line()}\n${line()}`, undefined, /line 2: answer .* is already on line 1/],
    ['another school than --school', line(), '6', /school 5 is not --school 6/],
  ];
  for (const [name, text, school, message] of bad) {
    it(`refuses a plan with ${name}`, () => {
      expect(() => parsePlan(text, school)).toThrow(message);
    });
  }
});
