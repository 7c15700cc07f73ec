// Prints vitest's JSON results as the one closing line CI reads: `N passed, N failed`.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.test-results.json';
let results;
try {
  results = JSON.parse(readFileSync(file, 'utf8'));
} catch {
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const passed = results.numPassedTests ?? 0;
// A file that failed outside its tests (did not load, or a beforeAll hook threw and its tests were
// skipped) counts as a failure even though no test in it failed.
const failedSuites = (results.testResults ?? []).filter(
  (r) => r.status === 'failed' && !(r.assertionResults ?? []).some((a) => a.status === 'failed'),
).length;
const failed = (results.numFailedTests ?? 0) + failedSuites;
const skipped = (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
