import { describe, expect, it } from 'vitest';
import { defaultCheckpointPath } from '../../src/lib/manifest/checkpoint.js';
import { paramsDigest } from '../../src/lib/canon/params-digest.js';
import {
  compareKeys,
  compareRevisions,
  formatManifestLine,
  type ManifestRow,
  parseManifestLine,
} from '../../src/lib/manifest/row.js';
import { parseShard, shardRange } from '../../src/lib/manifest/shard.js';
import { selectFcManifestPage, selectShManifestPage } from '../../src/lib/manifest/sql.js';

const fcRow: ManifestRow = {
  answerUuid: '0a0b0c0d-0000-4000-8000-000000000001',
  revision: '9007199254740993',
  contentHash: 'a'.repeat(64),
  isDeleted: false,
  schId: '5',
  createTime: '2026-10-21 08:00:00',
};
const shRow: ManifestRow = { ...fcRow, isDeleted: true, createTime: null, retiredAt: '2026-11-01 00:00:00' };

describe('manifest lines', () => {
  it('format exactly, members in a fixed order, BIGINTs as digit strings, and parse back', () => {
    expect(formatManifestLine(fcRow)).toBe(
      `{"answerUuid":"0a0b0c0d-0000-4000-8000-000000000001","revision":"9007199254740993","contentHash":"${'a'.repeat(64)}","isDeleted":false,"schId":"5","createTime":"2026-10-21 08:00:00"}\n`,
    );
    expect(formatManifestLine(shRow)).toMatch(
      /"isDeleted":true,"schId":"5","createTime":null,"retiredAt":"2026-11-01 00:00:00"}\n$/,
    );
    expect(parseManifestLine(formatManifestLine(fcRow).trimEnd(), 'fc')).toEqual(fcRow);
    expect(parseManifestLine(formatManifestLine(shRow).trimEnd(), 'sh')).toEqual(shRow);
  });

  it('reads any valid JSON form of a row the same as the exact form fcctl writes (fast path and JSON path agree)', () => {
    const reordered = JSON.stringify({
      createTime: shRow.createTime,
      retiredAt: shRow.retiredAt,
      schId: shRow.schId,
      isDeleted: shRow.isDeleted,
      contentHash: shRow.contentHash,
      revision: shRow.revision,
      answerUuid: shRow.answerUuid,
    });
    expect(parseManifestLine(reordered, 'sh')).toEqual(shRow);
    expect(parseManifestLine(` ${JSON.stringify(fcRow, null, 1)} `, 'fc')).toEqual(fcRow);
    // an escaped uuid, a 19-digit revision: valid, read through JSON.parse
    expect(
      parseManifestLine(formatManifestLine(fcRow).trimEnd().replace('"answerUuid":"0', '"answerUuid":"\\u0030'), 'fc'),
    ).toEqual(fcRow);
    const big = { ...fcRow, revision: '9223372036854775807' };
    expect(parseManifestLine(formatManifestLine(big).trimEnd(), 'fc')).toEqual(big);
    const odd = { ...shRow, answerUuid: 'é,"x' };
    expect(parseManifestLine(formatManifestLine(odd).trimEnd(), 'sh')).toEqual(odd);
  });

  it.each([
    ['not JSON', '{"answerUuid":', 'fc', /not valid JSON/],
    ['empty', '', 'fc', /empty line/],
    ['array', '[]', 'fc', /not a JSON object/],
    ['extra member', JSON.stringify({ ...fcRow, x: 1 }), 'fc', /unexpected member "x"/],
    ['SH member in an FC manifest', JSON.stringify(shRow), 'fc', /unexpected member "retiredAt"/],
    ['missing retiredAt', JSON.stringify(fcRow), 'sh', /"retiredAt" is missing/],
    ['revision as a number', JSON.stringify({ ...fcRow, revision: 3 }), 'fc', /revision/],
    ['revision with a leading zero', JSON.stringify({ ...fcRow, revision: '03' }), 'fc', /revision/],
    ['revision beyond 64 bits', JSON.stringify({ ...fcRow, revision: '9223372036854775808' }), 'fc', /revision/],
    ['uppercase hash', JSON.stringify({ ...fcRow, contentHash: 'A'.repeat(64) }), 'fc', /contentHash/],
    ['isDeleted 0', JSON.stringify({ ...fcRow, isDeleted: 0 }), 'fc', /isDeleted/],
    ['school 0', JSON.stringify({ ...fcRow, schId: '0' }), 'fc', /schId/],
    ['time with T', JSON.stringify({ ...fcRow, createTime: '2026-10-21T08:00:00' }), 'fc', /createTime/],
    ['answerUuid too long', JSON.stringify({ ...fcRow, answerUuid: 'x'.repeat(37) }), 'fc', /answerUuid/],
  ] as const)('refuses %s', (_name, text, side, message) => {
    expect(() => parseManifestLine(text, side)).toThrow(message);
  });

  it('compares keys in UTF-8 byte order (code points), revisions as exact integers', () => {
    expect(compareKeys('a', 'b')).toBeLessThan(0);
    expect(compareKeys('ab', 'a')).toBeGreaterThan(0);
    expect(compareKeys('A', 'a')).toBeLessThan(0);
    // U+FF61 sorts before U+1F600 in UTF-8 (EF BD A1 < F0 9F 98 80), after it in UTF-16 units.
    expect(compareKeys('\uff61', '\u{1f600}')).toBeLessThan(0);
    expect('\uff61' < '\u{1f600}').toBe(false);
    expect(Buffer.compare(Buffer.from('\uff61'), Buffer.from('\u{1f600}'))).toBeLessThan(0);
    expect(compareRevisions('10', '9')).toBeGreaterThan(0);
    expect(compareRevisions('9007199254740993', '9007199254740992')).toBeGreaterThan(0);
    expect(compareRevisions('7', '7')).toBe(0);
  });
});

