// The fleet page (`/fleet`, docs/board.md): what an operator of a fleet asks first. For each
// configured host: its health (the health hash's report, its reason and details, and how old
// it is), its pool's free space, its kvm2 instances (listed from libvirt), its queue's
// active/waiting/delayed/failed counts and its last results. Plain server-rendered HTML; a
// small script fetches the hosts' fragment again every few seconds. Every value is escaped,
// and nothing of a job's data is read: user-data and network-config cannot show here.
import type { Queue } from 'bullmq';
import express from 'express';
import { readHealth } from '../queues/health.js';
import { hostQueueName, resultsKey } from '../queues/names.js';
import type { RedisConnection } from '../queues/redis.js';
import { parseResult, type ResultEntry } from '../queues/results.js';
import type { Kvm2Config } from '../src/provider/config/schema.js';
import type { Instance } from '../src/provider/core/instance.js';
import type { HealthReport } from '../src/provider/health/reasons.js';
import type { Provider } from '../src/provider/provider.js';

/** How often the page fetches the hosts again. */
export const FLEET_REFRESH_MS = 5_000;
/** A host's listing is reused this long: every open page polls, libvirt is asked once. */
const LISTING_TTL_MS = 4_000;
/** A host that does not answer its listing in this long is shown as not answering. */
const LISTING_TIMEOUT_MS = 3_000;
/** Results read back from the stream's end for the "last results" of every host. */
const RESULTS_SCANNED = 1_000;
const RESULTS_SHOWN = 5;
const INSTANCES_SHOWN = 50;
const COUNTS = ['active', 'waiting', 'delayed', 'failed'] as const;

type Counts = Record<(typeof COUNTS)[number], number>;
type Listing = { readonly instances: Instance[] } | { readonly error: string };

export interface FleetHost {
  readonly host: string;
  readonly zone: string | undefined;
  /** undefined: no health round has reported on it yet. */
  readonly health: HealthReport | undefined;
  readonly listing: Listing;
  readonly counts: Counts | undefined;
  readonly results: readonly ResultEntry[];
}

export interface FleetSources {
  readonly config: Kvm2Config;
  readonly redis: RedisConnection;
  readonly provider: Provider;
  /** The board's Queue of each queue name. */
  readonly queue: (name: string) => Queue | undefined;
}

/** Reads the fleet's state; a host's listing is shared by the pages polling within its TTL. */
export class FleetView {
  readonly #sources: FleetSources;
  readonly #listings = new Map<string, { at: number; listing: Promise<Listing> }>();

  constructor(sources: FleetSources) {
    this.#sources = sources;
  }

  async hosts(): Promise<FleetHost[]> {
    const { config, redis } = this.#sources;
    const prefix = config.redis.prefix;
    const [health, results] = await Promise.all([
      readHealth(redis, prefix),
      lastResultsByHost(redis, prefix),
    ]);
    return Promise.all(
      config.hosts.map(async ({ name, zone }) => ({
        host: name,
        zone,
        health: health.get(name),
        listing: await this.#listing(name),
        counts: await this.#counts(name),
        results: results.get(name) ?? [],
      })),
    );
  }

  #listing(host: string): Promise<Listing> {
    const now = Date.now();
    const cached = this.#listings.get(host);
    if (cached !== undefined && now - cached.at < LISTING_TTL_MS) return cached.listing;
    const listing = this.#sources.provider
      .listHost(host, { signal: AbortSignal.timeout(LISTING_TIMEOUT_MS) })
      .then(
        (instances): Listing => ({ instances }),
        (err: unknown): Listing => ({ error: listingError(err) }),
      );
    this.#listings.set(host, { at: now, listing });
    return listing;
  }

  async #counts(host: string): Promise<Counts | undefined> {
    const queue = this.#sources.queue(hostQueueName(host));
    if (queue === undefined) return undefined;
    const counts = await queue.getJobCounts(...COUNTS);
    return Object.fromEntries(COUNTS.map((c) => [c, counts[c] ?? 0])) as Counts;
  }
}

