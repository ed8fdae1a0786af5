// OpenTelemetry for the worker and the board (SPEC §8): the NodeSDK, configured entirely by the
// standard OTEL_* variables (exporter, endpoint, service name, sampler, resource attributes).
// It starts only when an exporter or endpoint is named: with none, the SDK's default OTLP
// exporter would retry against localhost:4318 forever and log every failure. Without the SDK
// the API is a no-op and trace context still travels in job data (a producer's traceparent is
// passed on unchanged).
import { NodeSDK } from '@opentelemetry/sdk-node';

const TRIGGERS = [
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
];

export interface Telemetry {
  readonly enabled: boolean;
  shutdown(): Promise<void>;
}

export function startTelemetry(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
): Telemetry {
  if (env['OTEL_SDK_DISABLED'] === 'true' || !TRIGGERS.some((k) => (env[k] ?? '') !== '')) {
    return { enabled: false, shutdown: () => Promise.resolve() };
  }
  env['OTEL_SERVICE_NAME'] ??= serviceName;
  // Metrics are served at /metrics and logs go to stdout: only traces leave through the SDK.
  env['OTEL_METRICS_EXPORTER'] ??= 'none';
  env['OTEL_LOGS_EXPORTER'] ??= 'none';
  const sdk = new NodeSDK({ instrumentations: [] });
  sdk.start();
  return { enabled: true, shutdown: () => sdk.shutdown() };
}
