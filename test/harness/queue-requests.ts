// What the queue layer's tests hand the producer and the results stream: a create request for
// a host, and a job's result as a worker appends it.
import type { JobResult } from '../../queues/results.js';

export function request(name: string, host = 'h1') {
  return { host, name, image: 'debian-12', tag: 'ci', userData: '#cloud-config\n' };
}

export function result(jobId: string, outcome: JobResult['outcome']): JobResult {
  return { jobId, op: 'create', outcome, attempt: 1, timestamp: Date.now(), instanceId: 'h1/x' };
}
