// Domain events (libvirt's virConnectDomainEventRegisterAny): the daemon is asked for one kind
// of event for every domain (CONNECT_DOMAIN_EVENT_CALLBACK_REGISTER_ANY gives a callback id),
// then sends each as a MESSAGE naming that id, until it is deregistered or the link ends. A
// subscription belongs to one connection: after a re-dial it must be made again.
import type { LibvirtConnection } from './connection.js';
import { ProtocolError } from './errors.js';
import type { Procedure } from './procedure.js';
import {
  ConnectDomainEventCallbackDeregisterAny,
  ConnectDomainEventCallbackRegisterAny,
  DomainEventCallbackAgentLifecycle,
  DomainEventCallbackLifecycle,
  type DomainEventCallbackAgentLifecycleMsg,
  type DomainEventLifecycleMsg,
} from './protocol.gen.js';
import type { CallOptions } from './rpc-client.js';

/** virDomainEventID values kvm2 registers for. */
export const DomainEventId = Object.freeze({ LIFECYCLE: 0, AGENT_LIFECYCLE: 18 });

/** virDomainEventType: what a lifecycle event says happened. */
export const LifecycleEvent = Object.freeze({
  DEFINED: 0,
  UNDEFINED: 1,
  STARTED: 2,
  SUSPENDED: 3,
  RESUMED: 4,
  STOPPED: 5,
  SHUTDOWN: 6,
  PMSUSPENDED: 7,
  CRASHED: 8,
});

/** virConnectDomainEventAgentLifecycleState. */
export const AgentLifecycleState = Object.freeze({ CONNECTED: 1, DISCONNECTED: 2 });

export interface DomainEventSubscription {
  /** The daemon's id for the registration it shares with this connection's other subscribers. */
  readonly callbackId: number;
  /** Asks the daemon to stop sending it (a no-op once the link is down) and stops listening. */
  close(options?: CallOptions): Promise<void>;
}

/**
 * One registration with the daemon per connection and event kind: libvirtd refuses a second
 * one for the same kind ("event callback already tracked"), so subscribers share it, as
 * libvirt's own remote driver does. The last to close deregisters.
 */
interface Registration {
  readonly ready: Promise<number>;
  readonly handlers: Set<(message: { callbackID: number }) => void>;
  readonly unsubscribe: () => void;
}

/**
 * Events held while a registration's reply is awaited. Those for our id can only be the few the
 * daemon queued between registering and replying; a thousand (some 100 KiB) means a daemon
 * sending what we never asked for. The link is then dropped rather than events silently lost:
 * DomainEventStream dials again and its owner catches up.
 */
const EARLY_EVENTS_MAX = 1000;

const registrations = new WeakMap<LibvirtConnection, Map<number, Registration>>();

function register<M extends { callbackID: number }>(
  conn: LibvirtConnection,
  eventID: number,
  proc: Procedure<void, M>,
  options: CallOptions | undefined,
): Registration {
  let byEvent = registrations.get(conn);
  if (byEvent === undefined) {
    byEvent = new Map();
    registrations.set(conn, byEvent);
  }
  const existing = byEvent.get(eventID);
  if (existing !== undefined) return existing;
  // Listening starts before the registration: an event can follow its reply in the same read,
  // before the id is known here. Those wait until it is.
  let callbackId: number | undefined;
  const early: M[] = [];
  const handlers = new Set<(message: { callbackID: number }) => void>();
  // Each subscriber on its own, as the RPC client does for the ones it calls: one that throws
  // is logged and the others still hear the event, and an early one delivered below cannot
  // turn into the registration's failure.
  const deliver = (message: M): void => {
    for (const handler of [...handlers]) {
      try {
        handler(message);
      } catch (err) {
        conn.logger?.warn({ err, event: proc.name }, 'event handler threw');
      }
    }
  };
  const unsubscribe = conn.subscribe(proc, (message) => {
    if (callbackId !== undefined) {
      if (message.callbackID === callbackId) deliver(message);
    } else if (early.push(message) > EARLY_EVENTS_MAX) {
      early.length = 0;
      conn.destroy(
        new ProtocolError(`${proc.name}: more than ${EARLY_EVENTS_MAX} events before registering`),
      );
    }
  });
  const ready = conn
    .call(ConnectDomainEventCallbackRegisterAny, { eventID, dom: null }, options)
    .then(({ callbackID }) => {
      callbackId = callbackID;
      for (const message of early.splice(0))
        if (message.callbackID === callbackID) deliver(message);
      return callbackID;
    });
  const registration: Registration = { ready, handlers, unsubscribe };
  byEvent.set(eventID, registration);
  ready.catch(() => {
    unsubscribe();
    if (byEvent.get(eventID) === registration) byEvent.delete(eventID);
  });
  return registration;
}

async function subscribeAny<M extends { callbackID: number }, E>(
  conn: LibvirtConnection,
  eventID: number,
  proc: Procedure<void, M>,
  unwrap: (message: M) => E,
  handler: (event: E) => void,
  options?: CallOptions,
): Promise<DomainEventSubscription> {
  const registration = register(conn, eventID, proc, options);
  const mine = (message: { callbackID: number }): void => handler(unwrap(message as M));
  registration.handlers.add(mine);
  let callbackId: number;
  try {
    callbackId = await registration.ready;
  } catch (err) {
    registration.handlers.delete(mine);
    throw err;
  }
  let closed = false;
  return {
    callbackId,
    async close(closeOptions) {
      if (closed) return;
      closed = true;
      registration.handlers.delete(mine);
      if (registration.handlers.size > 0) return;
      registration.unsubscribe();
      registrations.get(conn)?.delete(eventID);
      if (conn.isDown) return;
      await conn.call(
        ConnectDomainEventCallbackDeregisterAny,
        { callbackID: callbackId },
        closeOptions,
      );
    },
  };
}

/** Every domain's lifecycle events (started, suspended, stopped…) on this connection. */
export function subscribeLifecycle(
  conn: LibvirtConnection,
  handler: (event: DomainEventLifecycleMsg) => void,
  options?: CallOptions,
): Promise<DomainEventSubscription> {
  return subscribeAny(
    conn,
    DomainEventId.LIFECYCLE,
    DomainEventCallbackLifecycle,
    (m) => m.msg,
    handler,
    options,
  );
}

/** Every domain's guest-agent lifecycle: the agent connected or disconnected. */
export function subscribeAgentLifecycle(
  conn: LibvirtConnection,
  handler: (event: Omit<DomainEventCallbackAgentLifecycleMsg, 'callbackID'>) => void,
  options?: CallOptions,
): Promise<DomainEventSubscription> {
  return subscribeAny(
    conn,
    DomainEventId.AGENT_LIFECYCLE,
    DomainEventCallbackAgentLifecycle,
    ({ dom, state, reason }) => ({ dom, state, reason }),
    handler,
    options,
  );
}
