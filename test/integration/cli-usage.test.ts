// The kvm2 CLI's help and usage mistakes, and `config check`, as an operator sees them: exit
// status, standard output, standard error. The binary once per kind of run, for its wiring
// (a child from the test build), and the variants through the same entry, runCli, in-process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../cli/commands/index.js';
import { cliRig, inProcess, kvm2, type Run } from '../harness/cli-rig.js';

const rig = cliRig();
const { writeJson } = rig;
let goodConfig: string;

beforeAll(async () => {
  ({ goodConfig } = await rig.start());
}, 60_000);

afterAll(() => rig.stop());

describe('help and usage', () => {
  it('answers --help for every command with its usage and every option, status 0', async () => {
    // The binary once, for its wiring; the rest in-process through the same entry (runCli):
    // help touches nothing outside, and a child costs a second or more to start.
    const binary = await kvm2(['--help']);
    expect(binary).toMatchObject({ code: 0, stderr: '' });
    for (const c of COMMANDS) expect(binary.stdout).toContain(`  ${c.name}`);
    for (const c of COMMANDS) {
      const run = await inProcess([...c.name.split(' '), '--help']);
      expect(run.code, c.name).toBe(0);
      expect(run.stdout).toContain(`usage: kvm2 ${c.name}`);
      for (const option of Object.keys(c.options)) expect(run.stdout).toContain(`--${option}`);
      expect(run.stdout).toContain('-h, --help');
    }
  }, 60_000);

  it('refuses bad command lines with status 2, naming the problem', async () => {
    const binary = await kvm2(['list', '--tag', 't', '--colour']);
    expect(binary).toMatchObject({ code: 2, stdout: '' });
    expect(binary.stderr).toBe(
      "kvm2: unknown option '--colour' for 'kvm2 list'\n" +
        'usage: kvm2 list --tag T [--json]\n' +
        "Run 'kvm2 list --help' for details.\n",
    );
    const cases: [string[], string][] = [
      [['frobnicate'], "unknown command 'frobnicate'"],
      [['creat'], "unknown command 'creat' (did you mean 'create'?)"],
      [['config', 'chek'], "unknown subcommand 'chek' for 'kvm2 config'"],
      [['create', '--host', 'h1', '--image', 'tiny'], 'missing required option --name'],
      [
        ['create', '--host', 'h1', '--zone', 'z', '--name', 'n', '--image', 'tiny'],
        'name exactly one of --host and --zone',
      ],
      [['create', '--name'], 'option --name needs a value'],
      [['create', '--name', '--host', 'h1'], 'option --name needs a value'],
      [
        ['create', '--zone', 'z', '--name', 'n', '--image', 'i', '--vcpus', '1.5'],
        'option --vcpus must be a whole number',
      ],
      [['list', '--tag', 'a', '--tag', 'b'], 'option --tag is given more than once'],
      [['list', '--json=yes', '--tag', 'a'], 'option --json takes no value'],
      [['get'], 'missing argument ID'],
      [['get', 'h1/a', 'h1/b'], "unexpected argument 'h1/b'"],
      [['delete', 'no-slash'], 'ID: instance id "no-slash" is not <host>/<name>'],
      [
        ['gc', '--config', goodConfig, '--tag', 't', '--grace', '5x'],
        "option --grace must be a duration like 30s, 10m, 2h or 1d, got '5x'",
      ],
      [['gc', '--tag', 't', '--keep', 'not-an-id'], '--keep: instance id "not-an-id"'],
      [['results', '--count', 'many'], 'option --count must be a whole number'],
      [['results', '--from', 'yesterday'], 'option --from must be a stream id'],
    ];
    for (const [args, message] of cases) {
      const run = await inProcess(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.split('\n')[0]).toContain(`kvm2: ${message}`);
      expect(run.stderr).toMatch(/\nRun 'kvm2 [a-z ]*--help' for details\.\n$/);
    }
  });
});

