// npm test after the build: eslint and vitest side by side. The integration tests spend most
// of their time waiting on daemons and guests; lint, niced, fills that idle CPU instead of
// adding its half-minute to the run. Lint's report comes after vitest's; the exit status is
// vitest's when it failed, else lint's. Arguments go to vitest.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const exitOf = (child) =>
  new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ? 1 : code)));

// At the lowest priority: lint takes only the CPU the tests leave idle, so it slows no test.
const lint = spawn('nice', ['-n', '19', bin('eslint'), '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
let lintReport = '';
lint.stdout.setEncoding('utf8').on('data', (chunk) => (lintReport += chunk));
lint.stderr.setEncoding('utf8').on('data', (chunk) => (lintReport += chunk));
const linted = exitOf(lint);

const vitestStatus = await exitOf(
  spawn(bin('vitest'), ['run', ...process.argv.slice(2)], { stdio: 'inherit' }),
);
const lintStatus = await linted;
process.stdout.write(`\n[lint] eslint . ${lintStatus === 0 ? 'passed' : 'failed'}\n${lintReport}`);
process.exit(vitestStatus !== 0 ? vitestStatus : lintStatus);
