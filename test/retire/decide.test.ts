import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  decideProof,
  decideRetire,
  type ExecutedRetireDecision,
  type FcNow,
  isRefused,
  type LocalNow,
  PROOF_REFUSAL_REASONS,
  type ProofFacts,
  proofAgeRefusal,
  proofIdRefusal,
  REFUSAL_REASONS,
  type RefusalReason,
  refusedWithProof,
  RETIRE_RESULTS,
  type RetireDecision,
  type RetireEntry,
  type RunMode,
} from '../../src/lib/retire-absent/decide.js';

const TASK_START = '2026-11-30 01:00:00';
const FORM = 'f0000000-0000-4000-8000-000000000000';
const OTHER_FORM = 'f0000000-0000-4000-8000-000000000001';
const H1 = 'a'.repeat(64);
const H2 = 'b'.repeat(64);
const CHECKED = '2026-11-30T02:00:00.000Z';
/** this proof's digest, and another proof's (a proof is its id AND its digest) */
const D1 = 'c'.repeat(64);
const D2 = 'd'.repeat(64);

const entry: RetireEntry = {
  proofId: 'rp-1',
  proofDigest: D1,
  answerUuid: '00000000-0000-4000-8000-000000000001',
  schId: '5',
  formUuid: FORM,
  expectedRevision: '3',
  expectedHash: H1,
  expectedIsDeleted: false,
  localCreateTime: '2026-10-01 08:00:00',
};
const local = (o: Partial<LocalNow> = {}): LocalNow => ({
  schId: '5',
  formUuid: FORM,
  revision: '3',
  contentHash: H1,
  isDeleted: false,
  createTime: '2026-10-01 08:00:00',
  retiredAt: null,
  retireProofId: null,
  retireProofDigest: null,
  ...o,
});
const absent: FcNow = { present: false, checkedAt: CHECKED };
const present = (o: Partial<Extract<FcNow, { present: true }>['row']> = {}): FcNow => ({
  present: true,
  checkedAt: CHECKED,
  row: { answerUuid: entry.answerUuid, schId: '5', formUuid: FORM, revision: '4', isDeleted: false, ...o },
});

