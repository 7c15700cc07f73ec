import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/lib/cli/exit.js';
import { parseCandidates } from '../../src/lib/retire-absent/input.js';
import {
  formatProof,
  parseProof,
  PROOF_FORMAT,
  PROOF_FORMAT_DOC,
  proofDigest,
  type RetireProofBody,
  sealProof,
} from '../../src/lib/retire-absent/decide.js';
import { type RetiredAuditDbRow, retirementDigest, retireSql } from '../../src/lib/retire-absent/sql.js';

const FORM = 'f0000000-0000-4000-8000-000000000000';
const U = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const body: RetireProofBody = {
  format: PROOF_FORMAT,
  formatDoc: PROOF_FORMAT_DOC,
  proofId: 'rp-1',
  taskId: 'task-1',
  taskStart: '2026-11-30 01:00:00',
  schId: '5',
  formUuid: FORM,
  createdAt: '2026-11-30T01:10:00.000Z',
  fcDatabase: 'db:3306/fc',
  fcManifest: {
    path: '/r/fc-manifest.jsonl',
    checkpoints: ['/r/fc-manifest.checkpoint.json'],
    rows: 10,
    bytes: 2150,
    sha256: 'd'.repeat(64),
    completedAt: '2026-11-30T01:05:00.000Z',
  },
  candidates: { path: '/r/retire-candidates.jsonl', rows: 2, sha256: 'e'.repeat(64) },
  entries: [
    {
      answerUuid: U(1),
      expectedRevision: '9007199254740993',
      expectedHash: 'a'.repeat(64),
      expectedIsDeleted: false,
      localCreateTime: '2026-10-01 08:00:00',
      fcAbsentCheckedAt: '2026-11-30T01:09:00.000Z',
    },
  ],
  excluded: [
    {
      answerUuid: U(2),
      reason: 'PRESENT_AT_FC',
      detail: 'FC has it now (revision 3)',
      fcCheckedAt: '2026-11-30T01:09:00.000Z',
    },
  ],
};
const bytes = (s: string) => Buffer.from(s, 'utf8');

describe('proof format', () => {
  it('the digest is the fc.canon.v1 hash of everything but the digest: layout and member order do not matter, content does', () => {
    const proof = sealProof(body);
    const text = formatProof(proof);
    expect(Object.keys(JSON.parse(text) as object).at(-1)).toBe('digest');
    expect(parseProof(bytes(text), 'p')).toMatchObject({ kind: 'valid', proof: { digest: proof.digest } });
    // the same content compact, members reordered: still valid (a digest of content, not of bytes)
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(proof).reverse()));
    expect(parseProof(bytes(reordered), 'p').kind).toBe('valid');
    // the revision beyond 2^53 is text, so exact
    expect(proofDigest({ ...body, entries: [{ ...body.entries[0]!, expectedRevision: '9007199254740992' }] })).not.toBe(
      proof.digest,
    );
    const changed = text.replace('"rows":10', '"rows":11');
    expect(parseProof(bytes(changed), 'p')).toMatchObject({
      kind: 'refused',
      reason: 'PROOF_DIGEST',
      proofId: 'rp-1',
      answerUuids: [U(1)],
    });
  });

  it('not a proof → UsageError (exit 2); a v1 proof that breaks a rule → refused (exit 4)', () => {
    const usage = (s: string | Buffer) => () => parseProof(typeof s === 'string' ? bytes(s) : s, 'p');
    expect(usage('{"a":1,"a":2}')).toThrow(/not a strict JSON document \(DUPLICATE_KEY/);
    expect(usage('{"format":"fcctl.retire-proof.v1"} x')).toThrow(/not a strict JSON document/);
    expect(usage(Buffer.from([0x7b, 0xc3, 0x28, 0x7d]))).toThrow(/not UTF-8/);
    expect(usage('"x"')).toThrow(/not a JSON object/);
    expect(usage('{"format":"something.else"}')).toThrow(/has no "format": "fcctl\.retire-proof\.v1" member/);
    expect(usage('{"format":"fcctl.retire-proof.v9"}')).toThrow(UsageError);
    const reseal = (edit: (p: Record<string, unknown>) => void) => {
      const p = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
      edit(p);
      return parseProof(bytes(JSON.stringify({ ...p, digest: proofDigest(p) })), 'p');
    };
    expect(reseal(() => undefined).kind).toBe('valid');
    const invalid: Array<[(p: Record<string, unknown>) => void, RegExp]> = [
      [(p) => void (p['extra'] = 1), /unexpected member "extra"/],
      [(p) => void delete p['taskId'], /lacks the member "taskId"/],
      [(p) => void (p['proofId'] = 'x'.repeat(129)), /proofId is longer than 128 characters/],
      [(p) => void (p['taskStart'] = '2026-11-30T01:00:00'), /taskStart is not "yyyy-MM-dd HH:mm:ss"/],
      [(p) => void (p['entries'] as unknown[]).push((p['entries'] as unknown[])[0]), /appears twice/],
      [
        (p) => void ((p['entries'] as Array<Record<string, unknown>>)[0]!['expectedRevision'] = 3),
        /expectedRevision is not a whole number as text/,
      ],
      [
        (p) => void ((p['entries'] as Array<Record<string, unknown>>)[0]!['localCreateTime'] = null),
        /localCreateTime is not/,
      ],
      [(p) => void ((p['fcManifest'] as Record<string, unknown>)['rows'] = 1.5), /fcManifest\.rows/],
      [
        (p) => void ((p['excluded'] as Array<Record<string, unknown>>)[0]!['reason'] = 'WHY_NOT'),
        /excluded\[0\] is not as written by prove/,
      ],
    ];
    for (const [edit, message] of invalid) {
      const r = reseal(edit);
      expect(r.kind).toBe('refused');
      if (r.kind === 'refused') {
        expect(r.reason).toBe('PROOF_INVALID');
        expect(r.detail).toMatch(message);
      }
    }
  });
});

