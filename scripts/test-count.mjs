// Reads vitest's JSON report and prints the count line CI reads: `N passed, N failed`, last.
// A file whose hooks failed (a beforeAll, say) reports its tests as skipped; they count as
// failed here, since none of them ran. Skipped tests elsewhere are printed on the line before.
// Usage: node scripts/test-count.mjs REPORT [EXIT_STATUS_OF_THE_TEST_COMMAND]
import { readFileSync } from 'node:fs';

const [reportPath = '.cache/vitest-results.json', status = '0'] = process.argv.slice(2);
let report;
try {
  report = JSON.parse(readFileSync(reportPath, 'utf8'));
} catch {
  console.log(`no test report at ${reportPath}: the test command failed before vitest ran`);
  console.log('0 passed, 1 failed');
  process.exit(0);
}

const notRun = new Set(['skipped', 'pending', 'todo']);
let failed = report.numFailedTests;
let skipped = 0;
for (const file of report.testResults) {
  const unrun = file.assertionResults.filter((t) => notRun.has(t.status)).length;
  if (file.status === 'failed') failed += unrun;
  else skipped += unrun;
}
// A file that fails to load fails no test; it still fails the run, as does a non-zero exit.
if (failed === 0 && (report.numFailedTestSuites > 0 || status !== '0')) {
  failed = Math.max(1, report.numFailedTestSuites);
}
if (skipped > 0) console.log(`${skipped} skipped`);
console.log(`${report.numPassedTests} passed, ${failed} failed`);
