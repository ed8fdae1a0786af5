// The names of libvirt's lifecycle events and their details (include/libvirt/libvirt-domain.h,
// virDomainEventType and virDomainEvent<Type>DetailType, libvirt 9.0.0), lower-cased the way
// kvm2 publishes them: `stopped`/`destroyed`. A number a later libvirt adds is named by its value.

const EVENTS: readonly (readonly [event: string, details: readonly string[]])[] = [
  ['defined', ['added', 'updated', 'renamed', 'from_snapshot']],
  ['undefined', ['removed', 'renamed']],
  ['started', ['booted', 'migrated', 'restored', 'from_snapshot', 'wakeup']],
  [
    'suspended',
    [
      'paused',
      'migrated',
      'ioerror',
      'watchdog',
      'restored',
      'from_snapshot',
      'api_error',
      'postcopy',
      'postcopy_failed',
    ],
  ],
  ['resumed', ['unpaused', 'migrated', 'from_snapshot', 'postcopy', 'postcopy_failed']],
  ['stopped', ['shutdown', 'destroyed', 'crashed', 'migrated', 'saved', 'failed', 'from_snapshot']],
  ['shutdown', ['finished', 'guest', 'host']],
  ['pmsuspended', ['memory', 'disk']],
  ['crashed', ['panicked', 'crashloaded']],
];

/** `{ event: 'stopped', detail: 'destroyed' }` for (5, 1); unknown numbers as `event-9`. */
export function lifecycleEventName(
  event: number,
  detail: number,
): { readonly event: string; readonly detail: string } {
  const known = EVENTS[event];
  if (known === undefined) return { event: `event-${event}`, detail: `detail-${detail}` };
  return { event: known[0], detail: known[1][detail] ?? `detail-${detail}` };
}

/** virConnectDomainEventAgentLifecycleReason. */
const AGENT_REASONS = ['unknown', 'domain_started', 'channel'];

/** `{ event: 'agent-connected', detail: 'channel' }` for the agent's (state, reason). */
export function agentEventName(
  state: number,
  reason: number,
): { readonly event: string; readonly detail: string } {
  const name = state === 1 ? 'connected' : state === 2 ? 'disconnected' : `state-${state}`;
  return { event: `agent-${name}`, detail: AGENT_REASONS[reason] ?? `reason-${reason}` };
}