describe('shards', () => {
  it('parse i/n, 1-based, refusing the rest', () => {
    expect(parseShard('2/4')).toEqual({ index: 2, count: 4 });
    for (const bad of ['0/4', '5/4', '1/0', 'a/b', '1/5000', '1', '1/2/3', '-1/2']) expect(parseShard(bad)).toBeNull();
  });

  it('cover the key space once, in order: every key falls in exactly one shard', () => {
    for (const count of [1, 2, 3, 7, 16]) {
      const ranges = Array.from({ length: count }, (_, i) => shardRange({ index: i + 1, count }));
      expect(ranges[0]!.lower).toBeNull();
      expect(ranges.at(-1)!.upper).toBeNull();
      for (let i = 1; i < count; i++) expect(ranges[i]!.lower).toBe(ranges[i - 1]!.upper);
      const keys = [
        '00000000-0000',
        '0',
        '7fffffff-ffff',
        '80000000-0000',
        'ffffffff-ffff',
        'ABCDEF',
        'zzz',
        '',
        '\u{1f600}',
      ];
      for (const key of keys) {
        const hits = ranges.filter(
          (r) =>
            (r.lower === null || compareKeys(key, r.lower) >= 0) && (r.upper === null || compareKeys(key, r.upper) < 0),
        );
        expect(hits, `${key} in ${count} shards`).toHaveLength(1);
      }
    }
    expect(shardRange({ index: 2, count: 4 })).toEqual({ lower: '40000000', upper: '80000000' });
  });
});

describe('page SQL', () => {
  it('reads along the manifest index: equality on school and form, a range on answer_uuid, the index order', () => {
    const q = selectShManifestPage({
      schId: '5',
      formUuid: 'f',
      after: 'c',
      range: { lower: '4', upper: '8' },
      limit: 201,
    });
    expect(q.sql).toBe(
      'SELECT answer_uuid, answer_revision, content_hash, is_deleted, sch_id, create_time, retired_at FROM fc_answer_projection FORCE INDEX (idx_projection_manifest) WHERE sch_id = ? AND form_uuid = ? AND answer_uuid >= ? AND answer_uuid < ? AND answer_uuid > ? ORDER BY answer_uuid LIMIT ?',
    );
    expect(q.params).toEqual([5n, 'f', '4', '8', 'c', 201]);
    const f = selectFcManifestPage({ schId: '9223372036854775807', formUuid: 'f', after: null, limit: 11 });
    expect(f.sql).toMatch(
      /^SELECT answer_uuid, .* FROM answer FORCE INDEX \(idx_answer_manifest\) WHERE sch_id = \? AND form_uuid = \? ORDER BY answer_uuid LIMIT \?$/,
    );
    expect(f.sql).not.toMatch(/\bid\b,/);
    expect(f.params).toEqual([9223372036854775807n, 'f', 11]);
    expect(() => selectShManifestPage({ schId: '0', formUuid: 'f', after: null, limit: 1 })).toThrow(TypeError);
  });
});

describe('checkpoint helpers', () => {
  it('digest parameters with fc.canon.v1 (member order does not matter), default the checkpoint beside the output', () => {
    const p = {
      side: 'sh',
      database: 'h:3306/d',
      schId: '5',
      formUuid: 'f',
      shard: null,
      out: '/tmp/x.jsonl',
    } as const;
    const reordered = {
      out: '/tmp/x.jsonl',
      shard: null,
      formUuid: 'f',
      schId: '5',
      database: 'h:3306/d',
      side: 'sh',
    } as const;
    expect(paramsDigest(p)).toMatch(/^[0-9a-f]{64}$/);
    expect(paramsDigest(reordered)).toBe(paramsDigest(p));
    expect(paramsDigest({ ...p, shard: '1/2' })).not.toBe(paramsDigest(p));
    expect(defaultCheckpointPath('/data/fc.jsonl')).toBe('/data/fc.checkpoint.json');
    expect(defaultCheckpointPath('/data/fc.out')).toBe('/data/fc.out.checkpoint.json');
  });
});
