import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  DomainState,
  INSTANCE_STATES,
  STATE_TABLE,
  mapDomainState,
  stateRow,
  type StateRow,
} from '../../src/provider/state.js';
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

describe('the state table', () => {
  it('is what docs/states.md shows, row for row', async () => {
    const doc = await readFile(new URL('../../docs/states.md', import.meta.url), 'utf8');
    expect(markdownTable(doc, '## The table')).toEqual(STATE_TABLE.map(cells));
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
    it(`${state} / ${reason} is ${row.kvm2}`, () => {
      const stateNumber = DomainState[row.state];
      const reasonNumber = row.reason === '*' ? unnamedReason(row.state) : row.reason;
      expect(stateRow(stateNumber, reasonNumber)).toBe(row);
      // With an address, the row's state as it stands.
      expect(mapDomainState(stateNumber, reasonNumber, true)).toBe(row.kvm2);
      // Without one, only a running domain changes: it is still provisioning.
      expect(mapDomainState(stateNumber, reasonNumber, false)).toBe(
        row.kvm2 === 'running' ? 'provisioning' : row.kvm2,
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