describe('retire candidates file', () => {
  const line = (o: Record<string, unknown> = {}) =>
    JSON.stringify({
      category: 'ABSENT_AT_FC',
      answerUuid: U(1),
      schId: '5',
      formUuid: FORM,
      expectedRevision: '3',
      expectedHash: 'a'.repeat(64),
      expectedIsDeleted: false,
      localCreateTime: '2026-10-01 08:00:00',
      taskStart: '2026-11-30 01:00:00',
      ...o,
    });
  it('reads the lines reconcile diff writes (blank lines skipped, other members ignored)', () => {
    const c = parseCandidates(`${line()}\n\n${line({ answerUuid: U(2), localCreateTime: null, note: 'x' })}\n`, 'c');
    expect(c.map((x) => [x.line, x.answerUuid, x.localCreateTime])).toEqual([
      [1, U(1), '2026-10-01 08:00:00'],
      [3, U(2), null],
    ]);
    expect(parseCandidates('', 'c')).toEqual([]);
  });
  it.each([
    [`${line()}\n{oops\n`, /^c line 2: not valid JSON$/],
    [`${line()}\n${line()}\n`, /line 2: answer .* is listed twice/],
    [
      `${line()}\n${line({ answerUuid: U(2), schId: '6' })}\n`,
      /line 2: school 6, .*line 1 has school 5.*one reconcile task/,
    ],
    [`${line({ expectedRevision: 3 })}\n`, /line 1: expectedRevision must be a whole number as text/],
    [`${line({ category: 'LOCAL_AHEAD' })}\n`, /line 1: category "LOCAL_AHEAD" is not ABSENT_AT_FC/],
    [`${JSON.stringify({ answerUuid: U(1) })}\n`, /line 1: member schId is missing/],
  ])('refuses a bad file with the line (exit 2): %#', (text, message) => {
    expect(() => parseCandidates(text, 'c')).toThrow(UsageError);
    expect(() => parseCandidates(text, 'c')).toThrow(message);
  });
});

