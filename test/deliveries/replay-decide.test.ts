import { describe, expect, expectTypeOf, it } from 'vitest';
import { prePublish, type PublisherFacts } from '../../src/lib/deliveries/send/decide.js';
import {
  decideReplay,
  grantRefusal,
  isRefused,
  opDigest,
  type RecordedAnswer,
  type ReplayDecision,
  type ReplayRequest,
  type ReplayRow,
} from '../../src/lib/deliveries/replay/decide.js';
import { LineError, parseCsvRecords } from '../../src/lib/files/record-file.js';
import { canonicalRevision } from '../../src/lib/ids.js';
import { MAX_REPLAY_ITEMS, parseReplayFile } from '../../src/lib/deliveries/replay/input.js';
import { ALL_FAILED, failedSql } from '../../src/lib/deliveries/failed/sql.js';
import { replaySql } from '../../src/lib/deliveries/replay/sql.js';
import {
  DELIVERY_STATES,
  type DeliveryRow,
  type DeliveryState,
  type GrantRow,
} from '../../src/lib/deliveries/types.js';
import { canonicalize } from '../../src/lib/canon/index.js';
import { snapshotOf } from '../helpers/deliveries.js';

const UUID = '5f0a0000-0000-4000-8000-00000000a001';
const OP = opDigest('inc-42-1');
const request: ReplayRequest = {
  answerUuid: UUID,
  consumerAppKey: '100100',
  consumerSchoolId: '5',
  expectedRevision: '3',
  opDigest: OP,
};
const row = (over: Partial<ReplayRow> = {}): ReplayRow => ({
  id: '17',
  event_id: 'e-17',
  state: 'FAILED',
  retry_count: 3,
  replay_op_digest: null,
  answer_revision: '3',
  grant_version: '7',
  form_uuid: 'f0e1',
  last_error: 'NACK',
  consumer_applied_at: null,
  consumer_outcome: null,
  ...over,
});
const grant = (over: Partial<GrantRow> = {}): GrantRow => ({
  form_uuid: 'f0e1',
  consumer_school_id: '5',
  consumer_app_key: '100100',
  grant_version: '7',
  read_allowed: 1,
  subscribe_allowed: 1,
  push_allowed: 1,
  revoked: 0,
  ...over,
});

const GRANTS: Record<string, GrantRow | null> = {
  ok: grant(),
  pushOff: grant({ push_allowed: 0 }),
  missing: null,
  revoked: grant({ revoked: 1 }),
  noRead: grant({ read_allowed: 0 }),
  noSubscribe: grant({ subscribe_allowed: 0 }),
  advanced: grant({ grant_version: '8' }),
};

