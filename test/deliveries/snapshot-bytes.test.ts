/**
 * Issue 20: `send` reads `snapshot_json` as its stored bytes and checks and embeds those bytes.
 * Every case gives the same answer from a Buffer as from the text, and the envelope is the same
 * bytes either way; the root member names come from the canonicalizer's one pass.
 */
import { describe, expect, it } from 'vitest';
import { canonicalize, contentHash, hashWithMembers } from '../../src/lib/canon/index.js';
import { buildEnvelope, checkSnapshot } from '../../src/lib/deliveries/envelope.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';
import { snapshotOf } from '../helpers/deliveries.js';

const hashOf = (text: string) => (canonicalize(text) as { hash: string }).hash;
const consumer = { appKey: '100018', schoolId: '5' };

describe('hashWithMembers', () => {
  it('gives the content hash and the root names as written (escapes decoded, intent kept, duplicates refused)', () => {
    const text = '{"b":1,"a\\u0041":[2,{"z":3}],"intent":{"x":1}}';
    const r = hashWithMembers(Buffer.from(text));
    expect(r).toEqual({ ok: true, hash: contentHash(text), members: ['b', 'aA', 'intent'] });
    expect(hashWithMembers(Buffer.from('{}'))).toEqual({ ok: true, hash: contentHash('{}'), members: [] });
    expect(hashWithMembers(Buffer.from(' [1,{"a":1}] '))).toMatchObject({ ok: true, members: null });
    expect(hashWithMembers(Buffer.from('"x"'))).toMatchObject({ ok: true, members: null });
    expect(hashWithMembers(Buffer.from('{"a":1,"a":2}'))).toMatchObject({
      ok: false,
      error: { code: 'DUPLICATE_KEY' },
    });
    expect(hashWithMembers(Buffer.from('{"a":'))).toMatchObject({ ok: false });
    // a later call does not see an earlier call's names, even at the same offsets and lengths
    expect(hashWithMembers(Buffer.from('{"q":1}'))).toMatchObject({ members: ['q'] });
    for (const name of ['abcde', 'abcdf', 'zzzzz', 'abcde', 'schId', 'schJd', 'schId']) {
      expect(hashWithMembers(Buffer.from(`{"${name}":1,"${name}x":2}`))).toMatchObject({
        ok: true,
        members: [name, `${name}x`],
      });
    }
    // more distinct names of one length than are remembered
    for (let i = 0; i < 20; i++)
      expect(hashWithMembers(Buffer.from(`{"k${String(i).padStart(3, '0')}":1}`))).toMatchObject({
        members: [`k${String(i).padStart(3, '0')}`],
      });
    expect(hashWithMembers(Buffer.from(`{"${'n'.repeat(100)}":1}`))).toMatchObject({ members: ['n'.repeat(100)] });
  });
});

