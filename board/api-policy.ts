// What the dashboard's API lets through, as a bull-board `before` hook (it runs ahead of every
// API handler and answers in bull-board's own error format, which the UI displays): which
// writes, and how many jobs one page may ask for.
import type { BeforeHook, BeforeHookResult } from '@bull-board/api/typings/app';

/**
 * Writes that would put the board's redacted view of a job back into Redis: "Add" and
 * "Duplicate" prefill the job's formatted data (bull-board issue #1031), "Edit data" too. A
 * create whose user-data became `[redacted]` would boot a VM with it, and a job added here
 * skips the client's generations (SPEC §8). kvm2 jobs come from the kvm2 client only.
 */
const REFUSED_ROUTES: ReadonlySet<string> = new Set([
  '/api/queues/:queueName/add',
  '/api/queues/:queueName/:jobId/update-data',
]);

const REFUSED: BeforeHookResult = {
  allow: false,
  status: 403,
  errorKey: 'ERRORS.FORBIDDEN',
  message: 'kvm2 jobs are enqueued by the kvm2 client, not from the dashboard',
};

/**
 * bull-board's readOnlyMode answers 405 to writes on a queue, but "pause all" and "resume all"
 * answer 200 as no-ops; refusing every non-GET here makes read-only mean 405 for any write,
 * including routes a later bull-board adds.
 */
const READ_ONLY: BeforeHookResult = {
  allow: false,
  status: 405,
  errorKey: 'ERRORS.QUEUE_READ_ONLY',
};

/**
 * The most jobs one page of a queue may list: the largest the UI's own setting offers. Without
 * it one request (`jobsPerPage=50000`) makes the board read and redact every retained job.
 */
export const MAX_JOBS_PER_PAGE = 300;

const PAGE_TOO_LARGE: BeforeHookResult = {
  allow: false,
  status: 400,
  errorKey: 'ERRORS.INVALID_QUERY_PARAM',
  message: `jobsPerPage must be at most ${MAX_JOBS_PER_PAGE}`,
};

function pageTooLarge(request: { readonly query?: Record<string, unknown> } | undefined): boolean {
  const value = request?.query?.jobsPerPage;
  if (typeof value !== 'string') return value !== undefined;
  return !(Number(value) <= MAX_JOBS_PER_PAGE);
}

export function apiPolicy(options: { readonly readOnly: boolean }): BeforeHook {
  return ({ method, route, request }) => {
    if (method === 'get') return pageTooLarge(request) ? PAGE_TOO_LARGE : { allow: true };
    if (options.readOnly) return READ_ONLY;
    if (REFUSED_ROUTES.has(route)) return REFUSED;
    return { allow: true };
  };
}
