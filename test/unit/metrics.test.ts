// The worker's /metrics text (workers/run/metrics.ts): Prometheus exposition format 0.0.4.
import { describe, expect, it } from 'vitest';
import { WorkerMetrics } from '../../workers/run/metrics.js';

describe('WorkerMetrics', () => {
  it('renders counters, gauges and a cumulative histogram', () => {
    const m = new WorkerMetrics();
    m.outcome('host.h1', 'create', 'succeeded', 0.3);
    m.outcome('host.h1', 'create', 'succeeded', 7);
    m.outcome('host.h1', 'create', 'retrying', 0.01);
    m.delayed('host.h1', 'busy');
    m.active('host.h1', 1);
    const text = m.render();
    expect(text).toContain('kvm2_jobs_total{queue="host.h1",op="create",outcome="succeeded"} 2');
    expect(text).toContain('kvm2_jobs_total{queue="host.h1",op="create",outcome="retrying"} 1');
    expect(text).toContain('kvm2_jobs_delayed_total{queue="host.h1",reason="busy"} 1');
    expect(text).toContain('kvm2_jobs_active{queue="host.h1"} 1');
    expect(text).toContain('kvm2_job_duration_seconds_bucket{op="create",le="0.05"} 1');
    expect(text).toContain('kvm2_job_duration_seconds_bucket{op="create",le="0.5"} 2');
    expect(text).toContain('kvm2_job_duration_seconds_bucket{op="create",le="10"} 3');
    expect(text).toContain('kvm2_job_duration_seconds_bucket{op="create",le="+Inf"} 3');
    expect(text).toContain('kvm2_job_duration_seconds_count{op="create"} 3');
    expect(text.endsWith('\n')).toBe(true);
    expect(m.activeTotal()).toBe(1);
  });

  it('renders the instance events published and the hosts watched', () => {
    const m = new WorkerMetrics();
    m.eventPublished('h1', 'stopped');
    m.eventPublished('h1', 'stopped');
    m.eventPublished('h2', 'gone');
    m.watching('h1', true);
    m.watching('h2', true);
    m.watching('h2', false);
    const text = m.render();
    expect(text).toContain('# TYPE kvm2_events_published_total counter');
    expect(text).toContain('kvm2_events_published_total{host="h1",state="stopped"} 2');
    expect(text).toContain('kvm2_events_published_total{host="h2",state="gone"} 1');
    expect(text).toContain('# TYPE kvm2_event_watch gauge');
    expect(text).toContain('kvm2_event_watch{host="h1"} 1');
    expect(text).toContain('kvm2_event_watch{host="h2"} 0');
  });

  it('keeps series apart whose label values would read the same joined', () => {
    const m = new WorkerMetrics();
    m.delayed('a\u0000b', 'c');
    m.delayed('a', 'b\u0000c');
    m.delayed('a', 'b\u0000c');
    m.outcome('q', 'create', 'succeeded', 1);
    m.outcome('q', 'delete', 'succeeded', 1);
    const text = m.render();
    expect(text).toContain('kvm2_jobs_delayed_total{queue="a\u0000b",reason="c"} 1');
    expect(text).toContain('kvm2_jobs_delayed_total{queue="a",reason="b\u0000c"} 2');
    expect(text).toContain('kvm2_jobs_total{queue="q",op="create",outcome="succeeded"} 1');
    expect(text).toContain('kvm2_jobs_total{queue="q",op="delete",outcome="succeeded"} 1');
  });

  it('escapes label values', () => {
    const m = new WorkerMetrics();
    m.delayed('q"\\\n', 'busy');
    expect(m.render()).toContain('queue="q\\"\\\\\\n"');
  });
});
