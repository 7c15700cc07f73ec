import { describe, expect, it } from 'vitest';
import type { ManifestRow } from '../../src/lib/manifest/row.js';
import { CATEGORIES, type Category, classify } from '../../src/lib/reconcile/diff/decide.js';

const TASK_START = '2026-11-30 01:00:00';
const fc = (revision: string, hash = 'h1', isDeleted = false): ManifestRow => ({
  answerUuid: 'a',
  revision,
  contentHash: hash,
  isDeleted,
  schId: '5',
  createTime: '2026-10-01 00:00:00',
});
const local = (
  revision: string,
  o: { hash?: string; isDeleted?: boolean; createTime?: string | null; retiredAt?: string | null } = {},
): ManifestRow => ({
  answerUuid: 'a',
  revision,
  contentHash: o.hash ?? 'h1',
  isDeleted: o.isDeleted ?? false,
  schId: '5',
  createTime: o.createTime === undefined ? '2026-10-01 00:00:01' : o.createTime,
  retiredAt: o.retiredAt ?? null,
});

describe('classify(fcRow, localRow, taskStart)', () => {
  // Every combination of: FC present/absent; local absent or present with revision lower/equal/higher,
  // hash same/other, isDeleted same/other, createTime null/before/equal/after the start, retired or not.
  const revisions = ['lower', 'equal', 'higher'] as const;
  const times = [null, '2026-11-29 23:59:59', TASK_START, '2026-11-30 01:00:01'] as const;
  const cases: Array<{ name: string; fc: ManifestRow | null; local: ManifestRow | null; expected: Category }> = [];
  cases.push({ name: 'FC only', fc: fc('3'), local: null, expected: 'MISSING_LOCAL' });
  for (const fcPresent of [true, false]) {
    for (const rev of revisions) {
      for (const sameHash of [true, false]) {
        for (const sameDeleted of [true, false]) {
          for (const createTime of times) {
            for (const retired of [false, true]) {
              const revision = rev === 'lower' ? '9' : rev === 'equal' ? '10' : '11';
              const l = local(revision, {
                hash: sameHash ? 'h1' : 'h2',
                isDeleted: !sameDeleted,
                createTime,
                retiredAt: retired ? '2026-11-01 00:00:00' : null,
              });
              const f = fcPresent ? fc('10') : null;
              let expected: Category;
              if (!fcPresent) {
                expected = retired
                  ? 'RETIRED'
                  : createTime === null
                    ? 'ABSENT_CREATE_TIME_NULL'
                    : createTime > TASK_START
                      ? 'ABSENT_CREATED_AFTER_TASK_START'
                      : 'ABSENT_AT_FC';
              } else if (retired) {
                expected = 'RETIRED_PRESENT_AT_FC';
              } else {
                expected =
                  rev === 'lower'
                    ? 'STALE_LOCAL'
                    : rev === 'higher'
                      ? 'LOCAL_AHEAD'
                      : sameHash && sameDeleted
                        ? 'IN_SYNC'
                        : 'HASH_CONFLICT';
              }
              cases.push({
                name: `fc ${fcPresent ? 'present' : 'absent'}, local rev ${rev}, hash ${sameHash ? 'same' : 'other'}, deleted ${sameDeleted ? 'same' : 'other'}, created ${createTime}, ${retired ? 'retired' : 'live'}`,
                fc: f,
                local: l,
                expected,
              });
            }
          }
        }
      }
    }
  }

  it.each(cases)('$name → $expected', ({ fc: f, local: l, expected }) => {
    expect(classify(f, l, TASK_START)).toBe(expected);
  });

  it('reaches every category, and only those of the closed set', () => {
    expect(new Set(cases.map((c) => c.expected))).toEqual(new Set(CATEGORIES));
  });

  it('a createTime equal to the task start is "not after" it: a candidate; one second later is not', () => {
    expect(classify(null, local('1', { createTime: TASK_START }), TASK_START)).toBe('ABSENT_AT_FC');
    expect(classify(null, local('1', { createTime: '2026-11-30 01:00:01' }), TASK_START)).toBe(
      'ABSENT_CREATED_AFTER_TASK_START',
    );
  });

  it('compares revisions exactly beyond 2^53 and by value, not as text', () => {
    expect(classify(fc('9007199254740993'), local('9007199254740992'), TASK_START)).toBe('STALE_LOCAL');
    expect(classify(fc('9'), local('10'), TASK_START)).toBe('LOCAL_AHEAD');
  });

  it('refuses two nulls', () => {
    expect(() => classify(null, null, TASK_START)).toThrow(TypeError);
  });
});
