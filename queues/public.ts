// `kvm2/client`: what upstream applications import (package.json `exports`, docs/results.md,
// docs/jobs.md). The producer side only: enqueue, wait, read results with a consumer group, and
// read kvm2's configuration to find Redis and the hosts. Nothing here reaches the worker
// runtime, the board or the libvirt client (test/integration/client-package.test.ts checks
// what this entry pulls in).
export {
  Kvm2Client,
  type CreateInput,
  type CreateOptions,
  type Enqueued,
  type EnqueuedCreate,
  type Kvm2ClientOptions,
} from './client.js';
export { DEFAULT_JOB_OPTIONS } from './job-options.js';
export {
  ackResults,
  ensureResultsGroup,
  parseStreamEntry,
  readResults,
  readStream,
  ResultsReader,
  type ReadResultsOptions,
  type StreamEntry,
  type WaitForResultOptions,
} from './result-readers.js';
export {
  FINAL_OUTCOMES,
  parseResult,
  RESULT_OUTCOMES,
  type JobResult,
  type ResultEntry,
  type ResultOutcome,
} from './results.js';
export { parseInstanceEvent, type EventState, type InstanceEventEntry } from './events.js';
export {
  CREATE_PHASES,
  JOB_NAMES,
  type CreatePhase,
  type CreateProgress,
  type JobData,
  type JobInput,
  type JobName,
} from './registry.js';
export type { RedisConnection, RedisTarget } from './redis.js';
export {
  ConfigError,
  loadConfig,
  parseConfig,
  type LoadConfigOptions,
} from '../src/provider/config/load.js';
export type { Kvm2Config } from '../src/provider/config/schema.js';
export type { CreateRequest } from '../src/provider/core/request.js';
export type { InstanceState } from '../src/provider/core/state.js';
export { Kvm2Error, type Kvm2ErrorCode } from '../src/errors/error.js';
export type { ErrorKind } from '../src/errors/kind.js';
