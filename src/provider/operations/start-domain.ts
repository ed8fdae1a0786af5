// Step 7 of a create (docs/provider.md): start the domain unless it runs, then wait, bounded,
// until libvirt says running. A domain an administrator paused or suspended is left alone.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { isUnsupportedCall, LibvirtError } from '../../libvirt/errors.js';
import {
  DomainCreateWithFlags,
  DomainGetState,
  type NonnullDomain,
} from '../../libvirt/protocol.gen.js';
import { Kvm2Error } from '../../errors/error.js';
import { DomainState } from '../core/state.js';

const START_WAIT_MS = 15_000;
const START_POLL_MS = 200;
const PAUSED_STARTING_UP = 11; // VIR_DOMAIN_PAUSED_STARTING_UP: qemu is still coming up

/** Step 7: start unless running, then wait (bounded) until libvirt says running. */
export async function startAndWait(
  conn: LibvirtConnection,
  host: string,
  dom: NonnullDomain,
  io: { readonly signal: AbortSignal },
  options: { readonly justDefined?: boolean } = {},
): Promise<void> {
  // A domain this create has just defined is shut off: no need to ask.
  const before =
    options.justDefined === true
      ? { state: DomainState.SHUTOFF as number, reason: 0 }
      : await conn.call(DomainGetState, { dom, flags: 0 }, io);
  if (before.state === DomainState.RUNNING) return;
  const startingUp = before.state === DomainState.PAUSED && before.reason === PAUSED_STARTING_UP;
  if (
    (before.state === DomainState.PAUSED && !startingUp) ||
    before.state === DomainState.PMSUSPENDED
  ) {
    throw new Kvm2Error(
      'ERR_DOMAIN_NOT_RUNNING',
      `domain '${dom.name}' on host '${host}' is ${stateName(before.state)} (reason ${before.reason}): an administrator's doing, kvm2 will not resume it`,
    );
  }
  if (!startingUp) {
    try {
      await start(conn, dom, io, options.justDefined === true);
    } catch (err) {
      // "already active": another worker adopting started it; the wait below decides. Any
      // other refusal (an inactive network, say) is libvirt's own answer: pass it on.
      if (!(err instanceof LibvirtError && err.libvirtCode === VirErr.OPERATION_INVALID)) throw err;
      const now = await conn.call(DomainGetState, { dom, flags: 0 }, io);
      const coming = now.state === DomainState.PAUSED && now.reason === PAUSED_STARTING_UP;
      if (now.state !== DomainState.RUNNING && !coming) throw err;
    }
  }
  const deadline = Date.now() + START_WAIT_MS;
  for (;;) {
    const { state, reason } = await conn.call(DomainGetState, { dom, flags: 0 }, io);
    if (state === DomainState.RUNNING) return;
    const starting = state === DomainState.PAUSED && reason === PAUSED_STARTING_UP;
    if (!starting || Date.now() >= deadline) {
      throw new Kvm2Error(
        'ERR_DOMAIN_DIED',
        `domain '${dom.name}' on host '${host}' is ${stateName(state)} (reason ${reason}) right after start`,
      );
    }
    await sleep(START_POLL_MS, io.signal);
  }
}

/**
 * VIR_DOMAIN_START_RESET_NVRAM (1 << 5, libvirt 8.1): the UEFI variables made again from the
 * template (1 << 4 is START_VALIDATE).
 */
const START_RESET_NVRAM = 0x20;

/**
 * Starts `dom`. One this create has just defined starts with fresh UEFI variables: libvirt
 * names the varstore by the domain's name and reuses a file it finds there (one left by a
 * renamed domain, or a failed undefine), so a new instance would boot with another guest's
 * variables, or not at all when the file's size is not the firmware's. A driver that does not
 * take the flag (the test driver) is asked without it.
 */
async function start(
  conn: LibvirtConnection,
  dom: NonnullDomain,
  io: { readonly signal: AbortSignal },
  fresh: boolean,
): Promise<void> {
  if (fresh) {
    try {
      await conn.call(DomainCreateWithFlags, { dom, flags: START_RESET_NVRAM }, io);
      return;
    } catch (err) {
      if (!isUnsupportedCall(err)) throw err;
    }
  }
  await conn.call(DomainCreateWithFlags, { dom, flags: 0 }, io);
}

function stateName(state: number): string {
  const entry = Object.entries(DomainState).find(([, v]) => v === state);
  return (entry?.[0] ?? `state ${state}`).toLowerCase();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
