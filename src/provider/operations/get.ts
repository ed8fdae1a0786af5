// get (SPEC §3): the instance as libvirt sees it now. Only libvirt's "no domain" is not_found;
// identity is read back from the metadata every time; a cancelled read is transient (the
// engine's CallAbortedError), never a false state.
import { DomainLookupByName } from '../../libvirt/protocol.gen.js';
import { hostConfig, type ProviderContext } from '../core/host-context.js';
import { Kvm2Error } from '../../errors/error.js';
import { parseInstanceId } from '../core/ids.js';
import { readInstance, type Instance } from '../core/instance.js';
import { asOperationError, isNoDomain } from '../core/not-found.js';
import { inSpan } from '../core/telemetry.js';

export async function get(
  ctx: ProviderContext,
  id: string,
  options?: { signal?: AbortSignal | undefined },
): Promise<Instance> {
  const { host, name } = parseInstanceId(id);
  hostConfig(ctx, host);
  return inSpan(ctx, 'provider.get', { 'kvm2.instance': id }, async () => {
    const io = { signal: options?.signal };
    const conn = await ctx.hosts.shared(host, io);
    let dom;
    try {
      ({ dom } = await conn.call(DomainLookupByName, { name }, io));
    } catch (err) {
      if (isNoDomain(err)) {
        throw new Kvm2Error('ERR_NOT_FOUND', `no instance '${id}'`, {
          cause: err,
        });
      }
      throw err;
    }
    return await readInstance(conn, host, dom, io).catch((err: unknown) => {
      throw asOperationError(err);
    });
  });
}
