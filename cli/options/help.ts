// Help text: the top-level list of commands, and each command's usage, description, options.
import type { Command } from './command.js';

const TOP_DESCRIPTION = [
  'Provisions short-lived VMs on libvirt hosts from BullMQ jobs (docs/cli.md).',
];

function columns(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

export function topLevelHelp(commands: readonly Command[]): string[] {
  return [
    'usage: kvm2 <command> [options]',
    '',
    ...TOP_DESCRIPTION,
    '',
    'commands:',
    ...columns(commands.map((c) => [c.name, c.summary])),
    '',
    'Every command takes --config FILE (default: $KVM2_CONFIG, else one local host) and -h/--help.',
    "Run 'kvm2 <command> --help' for a command's options. KVM2_DEBUG=1 adds stack traces to errors.",
    'Exit status: 0 done, 1 failed, 2 bad command line, 130 interrupted.',
  ];
}

/** The help of a group of subcommands (`kvm2 config --help`). */
export function groupHelp(group: string, commands: readonly Command[]): string[] {
  return [
    `usage: kvm2 ${group} <subcommand> [options]`,
    '',
    'subcommands:',
    ...columns(commands.map((c) => [c.name.slice(group.length + 1), c.summary])),
  ];
}

/** A summary as the first sentence of a command's help. */
function sentence(summary: string): string {
  return `${summary.charAt(0).toUpperCase()}${summary.slice(1)}.`;
}

export function commandHelp(command: Command): string[] {
  const options = Object.entries(command.options).map(([name, spec]): [string, string] => {
    const flag = `--${name}${spec.type === 'string' ? ` ${spec.value ?? 'VALUE'}` : ''}`;
    const shown = spec.short === undefined ? flag : `-${spec.short}, ${flag}`;
    return [spec.multiple === true ? `${shown} ...` : shown, spec.description];
  });
  const positionals = (command.positionals ?? []).map((p): [string, string] => [
    p.name,
    p.description,
  ]);
  return [
    `usage: kvm2 ${command.usage}`,
    '',
    sentence(command.summary),
    ...(command.description.length > 0 ? ['', ...command.description] : []),
    ...(positionals.length > 0 ? ['', 'arguments:', ...columns(positionals)] : []),
    '',
    'options:',
    ...columns(options),
  ];
}
