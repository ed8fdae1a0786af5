// The libvirt client traces with the tracer it is given (the provider's HostTable passes one);
// given none, it makes no spans and never loads the OpenTelemetry API, whose ~50 ES modules
// were half of the client's load time (docs/libvirt-client.md, Telemetry). So only types are
// imported from it here and in the client's other modules.
import type { SpanStatusCode } from '@opentelemetry/api';

/** `SpanStatusCode.ERROR` (the API's enum member is a runtime value; this is its number). */
export const SPAN_STATUS_ERROR = 2 as SpanStatusCode.ERROR;
