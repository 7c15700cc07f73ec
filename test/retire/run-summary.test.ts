import { describe, expect, it } from 'vitest';
import {
  candidateExclusion,
  type CandidateFacts,
  createTimeRefusal,
  type FcAnswerSeen,
} from '../../src/lib/retire-absent/decide.js';
import type { RetireProof } from '../../src/lib/retire-absent/decide.js';
import { type ProveEnd, proveExitCode, summarizeProve } from '../../src/lib/retire-absent/prove/decide.js';
import {
  type EntryOutcome,
  retireEndCounts,
  retireExitCode,
  type RetireRunFacts,
  summarizeRetire,
} from '../../src/lib/retire-absent/retire/decide.js';

const TASK_START = '2026-11-30 01:00:00';
const FORM = 'f0000000-0000-4000-8000-000000000000';
const OTHER_FORM = 'f0000000-0000-4000-8000-000000000001';
const candidate: CandidateFacts = { schId: '5', formUuid: FORM, localCreateTime: '2026-10-01 08:00:00' };
const atFc = (o: Partial<FcAnswerSeen> = {}): FcAnswerSeen => ({
  answerUuid: 'a',
  schId: '5',
  formUuid: FORM,
  revision: '4',
  isDeleted: false,
  ...o,
});

describe('createTimeRefusal: the createTime rule of seed 000 §8.1, every branch', () => {
  const cases: Array<[string, string | null, ReturnType<typeof createTimeRefusal>]> = [
    ['null', null, { reason: 'CREATE_TIME_NULL', detail: 'the local createTime is null' }],
    [
      'after the task start',
      '2026-11-30 02:00:00',
      { reason: 'CREATED_AFTER_TASK_START', detail: `created 2026-11-30 02:00:00, after the task start ${TASK_START}` },
    ],
    [
      'one second after',
      '2026-11-30 01:00:01',
      { reason: 'CREATED_AFTER_TASK_START', detail: `created 2026-11-30 01:00:01, after the task start ${TASK_START}` },
    ],
    ['exactly at the task start', TASK_START, null],
    ['before the task start', '2026-10-01 08:00:00', null],
  ];
  it.each(cases)('%s', (_name, createTime, want) => {
    expect(createTimeRefusal(createTime, TASK_START)).toEqual(want);
  });
});

describe('candidateExclusion: in the order checked, every branch', () => {
  const cases: Array<[string, CandidateFacts, FcAnswerSeen | null, ReturnType<typeof candidateExclusion>]> = [
    ['absent at FC, created before the task start: in the proof', candidate, null, null],
    [
      'absent at FC, created at the task start: in the proof',
      { ...candidate, localCreateTime: TASK_START },
      null,
      null,
    ],
    [
      'at FC under its school and form',
      candidate,
      atFc(),
      { reason: 'PRESENT_AT_FC', detail: 'FC has it now (revision 4)' },
    ],
    [
      'at FC as a tombstone',
      candidate,
      atFc({ isDeleted: true }),
      { reason: 'PRESENT_AT_FC', detail: 'FC has it now (revision 4, tombstone)' },
    ],
    [
      'at FC under another school',
      candidate,
      atFc({ schId: '6' }),
      { reason: 'PRESENT_AT_FC', detail: `FC has it now under school 6 form ${FORM} (revision 4)` },
    ],
    [
      'at FC under another form',
      candidate,
      atFc({ formUuid: OTHER_FORM }),
      { reason: 'PRESENT_AT_FC', detail: `FC has it now under school 5 form ${OTHER_FORM} (revision 4)` },
    ],
    [
      'at FC and createTime null: FC is named first',
      { ...candidate, localCreateTime: null },
      atFc(),
      { reason: 'PRESENT_AT_FC', detail: 'FC has it now (revision 4)' },
    ],
    [
      'absent, createTime null',
      { ...candidate, localCreateTime: null },
      null,
      { reason: 'CREATE_TIME_NULL', detail: 'the local createTime is null' },
    ],
    [
      'absent, created after the task start',
      { ...candidate, localCreateTime: '2026-11-30 01:30:00' },
      null,
      { reason: 'CREATED_AFTER_TASK_START', detail: `created 2026-11-30 01:30:00, after the task start ${TASK_START}` },
    ],
  ];
  it.each(cases)('%s', (_name, c, fc, want) => {
    expect(candidateExclusion(c, fc, TASK_START)).toEqual(want);
  });
});

