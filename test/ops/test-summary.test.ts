import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

// scripts/test.sh's closing line is what CI reads: a step around the suites that failed (the main
// Node not installed, so the suites ran on the machine's own; a sql_mode not set) must be counted
// there, not only in the exit code (it said "21 passed, 0 failed" with exit 1).
const run = promisify(execFile);

async function summary(env: Record<string, string>, ...files: string[]) {
  const { PATH } = process.env;
  try {
    const r = await run(process.execPath, ['scripts/test-summary.mjs', ...files], {
      env: { PATH: PATH ?? '', ...env },
    });
    return { code: 0, lines: r.stdout.trimEnd().split('\n') };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, lines: e.stdout.trimEnd().split('\n') };
  }
}

test('a failed setup step is one failure in the closing line, named before it; none: the counts alone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fcctl-summary-'));
  const results = join(dir, 'results.json');
  writeFileSync(results, JSON.stringify({ numPassedTests: 5, numFailedTests: 0, testResults: [] }));
  const clean = await summary({}, results);
  expect(clean).toEqual({ code: 0, lines: ['5 passed, 0 failed'] });

  const failed = await summary(
    { FCCTL_SETUP_FAILED: 'Node 99 could not be installed: the suites ran on v20.19.5\n' },
    results,
  );
  expect(failed.code).toBe(1);
  expect(failed.lines).toEqual([
    'setup: Node 99 could not be installed: the suites ran on v20.19.5',
    '5 passed, 1 failed',
  ]);
});
