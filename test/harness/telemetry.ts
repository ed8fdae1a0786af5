// What tests read telemetry through: spans kept in memory (the SDK's own in-memory exporter)
// and pino's JSON lines, parsed, in an array.
import { Writable } from 'node:stream';
import type { Tracer } from '@opentelemetry/api';
import {
  TracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace';
import pino, { type Logger } from 'pino';

export interface MemoryTracing {
  readonly exporter: InMemorySpanExporter;
  readonly tracerProvider: TracerProvider;
  readonly tracer: Tracer;
}

export function memoryTracing(name = 'test'): MemoryTracing {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { exporter, tracerProvider, tracer: tracerProvider.getTracer(name) };
}

export interface MemoryLogger {
  readonly logger: Logger;
  /** Every line logged so far, parsed. */
  readonly lines: Record<string, unknown>[];
}

export function memoryLogger(level = 'debug'): MemoryLogger {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        }
        done();
      },
    }),
  );
  return { logger, lines };
}