const outcome = (result: EntryOutcome['result'], reason: EntryOutcome['reason'] = null): EntryOutcome => ({
  answerUuid: 'a',
  result,
  reason,
  detail: '',
  retiredAt: null,
});

describe('retireExitCode', () => {
  const cases: Array<[string, Parameters<typeof retireExitCode>[0], number]> = [
    ['every entry retired', { kind: 'done', outcomes: [outcome('RETIRED'), outcome('ALREADY_RETIRED')], notRun: 0 }, 0],
    ['a dry run that would retire all', { kind: 'done', outcomes: [outcome('WOULD_RETIRE')], notRun: 0 }, 0],
    ['no entries', { kind: 'done', outcomes: [], notRun: 0 }, 0],
    [
      'one refused',
      { kind: 'done', outcomes: [outcome('RETIRED'), outcome('REFUSED', 'LOCAL_CHANGED')], notRun: 0 },
      1,
    ],
    ['entries not run (stop signal)', { kind: 'done', outcomes: [outcome('RETIRED')], notRun: 2 }, 1],
    ['the proof refused as a whole', { kind: 'refused', outcomes: [outcome('REFUSED', 'PROOF_DIGEST')] }, 4],
    ['the proof refused, no readable entry', { kind: 'refused', outcomes: [] }, 4],
  ];
  it.each(cases)('%s → %i', (_name, end, code) => {
    expect(retireExitCode(end)).toBe(code);
  });
});

describe('retireEndCounts: a dry run never counts RETIRED', () => {
  const outcomes = [
    outcome('RETIRED'),
    outcome('WOULD_RETIRE'),
    outcome('ALREADY_RETIRED'),
    outcome('REFUSED', 'LOCAL_MISSING'),
    outcome('REFUSED', 'PRESENT_AT_FC'),
  ];
  it.each([
    [true, { WOULD_RETIRE: 1, ALREADY_RETIRED: 1, REFUSED: 2 }],
    [false, { RETIRED: 1, ALREADY_RETIRED: 1, REFUSED: 2 }],
  ])('dryRun %s', (dryRun, want) => {
    expect(retireEndCounts(outcomes, dryRun)).toEqual(want);
  });
});

describe('summarizeRetire', () => {
  const facts = (o: Partial<RetireRunFacts> = {}): RetireRunFacts => ({
    result: {
      kind: 'done',
      outcomes: [outcome('RETIRED'), outcome('REFUSED', 'LOCAL_CHANGED'), outcome('REFUSED', 'LOCAL_CHANGED')],
      notRun: 1,
      stoppedBy: 'signal',
    },
    exitCode: 1,
    dryRun: false,
    runId: 'r1',
    proofId: 'rp-1',
    proofDigest: 'c'.repeat(64),
    entries: 4,
    evidence: '/x/proof.evidence.jsonl',
    ...o,
  });
  it('an executed run, JSON: every field in order, byReason with every reason', () => {
    const { summary, counts } = summarizeRetire(facts(), 1.5, true);
    expect(counts).toBeUndefined();
    expect(Object.keys(summary)).toEqual([
      'command',
      'exitCode',
      'dryRun',
      'runId',
      'proofId',
      'proofDigest',
      'entries',
      'retired',
      'alreadyRetired',
      'refused',
      'notRun',
      'byReason',
      'stoppedBy',
      'evidence',
      'seconds',
    ]);
    expect(summary).toMatchObject({
      command: 'retire-absent',
      exitCode: 1,
      entries: 4,
      retired: 1,
      alreadyRetired: 0,
      refused: 2,
      notRun: 1,
      stoppedBy: 'signal',
      seconds: 1.5,
    });
    expect(summary['byReason']).toMatchObject({ LOCAL_CHANGED: 2, PRESENT_AT_FC: 0, PROOF_DIGEST: 0 });
  });
  it('a dry run on a terminal: wouldRetire, the non-zero reasons as counts', () => {
    const { summary, counts } = summarizeRetire(
      facts({
        dryRun: true,
        result: {
          kind: 'done',
          outcomes: [outcome('WOULD_RETIRE'), outcome('REFUSED', 'LOCAL_MISSING')],
          notRun: 0,
          stoppedBy: 'done',
        },
      }),
      0,
      false,
    );
    expect(summary).toMatchObject({ dryRun: true, wouldRetire: 1, refused: 1 });
    expect(summary).not.toHaveProperty('retired');
    expect(summary).not.toHaveProperty('byReason');
    expect(counts).toEqual({ LOCAL_MISSING: 1 });
  });
  it('a proof refused as a whole: proofRefused, stoppedBy refused, entries from the outcomes when it could not be read', () => {
    const { summary } = summarizeRetire(
      facts({
        exitCode: 4,
        entries: null,
        result: {
          kind: 'refused',
          reason: 'PROOF_DIGEST',
          outcomes: [outcome('REFUSED', 'PROOF_DIGEST'), outcome('REFUSED', 'PROOF_DIGEST')],
        },
      }),
      0,
      true,
    );
    expect(summary).toMatchObject({
      proofRefused: 'PROOF_DIGEST',
      entries: 2,
      refused: 2,
      notRun: 0,
      stoppedBy: 'refused',
    });
  });
});