function listingError(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') {
    return `no answer within ${LISTING_TIMEOUT_MS / 1000} s`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** The newest results of each host (by the instance id's host), newest first. */
async function lastResultsByHost(
  redis: RedisConnection,
  prefix: string,
): Promise<Map<string, ResultEntry[]>> {
  const entries = (await redis.xrevrange(
    resultsKey(prefix),
    '+',
    '-',
    'COUNT',
    RESULTS_SCANNED,
  )) as [string, string[]][];
  const byHost = new Map<string, ResultEntry[]>();
  for (const [id, fields] of entries) {
    const result = parseResult(id, fields);
    const host = result?.instanceId?.split('/')[0];
    if (result === undefined || host === undefined) continue;
    let list = byHost.get(host);
    if (list === undefined) byHost.set(host, (list = []));
    if (list.length < RESULTS_SHOWN) list.push(result);
  }
  return byHost;
}

// ---- HTML ----

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function esc(value: string | number | undefined): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** How long before `now` a moment (epoch ms) was; NaN, from a malformed entry, is unknown. */
function ago(at: number, now: number): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (!Number.isFinite(s)) return 'at an unknown time';
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

/** A host's state on the page: its report's status, or why there is none to trust. */
function hostState(
  host: FleetHost,
  now: number,
  everyMs: number,
): { state: string; label: string } {
  const report = host.health;
  if (report === undefined) return { state: 'unchecked', label: 'not checked yet' };
  // Three rounds missed: the workers that check it are gone, whatever the last report said.
  if (now - Date.parse(report.checkedAt) > 3 * everyMs) {
    return { state: 'stale', label: `${report.status}, but stale` };
  }
  return { state: report.status, label: report.status };
}

function healthSection(host: FleetHost, now: number): string {
  const report = host.health;
  if (report === undefined) return '<p class="muted">No health report yet.</p>';
  // The hash may hold a report written by something else (readHealth checks only its host).
  const d: Partial<HealthReport['details']> = report.details ?? {};
  const facts = [
    d.hostname === undefined ? '' : `hostname ${esc(d.hostname)}`,
    d.libvirtVersion === undefined ? '' : `libvirt ${esc(d.libvirtVersion)}`,
    d.hypervisorVersion === undefined ? '' : `QEMU ${esc(d.hypervisorVersion)}`,
    d.domainCount === undefined ? '' : `${esc(d.domainCount)} domains`,
  ].filter((f) => f !== '');
  return [
    `<p class="reason"><span class="code">${esc(report.reason)}</span> ${esc(report.message)}</p>`,
    `<p class="muted">checked <time datetime="${esc(report.checkedAt)}">${esc(ago(Date.parse(report.checkedAt), now))}</time>` +
      ` in ${esc(report.durationMs)} ms${facts.length > 0 ? ` · ${facts.join(' · ')}` : ''}</p>`,
  ].join('');
}

function poolSection(host: FleetHost): string {
  const d = host.health?.details;
  if (d?.poolAvailableBytes === undefined || d.poolCapacityBytes === undefined) {
    return '<p class="pool muted">pool: unknown</p>';
  }
  const free = d.poolCapacityBytes === 0 ? 0 : d.poolAvailableBytes / d.poolCapacityBytes;
  const pct = Math.round(free * 100);
  return (
    `<p class="pool">pool: <strong>${esc(gib(d.poolAvailableBytes))}</strong> free of ` +
    `${esc(gib(d.poolCapacityBytes))} (${pct}%)</p>` +
    `<div class="bar" role="img" aria-label="${pct}% free"><div style="width:${100 - pct}%"></div></div>`
  );
}

function countsSection(host: FleetHost): string {
  if (host.counts === undefined) return '';
  const cells = COUNTS.map(
    (c) =>
      `<div class="count ${c}${c === 'failed' && host.counts?.[c] !== 0 ? ' alert' : ''}">` +
      `<span class="n" data-count="${c}">${esc(host.counts?.[c])}</span> ${c}</div>`,
  );
  return `<div class="counts">${cells.join('')}</div>`;
}

function instancesSection(host: FleetHost): string {
  if ('error' in host.listing) {
    return `<h3>Instances</h3><p class="listing-error">could not list: ${esc(host.listing.error)}</p>`;
  }
  const all = [...host.listing.instances].sort((a, b) => a.name.localeCompare(b.name));
  const running = all.filter((i) => i.state === 'running').length;
  const head = `<h3>Instances <span class="muted">${all.length} (${running} running)</span></h3>`;
  if (all.length === 0) return `${head}<p class="muted">none</p>`;
  const rows = all
    .slice(0, INSTANCES_SHOWN)
    .map(
      (i) =>
        `<tr class="instance" data-instance="${esc(i.id)}"><td>${esc(i.name)}</td>` +
        `<td class="state ${esc(i.state)}">${esc(i.state)}</td><td>${esc(i.tag)}</td>` +
        `<td>${esc(i.image)}</td><td><time datetime="${esc(i.createdAt)}">${esc(i.createdAt)}</time></td></tr>`,
    );
  const more =
    all.length > INSTANCES_SHOWN
      ? `<p class="muted">and ${all.length - INSTANCES_SHOWN} more</p>`
      : '';
  return (
    `${head}<table><thead><tr><th>name</th><th>state</th><th>tag</th><th>image</th>` +
    `<th>created</th></tr></thead><tbody>${rows.join('')}</tbody></table>${more}`
  );
}

function resultsSection(host: FleetHost, now: number): string {
  const head = '<h3>Last results</h3>';
  if (host.results.length === 0) return `${head}<p class="muted">none in the stream</p>`;
  const rows = host.results.map(
    (r) =>
      `<tr class="result ${esc(r.outcome)}"><td>${esc(ago(r.timestamp, now))}</td>` +
      `<td>${esc(r.op)}</td><td>${esc(r.instanceId?.split('/')[1])}</td>` +
      `<td class="outcome">${esc(r.outcome)}</td><td class="code">${esc(r.errorCode)}</td></tr>`,
  );
  return `${head}<table><tbody>${rows.join('')}</tbody></table>`;
}

/** The hosts' fragment: what the page shows, and what its script fetches again. */
export function renderHosts(hosts: readonly FleetHost[], now: number, everyMs: number): string {
  const cards = hosts.map((host) => {
    const { state, label } = hostState(host, now, everyMs);
    return (
      `<section class="host ${esc(state)}" data-host="${esc(host.host)}" data-state="${esc(state)}">` +
      `<header><h2>${esc(host.host)}</h2>` +
      (host.zone === undefined ? '' : `<span class="zone">zone ${esc(host.zone)}</span>`) +
      `<span class="status">${esc(label)}</span></header>` +
      healthSection(host, now) +
      poolSection(host) +
      countsSection(host) +
      instancesSection(host) +
      resultsSection(host, now) +
      '</section>'
    );
  });
  const unhealthy = hosts.filter((h) => hostState(h, now, everyMs).state !== 'healthy').length;
  return (
    `<p class="summary" data-hosts="${hosts.length}" data-not-healthy="${unhealthy}">` +
    `${hosts.length} hosts, ${hosts.length - unhealthy} healthy · ` +
    `<time datetime="${new Date(now).toISOString()}">${esc(new Date(now).toISOString())}</time></p>` +
    `<div class="hosts">${cards.join('')}</div>`
  );
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2733}
nav{background:#1d2733;color:#fff;padding:10px 20px;display:flex;gap:20px;align-items:baseline}
nav a{color:#9cc3ff}main{padding:16px 20px}
.hosts{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:16px}
.host{background:#fff;border-radius:6px;padding:12px 16px;border-left:6px solid #999}
.host.healthy{border-color:#2e9d5b}.host.degraded{border-color:#e0a100}
.host.unhealthy{border-color:#d63c3c;background:#fff5f5}.host.stale,.host.unchecked{border-color:#888}
header{display:flex;gap:10px;align-items:baseline}h2{margin:0;font-size:18px}h3{font-size:14px;margin:12px 0 4px}
.status{margin-left:auto;font-weight:600;text-transform:uppercase;font-size:12px}
.unhealthy .status{color:#d63c3c}.healthy .status{color:#2e9d5b}.degraded .status{color:#a07000}
.muted{color:#6b7785}.code{font-family:ui-monospace,monospace;font-size:12px}
.bar{height:6px;background:#e3e7ec;border-radius:3px}.bar div{height:6px;background:#4a7bd0;border-radius:3px}
.counts{display:flex;gap:12px;margin:8px 0}.count .n{font-weight:700;font-size:16px}.count.alert .n{color:#d63c3c}
table{border-collapse:collapse;width:100%;font-size:13px}td,th{padding:2px 6px;text-align:left;border-bottom:1px solid #eef0f3}
.result.failed .outcome{color:#d63c3c}.result.succeeded .outcome{color:#2e9d5b}.listing-error{color:#d63c3c}
`;

/** The whole page: the hosts' fragment in a frame, and the script that refreshes it. */
export function renderPage(fragment: string): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>kvm2 fleet</title><style>${STYLE}</style></head><body>` +
    '<nav><strong>kvm2 fleet</strong><a href="/">queues and jobs (Bull Board)</a>' +
    '<span id="refreshed" class="muted"></span></nav>' +
    `<main id="fleet" data-refresh-ms="${FLEET_REFRESH_MS}">${fragment}</main>` +
    '<script src="/fleet/fleet.js" defer></script></body></html>'
  );
}

const SCRIPT = `
const root = document.getElementById('fleet');
const stamp = document.getElementById('refreshed');
async function refresh() {
  try {
    const res = await fetch('/fleet/hosts', { headers: { accept: 'text/html' } });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    root.innerHTML = await res.text();
    stamp.textContent = 'refreshed ' + new Date().toLocaleTimeString();
    root.dataset.refreshes = String(Number(root.dataset.refreshes || '0') + 1);
  } catch (err) {
    stamp.textContent = 'refresh failed (' + err.message + '); trying again';
  }
}
setInterval(refresh, Number(root.dataset.refreshMs));
`;

/** `/fleet`, `/fleet/hosts` (the fragment) and `/fleet/fleet.js`, behind the board's checks. */
export function fleetRouter(view: FleetView, config: Kvm2Config): express.Router {
  const router = express.Router();
  const everyMs = config.health.every;
  const noStore = (res: express.Response): void => {
    res.set('Cache-Control', 'no-store');
  };
  router.get('/fleet', async (_req, res) => {
    const fragment = renderHosts(await view.hosts(), Date.now(), everyMs);
    noStore(res);
    res.type('html').send(renderPage(fragment));
  });
  router.get('/fleet/hosts', async (_req, res) => {
    const fragment = renderHosts(await view.hosts(), Date.now(), everyMs);
    noStore(res);
    res.type('html').send(fragment);
  });
  router.get('/fleet/fleet.js', (_req, res) => {
    res.type('text/javascript').send(SCRIPT);
  });
  return router;
}
