// libvirt's lifecycle and agent events by name (src/libvirt/event-names.ts), checked against
// the numbers of include/libvirt/libvirt-domain.h (libvirt 9.0.0).
import { describe, expect, it } from 'vitest';
import { LifecycleEvent } from '../../src/libvirt/domain-events.js';
import { agentEventName, lifecycleEventName } from '../../src/libvirt/event-names.js';

describe('lifecycleEventName', () => {
  it.each([
    [LifecycleEvent.DEFINED, 0, 'defined', 'added'],
    [LifecycleEvent.UNDEFINED, 0, 'undefined', 'removed'],
    [LifecycleEvent.STARTED, 0, 'started', 'booted'],
    [LifecycleEvent.STARTED, 4, 'started', 'wakeup'],
    [LifecycleEvent.SUSPENDED, 0, 'suspended', 'paused'],
    [LifecycleEvent.SUSPENDED, 2, 'suspended', 'ioerror'],
    [LifecycleEvent.SUSPENDED, 8, 'suspended', 'postcopy_failed'],
    [LifecycleEvent.RESUMED, 0, 'resumed', 'unpaused'],
    [LifecycleEvent.STOPPED, 0, 'stopped', 'shutdown'],
    [LifecycleEvent.STOPPED, 1, 'stopped', 'destroyed'],
    [LifecycleEvent.STOPPED, 2, 'stopped', 'crashed'],
    [LifecycleEvent.STOPPED, 6, 'stopped', 'from_snapshot'],
    [LifecycleEvent.SHUTDOWN, 2, 'shutdown', 'host'],
    [LifecycleEvent.PMSUSPENDED, 1, 'pmsuspended', 'disk'],
    [LifecycleEvent.CRASHED, 0, 'crashed', 'panicked'],
  ])('(%i, %i) is %s/%s', (event, detail, name, detailName) => {
    expect(lifecycleEventName(event, detail)).toEqual({ event: name, detail: detailName });
  });

  it('names numbers a later libvirt adds by their value', () => {
    expect(lifecycleEventName(LifecycleEvent.STOPPED, 42)).toEqual({
      event: 'stopped',
      detail: 'detail-42',
    });
    expect(lifecycleEventName(9, 0)).toEqual({ event: 'event-9', detail: 'detail-0' });
    expect(lifecycleEventName(-1, 0)).toEqual({ event: 'event--1', detail: 'detail-0' });
  });
});

describe('agentEventName', () => {
  it('names the agent lifecycle states and reasons', () => {
    expect(agentEventName(1, 2)).toEqual({ event: 'agent-connected', detail: 'channel' });
    expect(agentEventName(2, 1)).toEqual({ event: 'agent-disconnected', detail: 'domain_started' });
    expect(agentEventName(3, 7)).toEqual({ event: 'agent-state-3', detail: 'reason-7' });
  });
});
