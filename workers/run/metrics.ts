// What /metrics serves, in Prometheus's text format (version 0.0.4): a handful of counters,
// gauges and one histogram kept in memory by the worker process. Small enough to write by hand;
// a metrics SDK would add a dependency for six series.

type Labels = Readonly<Record<string, string>>;

const DURATION_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
  );
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

type Entry<V> = { labels: Labels; value: V };

/**
 * One family's series, by its label values (one to three): given in the order of the names it
 * was made with, as arguments, found through a map per label. The run counts several a job:
 * bench/queue's profile showed ~2 µs a call for a labels object walked with for…in into its
 * key, and ~0.5 for the values joined into one.
 */
class Series<V> {
  readonly #byValues = new Map<string, Map<string, Map<string, Entry<V>>>>();
  readonly #entries: Entry<V>[] = [];

  constructor(
    private readonly names: readonly string[],
    private readonly initial: () => V,
  ) {
    if (names.length < 1 || names.length > 3) throw new RangeError('a series has 1 to 3 labels');
  }

  at(a: string, b = '', c = ''): { labels: Labels; value: V } {
    let byB = this.#byValues.get(a);
    if (byB === undefined) this.#byValues.set(a, (byB = new Map<string, Map<string, Entry<V>>>()));
    let byC = byB.get(b);
    if (byC === undefined) byB.set(b, (byC = new Map<string, Entry<V>>()));
    let entry = byC.get(c);
    if (entry === undefined) {
      const values = [a, b, c];
      const labels = Object.fromEntries(this.names.map((name, i) => [name, values[i] ?? '']));
      entry = { labels, value: this.initial() };
      byC.set(c, entry);
      this.#entries.push(entry);
    }
    return entry;
  }

  entries(): { labels: Labels; value: V }[] {
    return [...this.#entries];
  }
}

interface Histogram {
  buckets: number[];
  sum: number;
  count: number;
}

export class WorkerMetrics {
  readonly #jobs = new Series<number>(['queue', 'op', 'outcome'], () => 0);
  readonly #active = new Series<number>(['queue'], () => 0);
  readonly #durations = new Series<Histogram>(['op'], () => ({
    buckets: DURATION_BUCKETS_S.map(() => 0),
    sum: 0,
    count: 0,
  }));
  readonly #delayed = new Series<number>(['queue', 'reason'], () => 0);
  readonly #events = new Series<number>(['host', 'state'], () => 0);
  readonly #watching = new Series<number>(['host'], () => 0);
  readonly #away = new Series<number>(['host'], () => 0);

  /**
   * One attempt's outcome (succeeded, failed, retrying, superseded), and how long its run took
   * when a run of it ended here (a job BullMQ fails for stalling is counted without one).
   */
  outcome(queue: string, op: string, outcome: string, seconds?: number): void {
    this.#jobs.at(queue, op, outcome).value += 1;
    if (seconds === undefined) return;
    const h = this.#durations.at(op).value;
    h.sum += seconds;
    h.count += 1;
    for (let i = 0; i < DURATION_BUCKETS_S.length; i++) {
      if (seconds <= (DURATION_BUCKETS_S[i] ?? 0)) h.buckets[i] = (h.buckets[i] ?? 0) + 1;
    }
  }

  /** A job re-queued without spending an attempt (busy key, address wait, shutdown release). */
  delayed(queue: string, reason: string): void {
    this.#delayed.at(queue, reason).value += 1;
  }

  active(queue: string, delta: number): void {
    this.#active.at(queue).value += delta;
  }

  /** An instance event published (docs/events.md), by host and the state published. */
  eventPublished(host: string, state: string): void {
    this.#events.at(host, state).value += 1;
  }

  /** Whether this process holds the host's watch lease (publishes its events) now. */
  watching(host: string, on: boolean): void {
    this.#watching.at(host).value = on ? 1 : 0;
  }

  /** Whether the host's queue is paused here because the host is away (host-breaker.ts). */
  hostAway(host: string, away: boolean): void {
    this.#away.at(host).value = away ? 1 : 0;
  }

  activeTotal(): number {
    return this.#active.entries().reduce((sum, e) => sum + e.value, 0);
  }

  render(): string {
    const lines: string[] = [];
    const family = (name: string, type: string, help: string): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    };
    family('kvm2_jobs_total', 'counter', 'Job attempts finished, by queue, op and outcome.');
    for (const e of this.#jobs.entries()) {
      lines.push(`kvm2_jobs_total${labelText(e.labels)} ${e.value}`);
    }
    family('kvm2_jobs_delayed_total', 'counter', 'Jobs re-queued without spending an attempt.');
    for (const e of this.#delayed.entries()) {
      lines.push(`kvm2_jobs_delayed_total${labelText(e.labels)} ${e.value}`);
    }
    family('kvm2_jobs_active', 'gauge', 'Jobs running in this process, by queue.');
    for (const e of this.#active.entries()) {
      lines.push(`kvm2_jobs_active${labelText(e.labels)} ${e.value}`);
    }
    family(
      'kvm2_events_published_total',
      'counter',
      'Instance events published, by host and state.',
    );
    for (const e of this.#events.entries()) {
      lines.push(`kvm2_events_published_total${labelText(e.labels)} ${e.value}`);
    }
    family('kvm2_event_watch', 'gauge', '1 for each host whose events this process publishes now.');
    for (const e of this.#watching.entries()) {
      lines.push(`kvm2_event_watch${labelText(e.labels)} ${e.value}`);
    }
    family('kvm2_host_away', 'gauge', '1 for each host whose queue is paused here: it is away.');
    for (const e of this.#away.entries()) {
      lines.push(`kvm2_host_away${labelText(e.labels)} ${e.value}`);
    }
    family('kvm2_job_duration_seconds', 'histogram', 'Time of one job attempt, by op.');
    for (const { labels, value } of this.#durations.entries()) {
      DURATION_BUCKETS_S.forEach((le, i) => {
        const bucket = labelText({ ...labels, le: String(le) });
        lines.push(`kvm2_job_duration_seconds_bucket${bucket} ${value.buckets[i] ?? 0}`);
      });
      lines.push(
        `kvm2_job_duration_seconds_bucket${labelText({ ...labels, le: '+Inf' })} ${value.count}`,
        `kvm2_job_duration_seconds_sum${labelText(labels)} ${value.sum}`,
        `kvm2_job_duration_seconds_count${labelText(labels)} ${value.count}`,
      );
    }
    return `${lines.join('\n')}\n`;
  }
}