describe('decideRetire: one row per situation', () => {
  const cases: Array<[string, RetireEntry, FcNow, LocalNow | null, RetireDecision['result'], string | null, RegExp]> = [
    [
      'absent at FC, local as expected',
      entry,
      absent,
      local(),
      'RETIRED',
      null,
      /absent at FC \(checked 2026-11-30T02:00:00.000Z\), local row as expected/,
    ],
    [
      'created exactly at the task start',
      { ...entry, localCreateTime: TASK_START },
      absent,
      local({ createTime: TASK_START }),
      'RETIRED',
      null,
      /as expected/,
    ],
    [
      'a tombstone, revision beyond 2^53',
      { ...entry, expectedRevision: '9007199254740993', expectedIsDeleted: true },
      absent,
      local({ revision: '9007199254740993', isDeleted: true }),
      'RETIRED',
      null,
      /as expected/,
    ],
    [
      'retired by this proof already (its id, its digest recorded)',
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-1', retireProofDigest: D1 }),
      'ALREADY_RETIRED',
      null,
      /retired at 2026-11-30 02:00:00 by this proof \(rp-1\); nothing written/,
    ],
    [
      "retired by this proof, values since changed: still this proof's retirement",
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-1', retireProofDigest: D1, revision: '9' }),
      'ALREADY_RETIRED',
      null,
      /by this proof/,
    ],
    [
      'retired by another proof with the same id (another digest recorded)',
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-1', retireProofDigest: D2 }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /^retired at 2026-11-30 02:00:00 by another proof with the same id rp-1 \(digest d{12}…, this proof's c{12}…\): a person decides; nothing written$/,
    ],
    [
      'retired by another proof with the same id, values since changed',
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-1', retireProofDigest: D2, revision: '9' }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /same id rp-1/,
    ],
    [
      "retired under this proof's id, no digest recorded (no RETIRED audit row of it)",
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-1' }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /^retired at 2026-11-30 02:00:00 under this proof's id rp-1, but no RETIRED audit row of this retirement records this proof's digest \(c{12}…\): a person decides; nothing written$/,
    ],
    [
      'retired by another id that recorded this digest: the id decides too',
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-0', retireProofDigest: D1 }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /by proof rp-0, not by this proof \(rp-1\)/,
    ],
    [
      "retired under this proof's id, the digest recorded in other case: not this digest",
      entry,
      absent,
      local({ retiredAt: '2026-11-30 02:00:00', retireProofId: 'rp-1', retireProofDigest: D1.toUpperCase() }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /same id rp-1/,
    ],
    [
      'retired by another proof',
      entry,
      absent,
      local({ retiredAt: '2026-11-01 00:00:00', retireProofId: 'rp-0' }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /retired at 2026-11-01 00:00:00 by proof rp-0, not by this proof \(rp-1\): a person decides; nothing written/,
    ],
    [
      'retired by another proof, values since changed',
      entry,
      absent,
      local({ retiredAt: '2026-11-01 00:00:00', retireProofId: 'rp-0', revision: '9' }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /by proof rp-0/,
    ],
    [
      'retired by a proof whose id only differs in case',
      entry,
      absent,
      local({ retiredAt: '2026-11-01 00:00:00', retireProofId: 'RP-1' }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /by proof RP-1/,
    ],
    [
      'retired without a proof id',
      entry,
      absent,
      local({ retiredAt: '2026-11-01 00:00:00' }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /with no proof id recorded, not by this proof/,
    ],
    [
      'retired by another proof and missing its createTime: the retirement is named first',
      entry,
      absent,
      local({ retiredAt: '2026-11-01 00:00:00', retireProofId: 'rp-0', createTime: null }),
      'REFUSED',
      'RETIRED_BY_OTHER_PROOF',
      /rp-0/,
    ],
    [
      'present at FC again',
      entry,
      present(),
      local(),
      'REFUSED',
      'PRESENT_AT_FC',
      /FC has answer .* again \(revision 4, checked/,
    ],
    [
      'present at FC as a tombstone',
      entry,
      present({ isDeleted: true }),
      local(),
      'REFUSED',
      'PRESENT_AT_FC',
      /revision 4, tombstone/,
    ],
    [
      'present at FC under another school',
      entry,
      present({ schId: '6' }),
      local(),
      'REFUSED',
      'PRESENT_AT_FC',
      /under school 6 form/,
    ],
    [
      'present at FC while retired locally: flagged, not hidden',
      entry,
      present(),
      local({ retiredAt: '2026-11-30 02:00:00' }),
      'REFUSED',
      'PRESENT_AT_FC',
      /again/,
    ],
    ['present at FC and missing locally', entry, present(), null, 'REFUSED', 'PRESENT_AT_FC', /again/],
    ['no local row', entry, absent, null, 'REFUSED', 'LOCAL_MISSING', /no projection row for answer .* in school 5/],
    [
      'local createTime null',
      entry,
      absent,
      local({ createTime: null }),
      'REFUSED',
      'CREATE_TIME_NULL',
      /createTime is null/,
    ],
    [
      'local createTime null and revision changed',
      entry,
      absent,
      local({ createTime: null, revision: '4' }),
      'REFUSED',
      'CREATE_TIME_NULL',
      /null/,
    ],
    [
      'created one second after the task start',
      entry,
      absent,
      local({ createTime: '2026-11-30 01:00:01' }),
      'REFUSED',
      'CREATED_AFTER_TASK_START',
      /created 2026-11-30 01:00:01, after the task start 2026-11-30 01:00:00/,
    ],
    [
      'revision changed',
      entry,
      absent,
      local({ revision: '4' }),
      'REFUSED',
      'LOCAL_CHANGED',
      /revision 4 \(expected 3\)/,
    ],
    [
      'revision changed, same digits count lower',
      entry,
      absent,
      local({ revision: '2' }),
      'REFUSED',
      'LOCAL_CHANGED',
      /revision 2 \(expected 3\)/,
    ],
    [
      'hash changed',
      entry,
      absent,
      local({ contentHash: H2 }),
      'REFUSED',
      'LOCAL_CHANGED',
      /contentHash b{64} \(expected a{64}\)/,
    ],
    [
      'isDeleted changed',
      entry,
      absent,
      local({ isDeleted: true }),
      'REFUSED',
      'LOCAL_CHANGED',
      /isDeleted true \(expected false\)/,
    ],
    [
      'form changed',
      entry,
      absent,
      local({ formUuid: OTHER_FORM }),
      'REFUSED',
      'LOCAL_CHANGED',
      /form f0000000-0000-4000-8000-000000000001/,
    ],
    [
      'createTime changed (row re-created)',
      entry,
      absent,
      local({ createTime: '2026-10-02 08:00:00' }),
      'REFUSED',
      'LOCAL_CHANGED',
      /createTime 2026-10-02 08:00:00 \(expected 2026-10-01 08:00:00\)/,
    ],
    [
      'several values changed: all named',
      entry,
      absent,
      local({ revision: '4', contentHash: H2 }),
      'REFUSED',
      'LOCAL_CHANGED',
      /revision 4 .*, contentHash/,
    ],
  ];
  it.each(cases)('%s → %s %s', (_name, e, fc, l, result, reason, detail) => {
    const d = decideRetire(e, fc, l, TASK_START);
    expect(d.result).toBe(result);
    expect(d.reason).toBe(reason);
    expect(d.detail).toMatch(detail);
    expect(isRefused(d)).toBe(result === 'REFUSED');
  });

  it.each(cases)(
    'dry run: %s → the same, except that RETIRED reads WOULD_RETIRE',
    (_name, e, fc, l, result, reason) => {
      const d = decideRetire(e, fc, l, TASK_START, 'dry-run');
      expect(d.result).toBe(result === 'RETIRED' ? 'WOULD_RETIRE' : result);
      expect(d.reason).toBe(reason);
      if (result === 'RETIRED') expect(d.detail).toMatch(/^would retire: absent at FC/);
      else expect(d.detail).toBe(decideRetire(e, fc, l, TASK_START).detail);
      expect(isRefused(d)).toBe(result === 'REFUSED');
    },
  );
});

describe('decideRetire: exhaustive over every combination of the facts', () => {
  // Each fact either as the proof expects or not; createTime over its four classes.
  const times = {
    null: null,
    before: '2026-10-01 08:00:00',
    equalStart: TASK_START,
    after: '2026-11-30 01:00:01',
  } as const;
  // retired: not, by this proof (id and digest), by another proof, with no proof id recorded, by
  // another proof with this proof's id (another digest recorded), under this id with no digest recorded
  const retirements = {
    no: [null, null],
    thisProof: ['rp-1', D1],
    otherProof: ['rp-0', D2],
    otherProofThisDigest: ['rp-0', D1],
    noProofId: [null, null],
    sameIdOtherDigest: ['rp-1', D2],
    sameIdNoDigest: ['rp-1', null],
  } as const;
  const combos: Array<{
    fcPresent: boolean;
    localExists: boolean;
    retired: keyof typeof retirements;
    time: keyof typeof times;
    revision: boolean;
    hash: boolean;
    deleted: boolean;
    form: boolean;
  }> = [];
  for (const fcPresent of [false, true])
    for (const localExists of [false, true])
      for (const retired of Object.keys(retirements) as Array<keyof typeof retirements>)
        for (const time of Object.keys(times) as Array<keyof typeof times>)
          for (const revision of [true, false])
            for (const hash of [true, false])
              for (const deleted of [true, false])
                for (const form of [true, false])
                  combos.push({ fcPresent, localExists, retired, time, revision, hash, deleted, form });

  /** The rules of SPEC §8 in priority order, written independently of the implementation. */
  function oracle(c: (typeof combos)[number], mode: RunMode): [RetireDecision['result'], string | null] {
    if (c.fcPresent) return ['REFUSED', 'PRESENT_AT_FC'];
    if (!c.localExists) return ['REFUSED', 'LOCAL_MISSING'];
    if (c.retired === 'thisProof') return ['ALREADY_RETIRED', null];
    if (c.retired !== 'no') return ['REFUSED', 'RETIRED_BY_OTHER_PROOF'];
    if (c.time === 'null') return ['REFUSED', 'CREATE_TIME_NULL'];
    if (c.time === 'after') return ['REFUSED', 'CREATED_AFTER_TASK_START'];
    // the entry expects createTime 'before'; 'equalStart' is allowed by the rule but differs from the proof
    if (!c.revision || !c.hash || !c.deleted || !c.form || c.time !== 'before') return ['REFUSED', 'LOCAL_CHANGED'];
    return [mode === 'execute' ? 'RETIRED' : 'WOULD_RETIRE', null];
  }

  it.each(['execute', 'dry-run'] as const)(
    `%s: all ${2 * 2 * 7 * 4 * 16} combinations decide as the rules say; RETIRED (WOULD_RETIRE in a dry run) only when every rule holds`,
    (mode) => {
      const seen = new Set<string>();
      let retired = 0;
      for (const c of combos) {
        const l = c.localExists
          ? local({
              createTime: times[c.time],
              retiredAt: c.retired === 'no' ? null : '2026-11-30 02:00:00',
              retireProofId: retirements[c.retired][0],
              retireProofDigest: c.retired === 'no' ? null : retirements[c.retired][1],
              revision: c.revision ? '3' : '30',
              contentHash: c.hash ? H1 : H2,
              isDeleted: !c.deleted,
              formUuid: c.form ? FORM : OTHER_FORM,
            })
          : null;
        const d = decideRetire(entry, c.fcPresent ? present() : absent, l, TASK_START, mode);
        expect([d.result, d.reason], JSON.stringify(c)).toEqual(oracle(c, mode));
        seen.add(`${d.result}/${d.reason}`);
        if (d.result === 'RETIRED' || d.result === 'WOULD_RETIRE') retired++;
      }
      expect(retired).toBe(1);
      const done = mode === 'execute' ? 'RETIRED/null' : 'WOULD_RETIRE/null';
      expect([...seen].sort()).toEqual(
        [
          'ALREADY_RETIRED/null',
          'REFUSED/CREATED_AFTER_TASK_START',
          'REFUSED/CREATE_TIME_NULL',
          'REFUSED/LOCAL_CHANGED',
          'REFUSED/LOCAL_MISSING',
          'REFUSED/PRESENT_AT_FC',
          'REFUSED/RETIRED_BY_OTHER_PROOF',
          done,
        ].sort(),
      );
    },
  );

  it('the closed sets of results and refusal reasons', () => {
    expect(RETIRE_RESULTS).toEqual(['RETIRED', 'WOULD_RETIRE', 'ALREADY_RETIRED', 'REFUSED']);
    expect(PROOF_REFUSAL_REASONS).toEqual([
      'PROOF_DIGEST',
      'PROOF_INVALID',
      'PROOF_EXPIRED',
      'FC_DATABASE',
      'PROOF_ID_REUSED',
    ]);
    expect(REFUSAL_REASONS).toEqual([
      'PROOF_DIGEST',
      'PROOF_INVALID',
      'PROOF_EXPIRED',
      'FC_DATABASE',
      'PROOF_ID_REUSED',
      'PRESENT_AT_FC',
      'LOCAL_MISSING',
      'RETIRED_BY_OTHER_PROOF',
      'CREATE_TIME_NULL',
      'CREATED_AFTER_TASK_START',
      'LOCAL_CHANGED',
    ]);
  });
});

describe('decideProof: the proof as a whole, exhaustively', () => {
  const now = new Date('2026-11-30T12:00:00.000Z');
  const DB = '127.0.0.1:3306/fc';
  const ages = {
    fresh: '2026-11-30T11:00:00.000Z',
    old: '2026-11-28T12:00:00.000Z',
    future: '2026-11-30T13:00:00.000Z',
  } as const;
  const readings = ['digest', 'invalid', 'valid'] as const;

  /** The order of SPEC §8 / README, written independently: what reading found, then age, then the FC database. */
  function oracle(reading: (typeof readings)[number], age: keyof typeof ages, sameDb: boolean): string | null {
    if (reading === 'digest') return 'PROOF_DIGEST';
    if (reading === 'invalid') return 'PROOF_INVALID';
    if (age !== 'fresh') return 'PROOF_EXPIRED';
    return sameDb ? null : 'FC_DATABASE';
  }

  const combos = readings.flatMap((reading) =>
    (Object.keys(ages) as Array<keyof typeof ages>).flatMap((age) =>
      [true, false].map((sameDb) => [reading, age, sameDb] as const),
    ),
  );
  it.each(combos)('read %s, age %s, same FC database %s', (reading, age, sameDb) => {
    const facts: ProofFacts =
      reading === 'valid'
        ? {
            kind: 'valid',
            createdAt: ages[age],
            manifestCompletedAt: ages[age],
            fcDatabase: sameDb ? DB : 'elsewhere:3306/fc',
          }
        : {
            kind: 'refused',
            reason: reading === 'digest' ? 'PROOF_DIGEST' : 'PROOF_INVALID',
            detail: `the ${reading} detail`,
          };
    const r = decideProof(facts, now, 86400, DB);
    expect(r?.reason ?? null).toBe(oracle(reading, age, sameDb));
    if (r?.reason === 'FC_DATABASE')
      expect(r.detail).toBe(
        `the proof was made against the FC database elsewhere:3306/fc, the configured one is ${DB}`,
      );
    if (r?.reason === 'PROOF_DIGEST' || r?.reason === 'PROOF_INVALID') expect(r.detail).toBe(`the ${reading} detail`);
  });

  it.each(PROOF_REFUSAL_REASONS)(
    'each entry of a proof refused %s is refused with that reason, saying the entry was not checked',
    (reason) => {
      const d = refusedWithProof({ reason, detail: 'why' });
      expect(d).toEqual({
        result: 'REFUSED',
        reason,
        detail: `the proof is refused (${reason}): why; this entry was not checked`,
      });
      expect(isRefused(d)).toBe(true);
    },
  );
});

describe('proofIdRefusal (PROOF_ID_REUSED): a proof is its id AND its digest', () => {
  const cases: Array<[string, Array<string | null>, RegExp | null]> = [
    ['the id never used', [], null],
    ['the id used by this proof only (a re-run)', [D1], null],
    [
      'the id used by another proof',
      [D2],
      /^proof id rp-1 was already used by another proof \(with digest d{12}…; this proof's c{12}…\): a proof is its id and its digest — make a new proof with another --proof-id$/,
    ],
    ['the id used by this proof and another one', [D1, D2], /with digest d{12}…/],
    ['the id used by another proof first, this one after', [D2, D1], /with digest d{12}…/],
    ['the id recorded with no digest', [null], /\(with no digest recorded; this proof's c{12}…\)/],
    ['the id recorded with this digest in other case', [D1.toUpperCase()], /with digest C{12}…/],
  ];
  it.each(cases)('%s', (_name, recorded, detail) => {
    const r = proofIdRefusal('rp-1', D1, recorded);
    if (detail === null) expect(r).toBeNull();
    else {
      expect(r?.reason).toBe('PROOF_ID_REUSED');
      expect(r?.detail).toMatch(detail);
    }
  });
});

describe('proofAgeRefusal (PROOF_EXPIRED)', () => {
  const now = new Date('2026-11-30T12:00:00.000Z');
  const DAY = 86400;
  const cases: Array<[string, string, string, number, RegExp | null]> = [
    ['fresh', '2026-11-30T11:00:00.000Z', '2026-11-30T10:59:00.000Z', DAY, null],
    ['exactly the maximum age', '2026-11-29T12:00:00.000Z', '2026-11-30T11:00:00.000Z', DAY, null],
    [
      'one second over',
      '2026-11-29T11:59:59.000Z',
      '2026-11-30T11:00:00.000Z',
      DAY,
      /is 1d1s old \(made 2026-11-29T11:59:59.000Z\), over --max-proof-age 1d/,
    ],
    [
      'a fresh proof of an old manifest: as old as its manifest',
      '2026-11-30T11:00:00.000Z',
      '2026-11-28T12:00:00.000Z',
      DAY,
      /is 2d old \(its FC manifest completed 2026-11-28T12:00:00.000Z\)/,
    ],
    [
      'made in the future beyond the skew',
      '2026-11-30T12:05:01.000Z',
      '2026-11-30T11:00:00.000Z',
      DAY,
      /in the future of this clock/,
    ],
    ['made in the future within the skew', '2026-11-30T12:04:59.000Z', '2026-11-30T11:00:00.000Z', DAY, null],
    ['unreadable time', 'yesterday', '2026-11-30T11:00:00.000Z', DAY, /cannot be read/],
    [
      'a short maximum',
      '2026-11-30T11:59:00.000Z',
      '2026-11-30T11:59:00.000Z',
      30,
      /is 1m old .* over --max-proof-age 30s/,
    ],
  ];
  it.each(cases)('%s', (_name, createdAt, completedAt, max, detail) => {
    const r = proofAgeRefusal(createdAt, completedAt, now, max);
    if (detail === null) expect(r).toBeNull();
    else {
      expect(r?.reason).toBe('PROOF_EXPIRED');
      expect(r?.detail).toMatch(detail);
    }
  });
});

describe('types of the decision', () => {
  it('a refusal always carries a reason from the closed set; the other results never do', () => {
    const mode: RunMode = 'dry-run';
    expectTypeOf(decideRetire(entry, absent, null, TASK_START, mode)).toEqualTypeOf<RetireDecision>();
    // an executed run's decision can never be a dry run's WOULD_RETIRE
    expectTypeOf(decideRetire(entry, absent, null, TASK_START, 'execute')).toEqualTypeOf<ExecutedRetireDecision>();
    expectTypeOf<Extract<ExecutedRetireDecision, { result: 'WOULD_RETIRE' }>>().toBeNever();
    expectTypeOf<Extract<RetireDecision, { result: 'REFUSED' }>['reason']>().toEqualTypeOf<RefusalReason>();
    expectTypeOf<Extract<RetireDecision, { result: 'RETIRED' | 'ALREADY_RETIRED' }>['reason']>().toEqualTypeOf<null>();
    // @ts-expect-error a local row needs its createTime member (null when unknown), it cannot be left out
    const missing: LocalNow = {
      schId: '5',
      formUuid: FORM,
      revision: '1',
      contentHash: H1,
      isDeleted: false,
      retiredAt: null,
      retireProofId: null,
      retireProofDigest: null,
    };
    void missing;
  });
});
