import { describe, expect, it } from 'vitest';
import { sidesOf, summarizeInit } from '../../src/lib/db/init.js';
import type { InitResult } from '../../src/lib/db/schema.js';

const side = (fields: Partial<InitResult>): InitResult => ({
  side: 'fc',
  created: [],
  existing: [],
  indexesAdded: [],
  columnsAdded: [],
  versionRecorded: false,
  markedDev: false,
  ...fields,
});

describe('db init decisions (pure)', () => {
  it.each([
    { side: 'fc', want: ['fc'] },
    { side: 'sh', want: ['sh'] },
    { side: 'all', want: ['fc', 'sh'] },
  ])('--side $side → $want', ({ side: s, want }) => {
    expect(sidesOf(s)).toEqual(want);
  });
  it.each([
    {
      name: 'nothing to do (a second run)',
      results: [side({ existing: ['answer'] }), side({ side: 'sh', existing: ['x'] })],
      want: { created: 0, changed: false },
    },
    {
      name: 'tables created on both sides',
      results: [side({ created: ['a', 'b'] }), side({ side: 'sh', created: ['c'] })],
      want: { created: 3, changed: true },
    },
    {
      name: 'only the version recorded',
      results: [side({ versionRecorded: true })],
      want: { created: 0, changed: true },
    },
    {
      name: 'only an index added (a version-4 database)',
      results: [side({ indexesAdded: ['answer_delivery.idx_delivery_state_error'] })],
      want: { created: 0, changed: true },
    },
    { name: 'only marked dev', results: [side({ markedDev: true })], want: { created: 0, changed: true } },
    { name: 'no side', results: [], want: { created: 0, changed: false } },
  ])('$name', ({ results, want }) => {
    expect(summarizeInit(results)).toEqual(want);
  });
});
