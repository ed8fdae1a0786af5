// Reads vitest's JSON reports and prints the count line CI reads: `N passed, N failed`, last.
// The reports are npm test's: the whole suite (.cache/vitest-results.json) and the unit suite
// on Node 22 (.cache/vitest-unit-node22.json), summed. A file whose hooks failed (a beforeAll,
// say) reports its tests as skipped; they count as failed here, since none of them ran. Skipped
// tests elsewhere are printed on the line before. A report that is missing counts as a failure.
// Usage: node scripts/test-count.mjs [--status EXIT_STATUS_OF_THE_TEST_COMMAND] [REPORT...]
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
let status = '0';
if (args[0] === '--status') {
  status = args[1] ?? '1';
  args.splice(0, 2);
}
const reports =
  args.length > 0 ? args : ['.cache/vitest-results.json', '.cache/vitest-unit-node22.json'];

const notRun = new Set(['skipped', 'pending', 'todo']);
let passed = 0;
let failed = 0;
let skipped = 0;
let failedFiles = 0;
for (const path of reports) {
  let report;
  try {
    report = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    console.log(`no test report at ${path}: the test command failed before that vitest run`);
    failed += 1;
    continue;
  }
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  failedFiles += report.numFailedTestSuites;
  for (const file of report.testResults) {
    const unrun = file.assertionResults.filter((t) => notRun.has(t.status)).length;
    if (file.status === 'failed') failed += unrun;
    else skipped += unrun;
  }
}
// A file that fails to load fails no test; it still fails the run, as does a non-zero exit.
if (failed === 0 && (failedFiles > 0 || status !== '0')) failed = Math.max(1, failedFiles);
if (skipped > 0) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
