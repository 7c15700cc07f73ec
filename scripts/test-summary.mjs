// Prints vitest's JSON results (one file per suite run) as the one closing line CI reads:
// `N passed, N failed`. Before it, the fault suite's totals (FCCTL_FAULT_TOTALS) when there are any.
// Every file named must exist: a suite run that wrote none (it crashed, or its Node would not
// install) counts as one failure.
import { existsSync, readFileSync } from 'node:fs';

const named = process.argv.slice(2);
const files = named.filter((f) => existsSync(f));
let passed = 0;
let failed = named.length - files.length;
let skipped = 0;
for (const f of named) if (!existsSync(f)) console.log(`${f}: no results (the suite did not run to its end)`);
if (named.length === 0) failed = 1;
for (const file of files) {
  let results;
  try {
    results = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    failed += 1;
    continue;
  }
  passed += results.numPassedTests ?? 0;
  // A file that failed outside its tests (did not load, or a beforeAll hook threw and its tests were
  // skipped) counts as a failure even though no test in it failed.
  const failedSuites = (results.testResults ?? []).filter(
    (r) => r.status === 'failed' && !(r.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
  failed += (results.numFailedTests ?? 0) + failedSuites;
  skipped += (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
}

// A step of scripts/test.sh around the suites that failed (FCCTL_SETUP_FAILED, one a line): one failure each.
for (const step of (process.env.FCCTL_SETUP_FAILED ?? '').split('\n').filter((l) => l.trim())) {
  console.log(`setup: ${step}`);
  failed += 1;
}

// The type check of src/ and test/ (scripts/test.sh) counts as one check that passed or failed.
if (process.env.FCCTL_TYPECHECK === 'passed') passed += 1;
if (process.env.FCCTL_TYPECHECK === 'failed') failed += 1;
if (process.env.FCCTL_LINT === 'passed') passed += 1;
if (process.env.FCCTL_LINT === 'failed') failed += 1;

const totalsFile = process.env.FCCTL_FAULT_TOTALS;
if (totalsFile && existsSync(totalsFile)) {
  const sum = {};
  let tests = 0;
  for (const line of readFileSync(totalsFile, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    tests += 1;
    for (const [k, v] of Object.entries(JSON.parse(line))) if (typeof v === 'number') sum[k] = (sum[k] ?? 0) + v;
  }
  console.log(
    `fault and bad-input totals (${tests} tests): ${Object.entries(sum)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
}
// CI reads the last line alone: skipped tests (there should be none) get a line of their own before it.
if (skipped) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