describe('config check', () => {
  it('summarises a valid file without the Redis password, and names every bad path', async () => {
    const withPassword = await writeJson('password.json', {
      redis: { url: 'redis://kvm2:hunter2-sentinel@redis.internal:6380/2' },
      hosts: [{ name: 'hv1', uri: 'qemu:///system', network: 'default', zone: 'rack-a' }],
    });
    const bad = await writeJson('bad.json', {
      hosts: [{ name: 'hv1', uri: 'qemu+tls://hv1/system', network: 'default' }],
      images: { x: { url: 'ftp://example/x' } },
    });
    const [ok, okJson, invalid] = await Promise.all([
      kvm2(['config', 'check', '--config', withPassword]),
      inProcess(['config', 'check', '--json'], { KVM2_CONFIG: withPassword }),
      kvm2(['config', 'check', '--config', bad]),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('redis://***:***@redis.internal:6380/2');
    expect(ok.stdout).toMatch(/^hv1\s+rack-a\s+default\s+default/m);
    expect(okJson.code).toBe(0);
    expect(JSON.parse(okJson.stdout)).toMatchObject({
      valid: true,
      file: withPassword,
      hosts: [{ name: 'hv1', zone: 'rack-a' }],
    });
    for (const run of [ok, okJson]) expect(run.stdout + run.stderr).not.toContain('hunter2');
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toContain(`kvm2: invalid configuration in ${bad}`);
    expect(invalid.stderr).toContain('kvm2.hosts[0].uri: ');
    expect(invalid.stderr).toContain('kvm2.images.x.url: ');
  }, 60_000);
});

/** A usage mistake as the operator sees it: status 2, nothing on stdout, the message first. */
function expectUsage(run: Run, message: string, what: string): void {
  expect(run.code, what).toBe(2);
  expect(run.stdout, what).toBe('');
  expect(run.stderr.split('\n')[0], what).toContain(`kvm2: ${message}`);
  expect(run.stderr, what).toMatch(/\nRun 'kvm2 [a-z ]*--help' for details\.\n$/);
}

describe('values that name nothing, or that no job takes', () => {
  it('refuses an empty --config instead of falling back to the embedded default', async () => {
    // KVM2_CONFIG names a good file: an empty --config must not mean "no --config" either.
    const env = { KVM2_CONFIG: goodConfig };
    const binary = await kvm2(['config', 'check', '--config='], env);
    expectUsage(binary, 'option --config', 'binary --config=');
    expect(binary.stderr).not.toContain('embedded default');
    for (const args of [
      ['config', 'check', '--config', ''],
      ['config', 'check', '--json', '--config='],
      ['list', '--tag', 't', '--config='],
    ]) {
      expectUsage(await inProcess(args, env), 'option --config', args.join(' '));
    }
  });

  it('refuses an empty list rather than widen it to every host', async () => {
    // Read as no option, `--hosts ""` would serve every host: a worker would start (the
    // binary's, never one in this process).
    const workers = await Promise.all([
      kvm2(['worker', '--config', goodConfig, '--hosts', '']),
      kvm2(['worker', '--config', goodConfig, '--hosts', ',']),
    ]);
    for (const run of workers) expectUsage(run, 'option --hosts', 'worker --hosts');
    const cases: [string[], string][] = [
      [['check', '--config', goodConfig, '--host='], 'option --host'],
      [['check', '--config', goodConfig, '--host', ' , '], 'option --host'],
      [['check', '--config', goodConfig, '--host', 'h1', '--host', ''], 'option --host'],
      [['gc', '--config', goodConfig, '--tag', 't', '--keep='], 'option --keep'],
    ];
    for (const [args, message] of cases) {
      expectUsage(await inProcess(args), message, args.join(' '));
    }
  }, 60_000);

  it('names the flag, not the job field, when a value is one no job takes', async () => {
    const create = ['create', '--config', goodConfig];
    const binary = await kvm2([...create, '--host', 'h1', '--name', 'Bad_Name', '--image', 'tiny']);
    expect(binary).toMatchObject({ code: 2, stdout: '' });
    expect(binary.stderr).toBe(
      'kvm2: option --name must be a DNS label: a-z, 0-9 and dashes, 1 to 63, no dash at the ends\n' +
        'usage: kvm2 create (--host H | --zone Z) --name N --image I [options]\n' +
        "Run 'kvm2 create --help' for details.\n",
    );
    const cases: [string[], string][] = [
      [[...create, '--zone', 'Rack_A', '--name', 'a', '--image', 'tiny'], 'option --zone must'],
      [
        [...create, '--host', 'h1', '--name', 'a', '--image', 'tiny', '--vcpus', '300'],
        'option --vcpus must be at most 255',
      ],
      [
        [...create, '--host', 'h1', '--name', 'a', '--image', 'tiny', '--disk-gib', '5000'],
        'option --disk-gib must be at most 4 TiB',
      ],
      [
        [...create, '--host', 'h1', '--name', 'a', '--image', 'tiny', '--tag', 'ci\u0007'],
        'option --tag must not contain control characters',
      ],
      [
        ['gc', '--config', goodConfig, '--tag', 'ci', '--grace', '99999999999999d'],
        'option --grace',
      ],
      [
        ['gc', '--config', goodConfig, '--tag', 't'.repeat(254)],
        'option --tag must be at most 253 characters',
      ],
    ];
    for (const [args, message] of cases) {
      const run = await inProcess(args);
      expectUsage(run, message, args.join(' ').slice(0, 120));
      expect(run.stderr).not.toContain('job.');
    }
  });
});
