// kvm2's instance states and the one table from libvirt's (state, reason) to them (SPEC §3).
// States and reasons: include/libvirt/libvirt-domain.h (virDomainState, virDomain*Reason).
// docs/states.md shows this table; a test keeps the two equal.

/**
 * What an upstream app needs to decide: wait (provisioning, stopping), use (running), leave
 * alone (paused, suspended: someone chose that), replace (stopped, crashed), or ask again
 * (unknown).
 */
export const INSTANCE_STATES = [
  'provisioning',
  'running',
  'paused',
  'suspended',
  'stopping',
  'stopped',
  'crashed',
  'unknown',
] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** virDomainState. */
export const DomainState = {
  NOSTATE: 0,
  RUNNING: 1,
  BLOCKED: 2,
  PAUSED: 3,
  SHUTDOWN: 4,
  SHUTOFF: 5,
  CRASHED: 6,
  PMSUSPENDED: 7,
} as const;
export type DomainStateName = keyof typeof DomainState;

export interface StateRow {
  readonly state: DomainStateName;
  /** The reason's number within its state, or '*' for every reason no other row names. */
  readonly reason: number | '*';
  /** The reason's name without VIR_DOMAIN_<STATE>_, e.g. STARTING_UP; 'any other' for '*'. */
  readonly reasonName: string;
  readonly kvm2: InstanceState;
  readonly why: string;
}

const row = (
  state: DomainStateName,
  reason: number | '*',
  reasonName: string,
  kvm2: InstanceState,
  why: string,
): StateRow => Object.freeze({ state, reason, reasonName, kvm2, why });

const ANY = 'any other';

export const STATE_TABLE: readonly StateRow[] = Object.freeze([
  row('NOSTATE', '*', ANY, 'unknown', 'libvirt itself does not know.'),
  row('RUNNING', 1, 'BOOTED', 'running', 'Started normally.'),
  row('RUNNING', 9, 'CRASHED', 'crashed', 'The guest panicked and was left running in that state.'),
  row('RUNNING', '*', ANY, 'running', 'Running (resumed, restored, woken, migrated).'),
  row('BLOCKED', '*', ANY, 'running', 'Running, waiting on a resource (Xen): still up.'),
  row('PAUSED', 1, 'USER', 'paused', 'An administrator paused it.'),
  row(
    'PAUSED',
    5,
    'IOERROR',
    'crashed',
    'Paused by a disk I/O error, often a full pool: not serving, not by choice.',
  ),
  row('PAUSED', 6, 'WATCHDOG', 'crashed', 'Paused by its watchdog: the guest hung.'),
  row('PAUSED', 8, 'SHUTTING_DOWN', 'stopping', 'Paused on its way down.'),
  row('PAUSED', 10, 'CRASHED', 'crashed', 'The guest panicked and was paused.'),
  row(
    'PAUSED',
    11,
    'STARTING_UP',
    'provisioning',
    'libvirt starts domains paused, then resumes them.',
  ),
  row(
    'PAUSED',
    13,
    'POSTCOPY_FAILED',
    'crashed',
    'A post-copy migration failed; the guest cannot resume.',
  ),
  row(
    'PAUSED',
    '*',
    ANY,
    'paused',
    'Paused for a save, dump, snapshot or migration, or by an API error.',
  ),
  row('SHUTDOWN', '*', ANY, 'stopping', 'The guest is shutting down.'),
  row('SHUTOFF', 1, 'SHUTDOWN', 'stopped', 'The guest shut itself down.'),
  row('SHUTOFF', 2, 'DESTROYED', 'stopped', 'Destroyed (forced off).'),
  row('SHUTOFF', 3, 'CRASHED', 'crashed', 'The guest crashed and was shut off.'),
  row('SHUTOFF', 5, 'SAVED', 'suspended', 'Saved to disk (managed save); starting it resumes.'),
  row('SHUTOFF', 6, 'FAILED', 'crashed', 'It failed to start.'),
  row('SHUTOFF', 8, 'DAEMON', 'crashed', 'libvirtd killed it while reconnecting after a restart.'),
  row(
    'SHUTOFF',
    '*',
    ANY,
    'stopped',
    'Off: never started since define, migrated away, or from a snapshot.',
  ),
  row('CRASHED', '*', ANY, 'crashed', 'The guest crashed (panicked).'),
  row('PMSUSPENDED', '*', ANY, 'suspended', 'The guest suspended itself (ACPI S3/S4).'),
]);

const STATE_NAMES = new Map<number, DomainStateName>(
  Object.entries(DomainState).map(([name, value]) => [value, name as DomainStateName]),
);

/** The table's row for a libvirt state and reason; undefined for a state libvirt may add later. */
export function stateRow(state: number, reason: number): StateRow | undefined {
  const name = STATE_NAMES.get(state);
  if (name === undefined) return undefined;
  return (
    STATE_TABLE.find((r) => r.state === name && r.reason === reason) ??
    STATE_TABLE.find((r) => r.state === name && r.reason === '*')
  );
}

/**
 * kvm2's state of a domain from `DomainGetState`'s (state, reason) and whether an address was
 * found. A running domain without an address is still `provisioning`: upstream cannot use it yet.
 */
export function mapDomainState(state: number, reason: number, hasAddress: boolean): InstanceState {
  const mapped = stateRow(state, reason)?.kvm2 ?? 'unknown';
  return mapped === 'running' && !hasAddress ? 'provisioning' : mapped;
}
