// One operation span (`provider.create`, …) around a provider operation: made active so the
// libvirt calls and the download nest under it, marked as an error when the operation fails.
// Attributes name instances, hosts and images; never user-data.
import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import type { ProviderContext } from './host-context.js';

export function inSpan<T>(
  ctx: ProviderContext,
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return ctx.tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
