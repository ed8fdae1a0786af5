// The cancellation of each job run: one AbortController per run, kept while the run lasts, so
// shutdown can cancel every run of this process (workers/runtime.ts). The processor takes no
// BullMQ signal: BullMQ makes a controller for every job of a processor that takes one, which
// kvm2 then had to link with its lease's own, three controllers and two listeners per run on
// the busiest path (bench/queue). Instead the lease of the run's instance lock aborts the run's
// controller itself when the lock is lost (workers/run/admission.ts).

export class JobRuns {
  readonly #active = new Set<AbortController>();
  #cancelled: Error | undefined;

  /** A run's controller; already aborted when the runs were cancelled before it began. */
  start(): AbortController {
    const run = new AbortController();
    if (this.#cancelled !== undefined) run.abort(this.#cancelled);
    else this.#active.add(run);
    return run;
  }

  end(run: AbortController): void {
    this.#active.delete(run);
  }

  /** Aborts every run in progress, and every one that begins from now on, with `reason`. */
  cancelAll(reason: Error): void {
    this.#cancelled ??= reason;
    for (const run of this.#active) run.abort(reason);
    this.#active.clear();
  }

  get active(): number {
    return this.#active.size;
  }
}