const proof = (excluded: RetireProof['excluded']): RetireProof =>
  ({
    proofId: 'rp-1',
    taskId: 't1',
    taskStart: TASK_START,
    schId: '5',
    formUuid: FORM,
    digest: 'c'.repeat(64),
    entries: [{}, {}],
    excluded,
    fcManifest: { rows: 9, sha256: 'e'.repeat(64) },
  }) as unknown as RetireProof;
const exclusion = (reason: RetireProof['excluded'][number]['reason']) => ({
  answerUuid: 'a',
  reason,
  detail: '',
  fcCheckedAt: '',
});

describe('proveExitCode', () => {
  const cases: Array<[string, ProveEnd, number]> = [
    ['no candidates: no proof, nothing wrong', { kind: 'no-candidates' }, 0],
    ['every candidate in the proof', { kind: 'written', proof: proof([]), out: '/p.json', candidates: 2 }, 0],
    [
      'some left out',
      { kind: 'written', proof: proof([exclusion('PRESENT_AT_FC')]), out: '/p.json', candidates: 3 },
      1,
    ],
    ['stopped by a signal', { kind: 'stopped', checked: 500, candidates: 900 }, 1],
  ];
  it.each(cases)('%s → %i', (_name, end, code) => {
    expect(proveExitCode(end)).toBe(code);
  });
});

describe('summarizeProve', () => {
  it('no candidates', () => {
    expect(summarizeProve({ kind: 'no-candidates' }, 0.2, false)).toEqual({
      summary: {
        command: 'retire-absent prove',
        exitCode: 0,
        written: false,
        candidates: 0,
        note: 'no retire candidates: no proof written',
        seconds: 0.2,
      },
      counts: undefined,
    });
  });
  it('stopped', () => {
    expect(summarizeProve({ kind: 'stopped', checked: 500, candidates: 900 }, 1, true)).toEqual({
      summary: {
        command: 'retire-absent prove',
        exitCode: 1,
        written: false,
        stoppedBy: 'signal',
        candidates: 900,
        checked: 500,
        seconds: 1,
      },
      counts: undefined,
    });
  });
  it('written, JSON: byReason with every exclusion reason, fields in order', () => {
    const { summary, counts } = summarizeProve(
      {
        kind: 'written',
        proof: proof([exclusion('CREATE_TIME_NULL'), exclusion('CREATE_TIME_NULL')]),
        out: '/p.json',
        candidates: 4,
      },
      3,
      true,
    );
    expect(counts).toBeUndefined();
    expect(Object.keys(summary)).toEqual([
      'command',
      'exitCode',
      'written',
      'out',
      'proofId',
      'taskId',
      'taskStart',
      'schId',
      'formUuid',
      'digest',
      'candidates',
      'entries',
      'excluded',
      'byReason',
      'fcManifestRows',
      'fcManifestSha256',
      'seconds',
    ]);
    expect(summary).toMatchObject({
      exitCode: 1,
      written: true,
      candidates: 4,
      entries: 2,
      excluded: 2,
      byReason: { PRESENT_AT_FC: 0, CREATE_TIME_NULL: 2, CREATED_AFTER_TASK_START: 0 },
      fcManifestRows: 9,
    });
  });
  it('written, on a terminal: the non-zero reasons as counts', () => {
    const { summary, counts } = summarizeProve(
      { kind: 'written', proof: proof([exclusion('PRESENT_AT_FC')]), out: '/p.json', candidates: 3 },
      3,
      false,
    );
    expect(summary).not.toHaveProperty('byReason');
    expect(counts).toEqual({ PRESENT_AT_FC: 1 });
  });
});
