// npm test: the type check (tsc), lint (eslint) and the tests (vitest) side by side, then the
// unit suite once more on Node.js 22 (the oldest line kvm2 supports; `scripts/node-runtime.sh`
// installs it at /opt/kvm2/node-22, KVM2_NODE22 names another). The integration tests spend
// most of their time waiting on daemons and guests; tsc, eslint and the Node 22 unit run,
// niced, fill that idle CPU instead of adding their minute to the run. Their reports follow
// vitest's; the run fails when any of them does (vitest's status first). Arguments go to
// vitest, and then only vitest runs.
import { existsSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const exitOf = (child) =>
  new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ? 1 : code)));
const NODE22 = process.env['KVM2_NODE22'] ?? '/opt/kvm2/node-22/bin/node';
const NODE22_REPORT = '.cache/vitest-unit-node22.json';

/** A check at the lowest priority, its output kept for the end. */
function check(label, command, args, env = process.env) {
  const child = spawn('nice', ['-n', '19', command, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let report = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (report += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (report += chunk));
  return exitOf(child).then((status) => ({ label, status, report }));
}

/** The unit project on Node 22, its JSON report beside the main one (scripts/test-count.mjs). */
function unitOnNode22() {
  if (!existsSync(NODE22)) {
    const report = `no Node.js 22 at ${NODE22}: \`npm run setup\` installs it (or set KVM2_NODE22)\n`;
    return Promise.resolve({ label: 'unit on node 22', status: 1, report });
  }
  const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
  // Its own bin directory first, so that whatever a unit test starts as `node` is 22 as well.
  const env = {
    ...process.env,
    PATH: `${NODE22.replace(/\/node$/, '')}:${process.env['PATH']}`,
    KVM2_VITEST_REPORT: NODE22_REPORT,
  };
  return check('unit on node 22', NODE22, [vitest, 'run', '--project', 'unit'], env).then(
    (result) => {
      const version = execFileSync(NODE22, ['--version'], { encoding: 'utf8' }).trim();
      // A passing run prints its summary only; a failing one, everything.
      const lines = result.report.trimEnd().split('\n');
      const shown = result.status === 0 ? lines.slice(-6) : lines;
      return { ...result, label: `unit on node ${version}`, report: `${shown.join('\n')}\n` };
    },
  );
}

const vitestArgs = process.argv.slice(2);
const whole = vitestArgs.length === 0;
console.log(
  `[node] ${process.version} runs the suite${whole ? `; the unit suite also on ${NODE22}` : ''}`,
);

// One after the other: together they would take both cores from the tests at the start.
const checks = (async () => {
  const results = [
    await check('typecheck', process.execPath, [bin('tsc'), '-p', 'tsconfig.json', '--noEmit']),
  ];
  results.push(await check('lint', process.execPath, [bin('eslint'), '.']));
  if (whole) results.push(await unitOnNode22());
  return results;
})();

const vitestStatus = await exitOf(
  spawn(process.execPath, [bin('vitest'), 'run', ...vitestArgs], { stdio: 'inherit' }),
);
let status = vitestStatus;
for (const { label, status: checkStatus, report } of await checks) {
  process.stdout.write(`\n[${label}] ${checkStatus === 0 ? 'passed' : 'failed'}\n${report}`);
  if (status === 0) status = checkStatus;
}
process.exit(status);
