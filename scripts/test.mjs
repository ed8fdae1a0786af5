// npm test: the type check (tsc), lint (eslint) and the tests (vitest) side by side. The
// integration tests spend most of their time waiting on daemons and guests; tsc and eslint,
// niced, fill that idle CPU instead of adding their 45 s to the run. Their reports follow
// vitest's; the run fails when any of the three does (vitest's status first). Arguments go
// to vitest.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const exitOf = (child) =>
  new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ? 1 : code)));

/** A check at the lowest priority, its output kept for the end. */
function check(label, command, args) {
  const child = spawn('nice', ['-n', '19', bin(command), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let report = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (report += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (report += chunk));
  return exitOf(child).then((status) => ({ label, status, report }));
}

// One after the other: together they would take both cores from the tests at the start.
const checks = check('typecheck', 'tsc', ['-p', 'tsconfig.json', '--noEmit']).then(
  async (typecheck) => [typecheck, await check('lint', 'eslint', ['.'])],
);

const vitestStatus = await exitOf(
  spawn(bin('vitest'), ['run', ...process.argv.slice(2)], { stdio: 'inherit' }),
);
let status = vitestStatus;
for (const { label, status: checkStatus, report } of await checks) {
  process.stdout.write(`\n[${label}] ${checkStatus === 0 ? 'passed' : 'failed'}\n${report}`);
  if (status === 0) status = checkStatus;
}
process.exit(status);
