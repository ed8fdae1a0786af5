// The daemon's MESSAGEs (events: type MESSAGE, serial 0, LIBVIRT-RPC-FACTS §1), by procedure:
// what each is decoded with and who hears it. Registering for an event with the daemon is
// domain-events.ts's; this only routes what arrives.
import type { Logger } from 'pino';
import { ProtocolError } from './errors.js';
import type { Procedure } from './procedure.js';
import { XdrReader } from './xdr.js';

interface Route {
  readonly proc: Procedure<void, unknown>;
  readonly handlers: Set<(message: unknown) => void>;
}

export class MessageRoutes {
  readonly #routes = new Map<number, Route>();

  constructor(private readonly logger: Logger | undefined) {}

  subscribe<M>(proc: Procedure<void, M>, handler: (message: M) => void): () => void {
    let route = this.#routes.get(proc.proc);
    if (route === undefined) {
      route = { proc, handlers: new Set() };
      this.#routes.set(proc.proc, route);
    }
    const h = handler as (message: unknown) => void;
    route.handlers.add(h);
    return () => {
      route.handlers.delete(h);
      if (route.handlers.size === 0 && this.#routes.get(proc.proc) === route) {
        this.#routes.delete(proc.proc);
      }
    };
  }

  /**
   * Decodes the message and hands it to its subscribers. Returns a ProtocolError when the body
   * does not decode (the link is then not to be trusted); a subscriber that throws is logged
   * and the others still hear the message.
   */
  deliver(proc: number, payload: Buffer): ProtocolError | undefined {
    const route = this.#routes.get(proc);
    if (route === undefined) return undefined; // an event nobody here listens for (any more)
    let message: unknown;
    try {
      const r = new XdrReader(payload);
      message = route.proc.decode(r);
      r.expectEnd(`${route.proc.name} message`);
    } catch (err) {
      return new ProtocolError(`${route.proc.name} message: ${(err as Error).message}`);
    }
    for (const handler of [...route.handlers]) {
      try {
        handler(message);
      } catch (err) {
        this.logger?.warn({ err, event: route.proc.name }, 'event handler threw');
      }
    }
    return undefined;
  }
}