describe('retire SQL', () => {
  it('the retirement is one conditional UPDATE of the retirement columns: guarded on every expected value, never a DELETE, never the revision', () => {
    const q = retireSql.markRetired({
      entry: {
        proofId: 'rp-1',
        proofDigest: 'c'.repeat(64),
        answerUuid: U(1),
        schId: '5',
        formUuid: FORM,
        expectedRevision: '9007199254740993',
        expectedHash: 'a'.repeat(64),
        expectedIsDeleted: true,
        localCreateTime: '2026-10-01 08:00:00',
      },
      taskStart: '2026-11-30 01:00:00',
      proofId: 'rp-1',
      retiredAt: '2026-11-30 02:00:00',
    });
    expect(q.sql).toBe(
      'UPDATE fc_answer_projection SET retired_at = ?, retire_proof_id = ?, projection_version = projection_version + 1, update_time = ? ' +
        'WHERE answer_uuid = ? AND sch_id = ? AND form_uuid = ? AND answer_revision = ? AND content_hash = ? AND is_deleted = ? ' +
        'AND create_time = ? AND create_time <= ? AND retired_at IS NULL',
    );
    expect(q.params).toEqual([
      '2026-11-30 02:00:00',
      'rp-1',
      '2026-11-30 02:00:00',
      U(1),
      5n,
      FORM,
      9007199254740993n,
      'a'.repeat(64),
      1,
      '2026-10-01 08:00:00',
      '2026-11-30 01:00:00',
    ]);
    for (const s of Object.values(retireSql))
      expect(String(s)).not.toMatch(/DELETE|answer_revision =\s*\?,|SET answer_revision/);
    expect(retireSql.localRow(U(1), '5', true).sql).toMatch(
      /FROM fc_answer_projection WHERE answer_uuid = \? AND sch_id = \? FOR UPDATE$/,
    );
    expect(retireSql.fcAnswer(U(1)).sql).toBe(
      'SELECT answer_uuid, sch_id, form_uuid, answer_revision, is_deleted FROM answer WHERE answer_uuid = ?',
    );
    const audit = retireSql.insertAudit({
      outcome: 'REFUSED',
      reason: `PRESENT_AT_FC: ${'x'.repeat(300)}`,
      proofId: 'rp-1',
      runId: 'r',
      host: 'h',
      schId: '5',
      answerUuid: U(1),
      expected: {},
      observed: {},
    });
    expect(audit.params[0]).toBe('RETIRE_ABSENT');
    expect([...(audit.params[2] as string)]).toHaveLength(255);
    // a proof refused as a whole: one row without an answer, its id and school null when unreadable
    const whole = retireSql.insertAudit({
      outcome: 'REFUSED',
      reason: 'PROOF_DIGEST: x',
      proofId: null,
      runId: 'r',
      host: 'h',
      schId: null,
      answerUuid: null,
      expected: { proofFile: 'p' },
      observed: {},
    });
    expect(whole.params).toEqual([
      'RETIRE_ABSENT',
      'REFUSED',
      'PROOF_DIGEST: x',
      null,
      'r',
      'h',
      null,
      null,
      '{"proofFile":"p"}',
      '{}',
    ]);
  });
  it("the retirement's proof is read from the newest RETIRED audit row of the answer (a plain read, no lock)", () => {
    const q = retireSql.retiredAudit(U(1), '5');
    expect(q.sql).toBe(
      "SELECT proof_id, expected_json, observed_json FROM fc_reconcile_audit WHERE action = ? AND outcome = 'RETIRED' AND answer_uuid = ? AND sch_id = ? ORDER BY id DESC LIMIT 1",
    );
    expect(q.params).toEqual(['RETIRE_ABSENT', U(1), 5n]);
  });
});

describe('retirementDigest: the digest of the proof that made the current retirement', () => {
  const D = 'c'.repeat(64);
  const AT = '2026-11-30 02:00:00';
  const row = (o: Partial<RetiredAuditDbRow> = {}): RetiredAuditDbRow => ({
    proof_id: 'rp-1',
    expected_json: JSON.stringify({ proofId: 'rp-1', proofDigest: D }),
    observed_json: JSON.stringify({ retiredAt: AT }),
    ...o,
  });
  it.each<[string, RetiredAuditDbRow | undefined, string | null, string | null, string | null]>([
    ['the RETIRED row of this retirement', row(), AT, 'rp-1', D],
    [
      'its retiredAt with fractional seconds or a T',
      row({ observed_json: JSON.stringify({ retiredAt: '2026-11-30T02:00:00.000' }) }),
      AT,
      'rp-1',
      D,
    ],
    ['no RETIRED audit row', undefined, AT, 'rp-1', null],
    ['not retired', row(), null, 'rp-1', null],
    ['no proof id on the row', row(), AT, null, null],
    ['the audit row is of another proof id', row({ proof_id: 'rp-0' }), AT, 'rp-1', null],
    ['the audit row is of an earlier retirement (another retiredAt)', row(), '2026-11-30 03:00:00', 'rp-1', null],
    ['no retiredAt observed', row({ observed_json: '{}' }), AT, 'rp-1', null],
    ['no digest recorded', row({ expected_json: JSON.stringify({ proofId: 'rp-1' }) }), AT, 'rp-1', null],
    [
      'a digest that is not 64 lowercase hex',
      row({ expected_json: JSON.stringify({ proofDigest: D.toUpperCase() }) }),
      AT,
      'rp-1',
      null,
    ],
    ['expected_json not JSON', row({ expected_json: '{' }), AT, 'rp-1', null],
    ['expected_json null', row({ expected_json: null }), AT, 'rp-1', null],
    ['observed_json an array', row({ observed_json: '[]' }), AT, 'rp-1', null],
  ])('%s', (_name, audit, retiredAt, proofId, digest) => {
    expect(retirementDigest(audit, retiredAt, proofId)).toBe(digest);
  });
});