describe('opDigest and canonicalRevision', () => {
  it('is the lowercase hex SHA-256 of the UTF-8 operation id', () => {
    expect(opDigest('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(opDigest('运维-1')).toMatch(/^[0-9a-f]{64}$/);
  });
  it('canonicalizes whole numbers ≥ 0 within BIGINT and refuses the rest', () => {
    expect(canonicalRevision('007')).toBe('7');
    expect(canonicalRevision(0)).toBe('0');
    expect(canonicalRevision('9223372036854775807')).toBe('9223372036854775807');
    for (const bad of ['9223372036854775808', '-1', '1.5', '1e3', '', 'x']) expect(canonicalRevision(bad)).toBeNull();
  });
});

describe('decideReplay: explicit table', () => {
  type Case = [string, Partial<ReplayRow> | null, GrantRow | null, ReplayDecision['code'], 'reset' | 'revoke' | null];
  const table: Case[] = [
    ['no row', null, null, 'NO_DELIVERY_ROW', null],
    ['newest row of another revision', { answer_revision: '4' }, GRANTS.ok!, 'REVISION_MISMATCH', null],
    ['older revision than expected', { answer_revision: '2' }, GRANTS.ok!, 'REVISION_MISMATCH', null],
    ['PENDING', { state: 'PENDING', retry_count: 0, last_error: null }, GRANTS.ok!, 'QUEUED', 'reset'],
    ['FAILED', { state: 'FAILED' }, GRANTS.ok!, 'QUEUED', 'reset'],
    ['DEAD', { state: 'DEAD', retry_count: 8 }, GRANTS.ok!, 'QUEUED', 'reset'],
    [
      'BROKER_ACCEPTED without receipt',
      { state: 'BROKER_ACCEPTED', retry_count: 0, last_error: null },
      GRANTS.ok!,
      'QUEUED',
      'reset',
    ],
    [
      'BROKER_ACCEPTED with receipt',
      { state: 'BROKER_ACCEPTED', consumer_applied_at: '2026-10-21 10:06:00', consumer_outcome: 'APPLIED' },
      GRANTS.ok!,
      'ALREADY_DELIVERED',
      null,
    ],
    [
      'receipt beats a revoked grant',
      { state: 'BROKER_ACCEPTED', consumer_applied_at: '2026-10-21 10:06:00' },
      GRANTS.revoked!,
      'ALREADY_DELIVERED',
      null,
    ],
    [
      'GRANT_REVOKED row, grant valid again',
      { state: 'GRANT_REVOKED', last_error: 'GRANT_REVOKED' },
      GRANTS.ok!,
      'GRANT_REVOKED',
      null,
    ],
    ['FAILED, grant revoked', { state: 'FAILED' }, GRANTS.revoked!, 'GRANT_REVOKED', 'revoke'],
    ['DEAD, grant advanced', { state: 'DEAD' }, GRANTS.advanced!, 'GRANT_REVOKED', 'revoke'],
    ['PENDING, grant missing', { state: 'PENDING' }, null, 'GRANT_REVOKED', 'revoke'],
    [
      'BROKER_ACCEPTED, grant advanced: answered, state kept',
      { state: 'BROKER_ACCEPTED' },
      GRANTS.advanced!,
      'GRANT_REVOKED',
      null,
    ],
    ['FAILED, push disabled: queued, send holds it', { state: 'FAILED' }, GRANTS.pushOff!, 'QUEUED', 'reset'],
  ];
  for (const [name, over, g, code, write] of table) {
    it(`${name} → ${code}${write ? ` (${write})` : ''}`, () => {
      const d = decideReplay({ request, newest: over === null ? null : row(over), grant: g, prior: null });
      expect(d.code).toBe(code);
      expect('write' in d && d.write ? d.write.kind : null).toBe(write);
      expect(d.repeated).toBe(false);
    });
  }

  it('a reset carries the generation read and the operation digest; a revoke the grant code', () => {
    const d = decideReplay({
      request,
      newest: row({ state: 'DEAD', retry_count: 8, replay_op_digest: 'a'.repeat(64) }),
      grant: GRANTS.ok!,
      prior: null,
    });
    expect(d).toMatchObject({
      code: 'QUEUED',
      eventId: 'e-17',
      deliveryId: '17',
      write: {
        kind: 'reset',
        opDigest: OP,
        from: { id: '17', state: 'DEAD', retryCount: 8, replayOpDigest: 'a'.repeat(64) },
      },
    });
    const r = decideReplay({ request, newest: row(), grant: GRANTS.advanced!, prior: null });
    expect(r).toMatchObject({ code: 'GRANT_REVOKED', write: { kind: 'revoke', lastError: 'GRANT_VERSION_CHANGED' } });
    expect(r.reason).toMatch(/^GRANT_VERSION_CHANGED: grant version is 8, the row was made under 7/);
  });

  it('a reason never exceeds 512 characters, so the recorded answer is the same text', () => {
    const d = decideReplay({
      request,
      newest: row({ last_error: `NACK: ${'债'.repeat(600)}` }),
      grant: GRANTS.ok!,
      prior: null,
    });
    expect(d.code).toBe('QUEUED');
    expect([...d.reason]).toHaveLength(512);
  });

  it('the expected revision is compared as a number (007 = 7), big revisions exactly', () => {
    expect(
      decideReplay({ request: { ...request, expectedRevision: '003' }, newest: row(), grant: GRANTS.ok!, prior: null })
        .code,
    ).toBe('QUEUED');
    const big = '9007199254740993';
    expect(
      decideReplay({
        request: { ...request, expectedRevision: big },
        newest: row({ answer_revision: big }),
        grant: GRANTS.ok!,
        prior: null,
      }).code,
    ).toBe('QUEUED');
    expect(
      decideReplay({
        request: { ...request, expectedRevision: '9007199254740992' },
        newest: row({ answer_revision: big }),
        grant: GRANTS.ok!,
        prior: null,
      }).code,
    ).toBe('REVISION_MISMATCH');
  });

  it('a recorded answer is returned as it was, with no write, whatever the row is now', () => {
    const prior: RecordedAnswer = {
      answerUuid: UUID,
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      expectedRevision: '3',
      code: 'QUEUED',
      reason: 'first',
      eventId: 'e-17',
    };
    for (const newest of [null, row({ state: 'BROKER_ACCEPTED' }), row({ state: 'GRANT_REVOKED' })]) {
      const d = decideReplay({ request, newest, grant: null, prior });
      expect(d).toEqual({ code: 'QUEUED', reason: 'first', repeated: true, eventId: 'e-17', deliveryId: null });
    }
    expect(
      decideReplay({ request: { ...request, expectedRevision: '03' }, newest: null, grant: null, prior }).code,
    ).toBe('QUEUED');
  });

  it('a recorded QUEUED answer whose row is FAILED or DEAD again: the same answer, no write, marked still failed with what to do', () => {
    const prior: RecordedAnswer = {
      answerUuid: UUID,
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      expectedRevision: '3',
      code: 'QUEUED',
      reason: 'first',
      eventId: 'e-17',
    };
    for (const rowState of ['FAILED', 'DEAD'] as const) {
      const d = decideReplay({
        request,
        newest: null,
        grant: null,
        prior: { ...prior, rowState, rowLastError: 'NO_ROUTE' },
      });
      expect(d).toMatchObject({ code: 'QUEUED', reason: 'first', repeated: true, eventId: 'e-17' });
      expect('write' in d).toBe(false);
      expect((d as { stillFailed?: string }).stillFailed).toBe(
        `event e-17 is ${rowState} again (NO_ROUTE) since this operation id queued it; the same id changes nothing: replay it under a new operation id (with --failed, a new --operation-prefix)`,
      );
    }
    // a row still on its way, delivered, or another recorded answer: nothing to say
    for (const over of [
      { rowState: 'PENDING' },
      { rowState: 'BROKER_ACCEPTED' },
      { rowState: null },
      { code: 'GRANT_REVOKED', rowState: 'DEAD' },
    ] as const) {
      expect(decideReplay({ request, newest: null, grant: null, prior: { ...prior, ...over } })).not.toHaveProperty(
        'stillFailed',
      );
    }
  });

  it('an operation id recorded for other parameters is OPERATION_CONFLICT, refused, nothing written', () => {
    const prior: RecordedAnswer = {
      answerUuid: UUID,
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      expectedRevision: '3',
      code: 'QUEUED',
      reason: 'first',
      eventId: 'e-17',
    };
    for (const other of [
      { answerUuid: UUID.replace('a001', 'a002') },
      { consumerAppKey: '100101' },
      { consumerSchoolId: '6' },
      { expectedRevision: '4' },
    ]) {
      const d = decideReplay({ request: { ...request, ...other }, newest: row(), grant: GRANTS.ok!, prior });
      expect(d.code).toBe('OPERATION_CONFLICT');
      expect('write' in d).toBe(false);
      expect(d.reason).toContain('use a new operation id');
      expect(isRefused(d.code)).toBe(true);
    }
  });
});

describe('decideReplay: exhaustive over state × receipt × grant × revision × prior', () => {
  // [consumer_applied_at, consumer_outcome, taken in?]
  const receipts: Array<[string | null, string | null, boolean]> = [
    [null, null, false],
    ['2026-10-21 10:06:00', 'APPLIED', true],
    ['2026-10-21 10:06:00', 'IGNORED', true],
    ['2026-10-21 10:06:00', null, true],
    ['2026-10-21 10:06:00', 'CONFLICT', false],
    ['2026-10-21 10:06:00', 'DEFERRED', false],
    ['2026-10-21 10:06:00', 'REJECTED', false],
  ];
  const revisions = ['3', '4'];
  const priors: Array<'none' | 'same' | 'other'> = ['none', 'same', 'other'];
  let cases = 0;
  it('keeps every invariant of seed 000 §7.1/§8 and SPEC §5', () => {
    for (const state of DELIVERY_STATES as readonly DeliveryState[])
      for (const [appliedAt, outcome, applied] of receipts)
        for (const [gname, g] of Object.entries(GRANTS))
          for (const rev of revisions)
            for (const p of priors)
              for (const present of [true, false]) {
                cases += 1;
                const newest = present
                  ? row({ state, consumer_applied_at: appliedAt, consumer_outcome: outcome, answer_revision: rev })
                  : null;
                const prior: RecordedAnswer | null =
                  p === 'none'
                    ? null
                    : {
                        answerUuid: UUID,
                        consumerAppKey: '100100',
                        consumerSchoolId: '5',
                        expectedRevision: p === 'same' ? '3' : '9',
                        code: 'NO_DELIVERY_ROW',
                        reason: 'recorded',
                        eventId: null,
                      };
                const d = decideReplay({ request, newest, grant: g, prior });
                const write = 'write' in d ? d.write : undefined;
                const label = JSON.stringify({ state, appliedAt, outcome, gname, rev, p, present });
                // a recorded operation decides alone and never writes
                if (p === 'same')
                  expect(d, label).toEqual({
                    code: 'NO_DELIVERY_ROW',
                    reason: 'recorded',
                    repeated: true,
                    eventId: null,
                    deliveryId: null,
                  });
                if (p === 'other') expect(d.code, label).toBe('OPERATION_CONFLICT');
                if (p !== 'none') {
                  expect(write, label).toBeUndefined();
                  continue;
                }
                expect(d.repeated).toBe(false);
                if (!present) {
                  expect(d.code, label).toBe('NO_DELIVERY_ROW');
                  continue;
                }
                if (rev !== '3') {
                  expect(d.code, label).toBe('REVISION_MISMATCH');
                  continue;
                }
                if (applied) {
                  expect(d.code, label).toBe('ALREADY_DELIVERED');
                  continue;
                }
                const refusal = grantRefusal(g, '7');
                if (state === 'GRANT_REVOKED' || refusal) {
                  expect(d.code, label).toBe('GRANT_REVOKED');
                  // never revived; a terminal BROKER_ACCEPTED keeps its state; open and DEAD rows are marked
                  if (state === 'GRANT_REVOKED' || state === 'BROKER_ACCEPTED') expect(write, label).toBeUndefined();
                  else
                    expect(write, label).toEqual({
                      kind: 'revoke',
                      from: { id: '17', state, retryCount: 3, replayOpDigest: null },
                      lastError: refusal!.code,
                    });
                  continue;
                }
                expect(d.code, label).toBe('QUEUED');
                expect(write, label).toEqual({
                  kind: 'reset',
                  from: { id: '17', state, retryCount: 3, replayOpDigest: null },
                  opDigest: OP,
                });
              }
    expect(cases).toBe(5 * 7 * 7 * 2 * 3 * 2);
  });

  it("grantRefusal says exactly what send's pre-publish step 2 says", () => {
    const snapshot = snapshotOf(5);
    const hash = (canonicalize(snapshot) as { hash: string }).hash;
    const dRow: DeliveryRow = {
      id: '1',
      event_id: '5f0a0000-0000-4000-8000-000000000001',
      event_type: 'created',
      source_app_key: '100021',
      consumer_app_key: '100100',
      consumer_school_id: '5',
      grant_version: '7',
      form_uuid: 'f0e1',
      form_version: 4,
      answer_uuid: UUID,
      answer_revision: '3',
      is_deleted: 0,
      content_hash: hash,
      occurred_at: '2026-10-21 10:05:00',
      snapshot_json: snapshot,
      state: 'PENDING',
      retry_count: 0,
      replay_op_digest: null,
    };
    const publisher: PublisherFacts = {
      appKey: '100021',
      appCode: 'demo',
      registry: { id: '42', app_code: 'demo', app_key: '100021' },
    };
    for (const [name, g] of Object.entries(GRANTS)) {
      const pre = prePublish(dRow, { publisher, grant: g ?? undefined, maxRetries: 8 });
      const refusal = grantRefusal(g, '7');
      if (pre.kind === 'revoke') expect(refusal?.code, name).toBe(pre.reason);
      else expect(refusal, name).toBeNull();
    }
  });
});

describe('replay SQL (as text)', () => {
  it('the reset is guarded on the generation read, never touches receipts or a revoked row, clears the claim', () => {
    const { sql, params } = replaySql.write({
      kind: 'reset',
      from: { id: '17', state: 'DEAD', retryCount: 8, replayOpDigest: null },
      opDigest: OP,
    });
    expect(sql).toContain(
      "SET state = 'PENDING', retry_count = 0, replay_op_digest = ?, last_error = NULL, next_retry_at = NULL, broker_accepted_at = NULL, claim_owner = NULL, claim_expires_at = NULL",
    );
    expect(sql).toContain(
      "WHERE id = ? AND state = ? AND retry_count = ? AND replay_op_digest <=> ? AND (consumer_applied_at IS NULL OR consumer_outcome IN ('CONFLICT', 'DEFERRED', 'REJECTED'))",
    );
    expect(sql).not.toMatch(/consumer_applied_at\s*=|consumer_outcome\s*=|snapshot_json|event_id/);
    expect(params).toEqual([OP, '17', 'DEAD', 8, null]);
  });
  it('the revoke only marks open or DEAD rows', () => {
    const { sql, params } = replaySql.write({
      kind: 'revoke',
      from: { id: '17', state: 'FAILED', retryCount: 2, replayOpDigest: 'd' },
      lastError: 'GRANT_REVOKED',
    });
    expect(sql).toContain("state IN ('PENDING', 'FAILED', 'DEAD')");
    expect(params).toEqual(['GRANT_REVOKED', '17', 'FAILED', 2, 'd']);
  });
  it('the newest row is locked only inside the transaction; failed pages read one extra row', () => {
    expect(replaySql.newestRow(request, true).sql).toMatch(
      /ORDER BY answer_revision DESC, id DESC LIMIT 1 FOR UPDATE$/,
    );
    expect(replaySql.newestRow(request, false).sql).not.toContain('FOR UPDATE');
    expect(failedSql.page('k', '5', ALL_FAILED, { page: 3 }, 50).params).toEqual(['k', '5', 51, 100]);
    expect(failedSql.page('k', '5', ALL_FAILED, { page: 1 }, 50).sql).toContain('ORDER BY id DESC LIMIT ? OFFSET ?');
  });
});

describe('replay input files', () => {
  const U1 = '5f0a0000-0000-4000-8000-00000000a001';
  const U2 = '5f0a0000-0000-4000-8000-00000000a002';
  const err = (text: string) => {
    try {
      parseReplayFile(text);
    } catch (e) {
      if (e instanceof LineError) return e.message;
      throw e;
    }
    throw new Error('expected a LineError');
  };

  it('reads CSV with a header (any column order, extra columns, quotes, CRLF, BOM, blank lines)', () => {
    const text = `\uFEFFnote,operationId,expectedRevision,answerUuid\r\n"a, b",op-1,3,${U1}\r\n\r\nx,"op ""2""",007,${U2}\r\n`;
    expect(parseReplayFile(text)).toEqual([
      { line: 2, answerUuid: U1, expectedRevision: '3', operationId: 'op-1' },
      { line: 4, answerUuid: U2, expectedRevision: '7', operationId: 'op "2"' },
    ]);
  });
  it('reads JSON lines (numbers or digit strings for the revision)', () => {
    const text = `{"answerUuid":"${U1}","expectedRevision":3,"operationId":"op-1"}\n\n{"answerUuid":"${U2}","expectedRevision":"9007199254740993","operationId":"op-2","note":1}\n`;
    expect(parseReplayFile(text)).toEqual([
      { line: 1, answerUuid: U1, expectedRevision: '3', operationId: 'op-1' },
      { line: 3, answerUuid: U2, expectedRevision: '9007199254740993', operationId: 'op-2' },
    ]);
  });
  it('a same operation id with the same parameters is allowed (the second gets the first answer)', () => {
    expect(parseReplayFile(`answerUuid,expectedRevision,operationId\n${U1},3,op\n${U1},3,op\n`)).toHaveLength(2);
  });
  const H = 'answerUuid,expectedRevision,operationId\n';
  const bad: Array<[string, string, RegExp]> = [
    ['unclosed quote', `${H}${U1},3,"op\n`, /^line 2: malformed CSV: a quoted field is not closed/],
    ['text after a quote', `${H}${U1},3,"op"x\n`, /^line 2: malformed CSV/],
    ['field count', `${H}${U1},3\n`, /^line 2: malformed CSV: 2 fields, the header has 3/],
    ['missing column', `answerUuid,expectedRevision\n${U1},3\n`, /^line 1: the header lacks operationId/],
    ['non-UUID', `${H}${U1},3,op-1\nnot-a-uuid,3,op-2\n`, /^line 3: answerUuid "not-a-uuid" is not a UUID/],
    ['fractional revision', `${H}${U1},1.5,op\n`, /^line 2: expectedRevision "1.5" is not a whole number/],
    ['negative revision', `${H}${U1},-1,op\n`, /^line 2: expectedRevision/],
    ['revision beyond BIGINT', `${H}${U1},9223372036854775808,op\n`, /^line 2: expectedRevision/],
    ['empty op id', `${H}${U1},3,\n`, /^line 2: operationId is empty/],
    ['op id of 129 characters', `${H}${U1},3,${'x'.repeat(129)}\n`, /^line 2: operationId is longer than 128/],
    [
      'op id with spaces around',
      `${H}${U1},3, op\n`,
      /^line 2: operationId holds control characters or surrounding spaces/,
    ],
    [
      'op id reused for another answer',
      `${H}${U1},3,op\n${U2},3,op\n`,
      /^line 3: operation id "op" is used on line 2 for another answer/,
    ],
    ['header only', H, /holds no replay items/],
    ['empty file', '', /^line 1: no header line|holds no replay items/],
    [
      'malformed JSON line',
      `{"answerUuid":"${U1}","expectedRevision":3,"operationId":"a"}\n{"answerUuid":\n`,
      /^line 2: malformed JSON/,
    ],
    [
      'JSON line not an object',
      `{"answerUuid":"${U1}","expectedRevision":3,"operationId":"a"}\n[1]\n`,
      /^line 2: not a JSON object/,
    ],
    ['JSON member missing', `{"answerUuid":"${U1}","operationId":"a"}\n`, /^line 1: expectedRevision is missing/],
    [
      'JSON unsafe number revision',
      `{"answerUuid":"${U1}","expectedRevision":9007199254740993,"operationId":"a"}\n`,
      /^line 1: expectedRevision/,
    ],
    [
      'JSON revision as float',
      `{"answerUuid":"${U1}","expectedRevision":3.5,"operationId":"a"}\n`,
      /^line 1: expectedRevision/,
    ],
  ];
  for (const [name, text, expected] of bad) it(`refuses: ${name}`, () => expect(err(text)).toMatch(expected));

  it(`refuses more than ${MAX_REPLAY_ITEMS} items`, () => {
    const lines = Array.from({ length: MAX_REPLAY_ITEMS + 1 }, (_, i) => `${U1},3,op-${i}`);
    expect(err(`${H}${lines.join('\n')}\n`)).toMatch(/more than 100000 items/);
  });

  it('CSV records keep quoted newlines and report the line they start on', () => {
    expect(parseCsvRecords('a,b\n"x\ny",z\nq,r')).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['x\ny', 'z'] },
      { line: 4, fields: ['q', 'r'] },
    ]);
  });
});

describe('replay library types', () => {
  it('codes are a closed union; a decision carries a write only for the five protocol codes', () => {
    expectTypeOf<ReplayDecision['code']>().toEqualTypeOf<
      'QUEUED' | 'ALREADY_DELIVERED' | 'GRANT_REVOKED' | 'REVISION_MISMATCH' | 'NO_DELIVERY_ROW' | 'OPERATION_CONFLICT'
    >();
    expectTypeOf(decideReplay).parameter(0).toHaveProperty('prior');
    expectTypeOf(opDigest).returns.toEqualTypeOf<string>();
    expectTypeOf(parseReplayFile).returns.toEqualTypeOf<
      import('../../src/lib/deliveries/replay/input.js').ReplayItem[]
    >();
  });
});
