// check() (SPEC §3): one health report per host, all hosts at once, each probe on a fresh
// connection of its own that is closed when the probe ends (never the shared one: a health
// probe must neither wait behind nor break a host's real work). docs/health.md is the
// operator's view of the reasons.

import {
  CallAbortedError,
  LibvirtError,
  LinkClosedError,
  LinkInterruptedError,
} from '../../libvirt/errors.js';
import { DialError } from '../../libvirt/transport/dial-error.js';
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import type { HostConfig } from '../config/schema.js';
import { hostConfig, type ProviderContext } from '../core/host-context.js';
import { HostProbe, type ProbeProgress } from '../health/probe.js';
import {
  REASON_STATUS,
  dialHealthReason,
  type Finding,
  type HealthReport,
} from '../health/reasons.js';
import { inSpan } from '../core/telemetry.js';

export { REASON_STATUS } from '../health/reasons.js';
export type { HealthDetails, HealthReason, HealthReport, HealthStatus } from '../health/reasons.js';

export interface CheckOptions {
  /**
   * The caller's signal. When it fires the check rejects with the signal's reason (no report):
   * a cancelled check has learnt nothing about the host, and must not mark it unhealthy.
   */
  readonly signal?: AbortSignal | undefined;
}

/** The goodbye (CONNECT_CLOSE) on a probe that ended well; after that the link is torn down. */
const CLOSE_TIMEOUT_MS = 1_000;

/**
 * Probes one host within `health.timeout` and reports. Resolves with a report whatever the host
 * does; rejects only for a host that is not configured or when the caller's signal fires.
 */
export async function checkHost(
  ctx: ProviderContext,
  host: string,
  opts: CheckOptions = {},
): Promise<HealthReport> {
  const config = hostConfig(ctx, host);
  opts.signal?.throwIfAborted();
  const attributes = {
    'kvm2.host': host,
    ...(config.zone === undefined ? {} : { 'kvm2.zone': config.zone }),
  };
  return inSpan(ctx, 'provider.check', attributes, async (span) => {
    const report = await probe(ctx, config, opts.signal);
    span.setAttributes({
      'kvm2.health.status': report.status,
      'kvm2.health.reason': report.reason,
    });
    ctx.logger.info(
      {
        host,
        ...(config.zone === undefined ? {} : { zone: config.zone }),
        status: report.status,
        reason: report.reason,
        durationMs: report.durationMs,
        message: report.message,
      },
      'health check',
    );
    return report;
  });
}

/**
 * Probes every configured host (or those named in `hosts`), all at once, and reports in the
 * order asked. A host's failure is its report; the call rejects only for a host name that is
 * not configured (before anything is dialed) or when the caller's signal fires (after every
 * probe has closed its connection).
 */
export async function checkHosts(
  ctx: ProviderContext,
  opts: CheckOptions & { readonly hosts?: readonly string[] | undefined } = {},
): Promise<HealthReport[]> {
  const names = [...new Set(opts.hosts ?? ctx.config.hosts.map((h) => h.name))];
  for (const name of names) hostConfig(ctx, name);
  opts.signal?.throwIfAborted();
  const settled = await Promise.allSettled(
    names.map((name) => checkHost(ctx, name, { signal: opts.signal })),
  );
  opts.signal?.throwIfAborted();
  return settled.map((outcome) => {
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  });
}

async function probe(
  ctx: ProviderContext,
  config: HostConfig,
  callerSignal: AbortSignal | undefined,
): Promise<HealthReport> {
  const started = performance.now();
  const timeoutMs = ctx.config.health.timeout;
  const progress: ProbeProgress = { details: {}, waitingFor: new Set() };
  let conn: LibvirtConnection | undefined;
  // One signal for the dial and every call: the round's deadline or the caller's signal.
  const round = new AbortController();
  // Where the probe stood when the deadline fired (the aborted calls leave `waitingFor` empty).
  let stageAtDeadline: string | undefined;
  const timer = setTimeout(() => {
    stageAtDeadline = stage(conn === undefined, progress);
    round.abort(new DOMException(`health check ran out of ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  const onCallerAbort = (): void => round.abort(callerSignal?.reason);
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });

  let finding: Finding;
  try {
    conn = await ctx.hosts.dedicated(config.name, { signal: round.signal });
    finding = await new HostProbe(conn, config, ctx.config.health, round.signal, progress).run();
  } catch (err) {
    if (callerSignal?.aborted === true) throw callerSignal.reason;
    finding =
      stageAtDeadline === undefined
        ? failure(err)
        : {
            reason: 'timeout',
            message: `no answer within ${timeoutMs} ms (health.timeout), ${stageAtDeadline}`,
          };
  } finally {
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', onCallerAbort);
    // After an abort the link may be wedged: no goodbye, just tear it down.
    if (round.signal.aborted) conn?.destroy();
    else await conn?.close({ timeoutMs: CLOSE_TIMEOUT_MS });
  }
  return {
    host: config.name,
    ...(config.zone === undefined ? {} : { zone: config.zone }),
    status: REASON_STATUS[finding.reason],
    reason: finding.reason,
    message: finding.message,
    checkedAt: new Date().toISOString(),
    durationMs: Math.round(performance.now() - started),
    details: { ...progress.details },
  };
}

function stage(dialing: boolean, progress: ProbeProgress): string {
  if (dialing) return 'while dialing';
  const waiting = [...progress.waitingFor];
  return waiting.length > 0 ? `waiting for ${waiting.join(', ')}` : 'between calls';
}

/** The finding for a probe that failed part way, before its deadline. */
function failure(err: unknown): Finding {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof DialError) {
    // `aborted` without a caller's abort or our deadline cannot happen; call it a timeout.
    return err.reason === 'aborted' || err.reason === 'timeout'
      ? { reason: 'timeout', message }
      : { reason: dialHealthReason(err.reason), message };
  }
  // A call's own budget (it names the procedure).
  if (err instanceof CallAbortedError) return { reason: 'timeout', message };
  if (err instanceof LibvirtError) {
    const denied =
      err.libvirtCode === VirErr.AUTH_FAILED || err.libvirtCode === VirErr.ACCESS_DENIED;
    return {
      reason: denied ? 'auth_failed' : 'protocol_error',
      message: `libvirtd refused ${err.procedure}: ${message}`,
    };
  }
  if (err instanceof LinkInterruptedError || err instanceof LinkClosedError) {
    return { reason: 'unreachable', message: `link to libvirtd lost during the probe: ${message}` };
  }
  return { reason: 'protocol_error', message };
}
