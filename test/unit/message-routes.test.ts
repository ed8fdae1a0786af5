// The RPC client's routing of the daemon's MESSAGEs (src/libvirt/message-routes.ts): decoded
// once, handed to each subscriber, a broken body reported, a throwing subscriber kept apart.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/libvirt/errors.js';
import { MessageRoutes } from '../../src/libvirt/message-routes.js';
import {
  DomainEventCallbackLifecycle,
  encodeDomainEventCallbackLifecycleMsg,
  type DomainEventCallbackLifecycleMsg,
} from '../../src/libvirt/protocol.gen.js';
import { XdrWriter } from '../../src/libvirt/xdr.js';

const MESSAGE: DomainEventCallbackLifecycleMsg = {
  callbackID: 7,
  msg: { dom: { name: 'web-1', uuid: Buffer.alloc(16, 1), id: 3 }, event: 5, detail: 1 },
};

function body(message: DomainEventCallbackLifecycleMsg): Buffer {
  const w = new XdrWriter();
  encodeDomainEventCallbackLifecycleMsg(w, message);
  return w.finish();
}

describe('MessageRoutes', () => {
  it('hands a message to every subscriber of its procedure, and none once unsubscribed', () => {
    const routes = new MessageRoutes(undefined);
    const a: DomainEventCallbackLifecycleMsg[] = [];
    const b: DomainEventCallbackLifecycleMsg[] = [];
    const offA = routes.subscribe(DomainEventCallbackLifecycle, (m) => a.push(m));
    routes.subscribe(DomainEventCallbackLifecycle, (m) => b.push(m));
    expect(routes.deliver(DomainEventCallbackLifecycle.proc, body(MESSAGE))).toBeUndefined();
    expect(a).toEqual([MESSAGE]);
    expect(b).toEqual([MESSAGE]);
    offA();
    routes.deliver(DomainEventCallbackLifecycle.proc, body(MESSAGE));
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(2);
  });

  it('ignores a procedure nobody listens for', () => {
    const routes = new MessageRoutes(undefined);
    expect(routes.deliver(9999, Buffer.from('anything'))).toBeUndefined();
  });

  it('reports a body that does not decode, or has bytes left over, as a protocol error', () => {
    const routes = new MessageRoutes(undefined);
    routes.subscribe(DomainEventCallbackLifecycle, () => undefined);
    const whole = body(MESSAGE);
    expect(routes.deliver(DomainEventCallbackLifecycle.proc, whole.subarray(0, 10))).toBeInstanceOf(
      ProtocolError,
    );
    const longer = Buffer.concat([whole, Buffer.alloc(4)]);
    const err = routes.deliver(DomainEventCallbackLifecycle.proc, longer);
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err?.message).toContain('DomainEventCallbackLifecycle message');
  });

  it('keeps a subscriber that throws from the others', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) });
    const routes = new MessageRoutes(logger);
    const heard: number[] = [];
    routes.subscribe(DomainEventCallbackLifecycle, () => {
      throw new Error('subscriber bug');
    });
    routes.subscribe(DomainEventCallbackLifecycle, (m) => heard.push(m.msg.event));
    expect(routes.deliver(DomainEventCallbackLifecycle.proc, body(MESSAGE))).toBeUndefined();
    expect(heard).toEqual([5]);
    expect(lines.join('')).toContain('event handler threw');
  });
});
