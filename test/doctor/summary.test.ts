import { describe, expect, it } from 'vitest';
import { type CheckResult, summarizeDoctor } from '../../src/lib/doctor/decide.js';

const line = (status: CheckResult['status']): CheckResult => ({ check: status, status, detail: '' });

describe('summarizeDoctor (pure)', () => {
  it.each([
    { name: 'no check', results: [], want: { exitCode: 0, ok: 0, warn: 0, fail: 0, skipped: 0 } },
    { name: 'all ok', results: [line('ok'), line('ok')], want: { exitCode: 0, ok: 2, warn: 0, fail: 0, skipped: 0 } },
    {
      name: 'warnings and skips are no failure',
      results: [line('warn'), line('skipped'), line('ok')],
      want: { exitCode: 0, ok: 1, warn: 1, fail: 0, skipped: 1 },
    },
    {
      name: 'one failed check is exit 3',
      results: [line('ok'), line('fail'), line('warn')],
      want: { exitCode: 3, ok: 1, warn: 1, fail: 1, skipped: 0 },
    },
    {
      name: 'every status counted',
      results: [line('fail'), line('fail'), line('skipped'), line('skipped'), line('skipped')],
      want: { exitCode: 3, ok: 0, warn: 0, fail: 2, skipped: 3 },
    },
  ])('$name', ({ results, want }) => {
    expect(summarizeDoctor(results)).toEqual(want);
  });
  it('keys in the order the summary line prints them', () => {
    expect(Object.keys(summarizeDoctor([]))).toEqual(['exitCode', 'ok', 'warn', 'fail', 'skipped']);
  });
});