describe('checkSnapshot over bytes and over text', () => {
  const valid = snapshotOf(5);
  const cases: Array<[string, string, string]> = [
    ['valid', valid, hashOf(valid)],
    [
      'valid, not canonical (spaces, order)',
      ` ${JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(valid) as object).reverse()), null, 1)} `,
      hashOf(valid),
    ],
    ['hash mismatch', valid, '0'.repeat(64)],
    ['not JSON', '{"a":', '0'.repeat(64)],
    ['a byte order mark', `\ufeff${valid}`, hashOf(valid)],
    ['an array', '[1]', hashOf('[1]')],
    ['an eleventh member', snapshotOf(5, { extra: 1 }), hashOf(snapshotOf(5, { extra: 1 }))],
    [
      'a member missing',
      JSON.stringify({ ...(JSON.parse(valid) as object), values: undefined }),
      hashOf(JSON.stringify({ ...(JSON.parse(valid) as object), values: undefined })),
    ],
    ['an escaped member name', valid.replace('"schId"', '"sch\\u0049d"'), hashOf(valid)],
    [
      "this consumer's intent",
      snapshotOf(5, { intent: { intentId: 'i-1', consumerAppKey: '100018', consumerSchoolId: 5 } }),
      hashOf(valid),
    ],
    [
      "another consumer's intent",
      snapshotOf(5, { intent: { intentId: 'i-1', consumerAppKey: '100099', consumerSchoolId: 5 } }),
      hashOf(valid),
    ],
    [
      "another school's intent",
      snapshotOf(5, { intent: { intentId: 'i-1', consumerAppKey: '100018', consumerSchoolId: 6 } }),
      hashOf(valid),
    ],
    ['an intent that is not an object', snapshotOf(5, { intent: null }), hashOf(valid)],
    [
      'an escaped intent name, another consumer',
      snapshotOf(5, { intent: { consumerAppKey: '1', consumerSchoolId: 5 } }).replace('"intent"', '"int\\u0065nt"'),
      hashOf(valid),
    ],
  ];
  const expected: Record<string, string> = {
    valid: 'ok',
    'valid, not canonical (spaces, order)': 'ok',
    'hash mismatch': 'SNAPSHOT_HASH_MISMATCH',
    'not JSON': 'SNAPSHOT_INVALID',
    'a byte order mark': 'SNAPSHOT_INVALID',
    'an array': 'SNAPSHOT_INVALID',
    'an eleventh member': 'SNAPSHOT_INVALID',
    'a member missing': 'SNAPSHOT_INVALID',
    'an escaped member name': 'ok',
    "this consumer's intent": 'ok',
    "another consumer's intent": 'SNAPSHOT_INVALID',
    "another school's intent": 'SNAPSHOT_INVALID',
    'an intent that is not an object': 'SNAPSHOT_INVALID',
    'an escaped intent name, another consumer': 'SNAPSHOT_INVALID',
  };
  it.each(cases)('%s', (name, text, hash) => {
    const fromText = checkSnapshot(text, hash, consumer);
    const fromBytes = checkSnapshot(Buffer.from(text, 'utf8'), hash, consumer);
    expect(fromBytes).toEqual(fromText);
    expect(fromBytes.ok ? 'ok' : fromBytes.reason).toBe(expected[name]);
  });
  it('a byte order mark is named as what breaks the envelope, after the hash', () => {
    expect(checkSnapshot(Buffer.from(`\ufeff${valid}`), hashOf(valid))).toEqual({
      ok: false,
      reason: 'SNAPSHOT_INVALID',
      detail: 'snapshot is not a JSON object',
    });
    expect(checkSnapshot(Buffer.from(`\ufeff${valid}`), '0'.repeat(64))).toMatchObject({
      reason: 'SNAPSHOT_HASH_MISMATCH',
    });
  });
  it('bytes that are not UTF-8 are SNAPSHOT_INVALID', () => {
    const bytes = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    expect(checkSnapshot(bytes, '0'.repeat(64))).toMatchObject({
      ok: false,
      reason: 'SNAPSHOT_INVALID',
      detail: expect.stringContaining('INVALID_UTF8'),
    });
  });
});

describe('buildEnvelope from bytes', () => {
  const row = (snapshot: Buffer | string, over: Partial<DeliveryRow> = {}): DeliveryRow => ({
    id: '1',
    event_id: '5f0a0000-0000-4000-8000-000000000001',
    event_type: 'UPSERT',
    source_app_key: '100021',
    consumer_app_key: '消费者🙂',
    consumer_school_id: '9007199254740993',
    grant_version: '7',
    form_uuid: 'f0e1',
    form_version: 4,
    answer_uuid: 'a1b2',
    answer_revision: '3',
    is_deleted: 1,
    content_hash: 'h',
    occurred_at: '2026-10-21 10:05:00',
    snapshot_json: snapshot,
    state: 'PENDING',
    retry_count: 0,
    replay_op_digest: null,
    ...over,
  });
  it('is byte for byte the envelope of the same snapshot as text, non-ASCII keys and snapshots included', () => {
    for (const text of [snapshotOf(5), '{"名":"杨敏","e":"🙂","n":1.50}', ' { "a" : 1 } ']) {
      const fromBytes = buildEnvelope(row(Buffer.from(text, 'utf8')), 'Asia/Shanghai');
      expect(fromBytes.equals(buildEnvelope(row(text), 'Asia/Shanghai'))).toBe(true);
      expect(fromBytes.toString('utf8').endsWith(`"snapshot":${text}}`)).toBe(true);
      expect((JSON.parse(fromBytes.toString('utf8')) as { consumerAppKey: string }).consumerAppKey).toBe('消费者🙂');
    }
  });
  it('numbers from mysql2 as numbers or strings give the same digits; a non-integer is refused', () => {
    const a = buildEnvelope(row('{}', { consumer_school_id: '5', form_version: 4 }), 'UTC').toString('utf8');
    const b = buildEnvelope(
      row('{}', { consumer_school_id: 5 as unknown as string, form_version: '4' }),
      'UTC',
    ).toString('utf8');
    expect(a).toBe(b);
    expect(a).toContain('"consumerSchoolId":5,');
    expect(() => buildEnvelope(row('{}', { form_version: 4.5 }), 'UTC')).toThrow(/not an integer/);
    expect(() => buildEnvelope(row('{}', { grant_version: '7e3' }), 'UTC')).toThrow(/not an integer/);
  });
});
