// Every RPC is one span `kvm2.<Procedure>` under the caller's span, and one debug log line
// `libvirt call` with host, procedure, duration and outcome.
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { ConnectGetLibVersion, DomainLookupByName } from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { memoryLogger, memoryTracing } from '../harness/telemetry.js';

const { exporter, tracerProvider: provider, tracer } = memoryTracing('test');
const contextManager = new AsyncLocalStorageContextManager();
const { logger, lines } = memoryLogger('debug');

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(async () => {
  context.disable();
  await provider.shutdown();
});

it('records a span per call under the operation span, and a debug line per call', async () => {
  await tracer.startActiveSpan('provider.test', async (parent) => {
    const conn = await LibvirtConnection.connect(parseLibvirtUri('qemu:///system'), {
      host: 'local',
      tracer,
      logger,
    });
    await conn.call(ConnectGetLibVersion, undefined);
    await conn.call(DomainLookupByName, { name: 'kvm2-telemetry-missing' }).catch(() => undefined);
    await conn.close();
    parent.end();
  });
  const spans = exporter.getFinishedSpans();
  const parent = spans.find((s) => s.name === 'provider.test');
  expect(parent).toBeDefined();
  const parentId = parent!.spanContext().spanId;
  const byName = (n: string) => spans.find((s) => s.name === n);
  for (const name of ['kvm2.dial', 'kvm2.ConnectGetLibVersion', 'kvm2.DomainLookupByName']) {
    const span = byName(name);
    expect(span, name).toBeDefined();
    expect(span!.parentSpanContext?.spanId, name).toBe(parentId);
    expect(span!.spanContext().traceId).toBe(parent!.spanContext().traceId);
  }
  // The opening sequence runs under kvm2.dial.
  const dialId = byName('kvm2.dial')!.spanContext().spanId;
  expect(byName('kvm2.ConnectOpen')!.parentSpanContext?.spanId).toBe(dialId);
  expect(byName('kvm2.ConnectGetLibVersion')!.attributes['kvm2.host']).toBe('local');
  expect(byName('kvm2.DomainLookupByName')!.status.code).toBe(2); // ERROR

  const calls = lines.filter((l) => l.msg === 'libvirt call');
  const lookup = calls.find((l) => l.procedure === 'DomainLookupByName');
  expect(lookup).toMatchObject({ host: 'local', outcome: 'ERR_LIBVIRT', level: 20 });
  expect(typeof lookup!.durationMs).toBe('number');
  expect(calls.find((l) => l.procedure === 'ConnectGetLibVersion')).toMatchObject({
    outcome: 'ok',
  });
  expect(trace.getActiveSpan()).toBeUndefined();
});
