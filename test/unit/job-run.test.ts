// workers/run/job-run.ts: a run's context keeps its logger lazy (a child of the worker's
// redacting logger costs ~10 µs, on every job; most runs never log), and jobRun keeps it so.
import { pino, type Logger } from 'pino';
import { expect, it } from 'vitest';
import { jobRun, type RunContext } from '../../workers/run/job-run.js';

it("jobRun adds the name and data and leaves the context's logger unmade until a run logs", () => {
  let made = 0;
  const lines: unknown[] = [];
  const worker = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  let bound: Logger | undefined;
  const context = {
    queue: 'host.h1',
    attempt: 2,
    get logger() {
      made++;
      return (bound ??= worker.child({ queue: 'host.h1', job: '7' }));
    },
  } as unknown as RunContext;

  const run = jobRun(context, 'delete', { id: 'h1/x', generation: 3 });
  expect(made).toBe(0);
  expect(run.name).toBe('delete');
  expect(run.data).toEqual({ id: 'h1/x', generation: 3 });
  expect(run.queue).toBe('host.h1');
  expect(run.attempt).toBe(2);

  run.logger.info('hello');
  expect(made).toBe(1);
  expect(lines).toMatchObject([{ msg: 'hello', queue: 'host.h1', job: '7' }]);
});
