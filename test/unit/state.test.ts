import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  DomainState,
  INSTANCE_STATES,
  STATE_TABLE,
  mapDomainState,
  stateRow,
  type InstanceState,
  type StateRow,
} from '../../src/provider/core/state.js';
import { markdownTable } from '../harness/markdown.js';

/** How docs/states.md writes a row. */
function cells(row: StateRow): string[] {
  const reason = row.reason === '*' ? row.reasonName : `${row.reasonName} (${row.reason})`;
  return [`${row.state} (${DomainState[row.state]})`, reason, row.kvm2, row.why];
}

/** A reason number that no row of `state` names, to exercise its '*' row. */
function unnamedReason(state: StateRow['state']): number {
  const named = new Set(STATE_TABLE.filter((r) => r.state === state).map((r) => r.reason));
  let reason = 0;
  while (named.has(reason)) reason++;
  return reason;
}

/**
 * What each (state, reason) must be, written from libvirt-domain.h's own descriptions of
 * virDomainState and the virDomain*Reason enums, not read from STATE_TABLE: a row whose kvm2
 * state is changed by mistake fails against this.
 */
const EXPECTED: Readonly<Record<string, InstanceState>> = {
  'NOSTATE *': 'unknown', // "no state"
  'RUNNING 1': 'running', // BOOTED: "normal startup from boot"
  'RUNNING 9': 'crashed', // CRASHED: "running in a crashed state" (panic, left running)
  'RUNNING *': 'running', // unpaused, restored, migrated, woken: up and serving
  'BLOCKED *': 'running', // "the domain is blocked on resource": still up
  'PAUSED 1': 'paused', // USER: "paused on user request"
  'PAUSED 5': 'crashed', // IOERROR: "paused due to a disk I/O error"
  'PAUSED 6': 'crashed', // WATCHDOG: "paused due to a watchdog event"
  'PAUSED 8': 'stopping', // SHUTTING_DOWN: "paused during shutdown process"
  'PAUSED 10': 'crashed', // CRASHED: "paused due to guest crash"
  'PAUSED 11': 'provisioning', // STARTING_UP: "the domain is being started"
  'PAUSED 13': 'crashed', // POSTCOPY_FAILED: "paused after failed post-copy"
  'PAUSED *': 'paused', // save, dump, snapshot, migration, API error: paused, not broken
  'SHUTDOWN *': 'stopping', // "the domain is being shut down"
  'SHUTOFF 1': 'stopped', // SHUTDOWN: "normal shutdown"
  'SHUTOFF 2': 'stopped', // DESTROYED: "forced poweroff"
  'SHUTOFF 3': 'crashed', // CRASHED: "domain crashed"
  'SHUTOFF 5': 'suspended', // SAVED: "domain was saved into a file"
  'SHUTOFF 6': 'crashed', // FAILED: "domain failed to start"
  'SHUTOFF 8': 'crashed', // DAEMON: "daemon decides to kill domain during reconnection"
  'SHUTOFF *': 'stopped', // unknown, migrated, from snapshot: off
  'CRASHED *': 'crashed', // "the domain is crashed"
  'PMSUSPENDED *': 'suspended', // "the domain is suspended by guest power management"
};

const key = (row: StateRow): string => `${row.state} ${row.reason}`;

describe('the state table', () => {
  it('is what docs/states.md shows, row for row', async () => {
    const doc = await readFile(new URL('../../docs/states.md', import.meta.url), 'utf8');
    expect(markdownTable(doc, '## The table')).toEqual(STATE_TABLE.map(cells));
  });

  it('has an independent expectation for every row, and no expectation without a row', () => {
    expect(STATE_TABLE.map(key).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it('covers every libvirt state, with a row for any other reason', () => {
    for (const state of Object.keys(DomainState)) {
      expect(
        STATE_TABLE.some((r) => r.state === state && r.reason === '*'),
        state,
      ).toBe(true);
    }
  });

  it('lists each kvm2 state in docs/states.md', async () => {
    const doc = await readFile(new URL('../../docs/states.md', import.meta.url), 'utf8');
    const documented = markdownTable(doc, '# Instance states').map((r) => r[0]);
    expect(documented).toEqual(INSTANCE_STATES.map((s) => `\`${s}\``));
  });
});

describe('mapDomainState, one test per row', () => {
  for (const row of STATE_TABLE) {
    const [state, reason] = cells(row);
    const expected = EXPECTED[key(row)];
    it(`${state} / ${reason} is ${expected ?? '(no expectation)'}`, () => {
      const stateNumber = DomainState[row.state];
      const reasonNumber = row.reason === '*' ? unnamedReason(row.state) : row.reason;
      expect(stateRow(stateNumber, reasonNumber)).toBe(row);
      // With an address, the state as libvirt's meaning says.
      expect(mapDomainState(stateNumber, reasonNumber, true)).toBe(expected);
      // Without one, only a running domain changes: it is still provisioning.
      expect(mapDomainState(stateNumber, reasonNumber, false)).toBe(
        expected === 'running' ? 'provisioning' : expected,
      );
    });
  }
});

describe('mapDomainState', () => {
  it('reads the pairs libvirt reports around a create and a destroy', () => {
    expect(mapDomainState(DomainState.SHUTOFF, 0, false)).toBe('stopped'); // after define
    expect(mapDomainState(DomainState.PAUSED, 11, false)).toBe('provisioning'); // starting up
    expect(mapDomainState(DomainState.RUNNING, 1, false)).toBe('provisioning'); // booted, no address
    expect(mapDomainState(DomainState.RUNNING, 1, true)).toBe('running');
    expect(mapDomainState(DomainState.SHUTOFF, 2, false)).toBe('stopped'); // destroyed
  });

  it('is unknown for a state libvirt may add later', () => {
    expect(stateRow(8, 0)).toBeUndefined();
    expect(mapDomainState(8, 0, true)).toBe('unknown');
    expect(mapDomainState(-1, 0, true)).toBe('unknown');
  });

  it('uses a state for every reason number, known or not', () => {
    for (const state of Object.values(DomainState)) {
      for (let reason = 0; reason < 20; reason++) {
        expect(INSTANCE_STATES).toContain(mapDomainState(state, reason, false));
      }
    }
  });
});
