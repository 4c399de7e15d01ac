import http from 'node:http';
import type { V1Job } from '@kubernetes/client-node';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { decodeNodeState, KEELSON_PREFIX, StatusSchema, type Status } from '../model';
import type { ActivityMetrics } from '../activities';
import type { RolloutStatusView } from '../workflows/messages';
import { RolloutClocks } from './rollout-clocks';

type StageEnded = Parameters<ActivityMetrics['stageEnded']>[0];

// Keelson's Prometheus metrics (docs/metrics.md documents each one; a test keeps the two in step).
// Skyhook's set (§6.2), adapted:
// - event metrics come from the activities (createActivities' optional `metrics` dep): every node-state write
//   (writeNodeState sees each transition), every stage and interrupt Job waited on. Counters, so with two or more
//   worker replicas `sum()` over the replicas is the fleet figure.
// - gauges are recomputed when scraped (cached KEELSON_METRICS_REFRESH_SECONDS): rollout status, node and package
//   counts and batch/compartment figures from each running rollout workflow's `status` query, and the restarts of
//   stage Jobs still retrying from Job status (G6). Every replica reports the whole fleet, so aggregate gauges with
//   `max()` over the replicas, not `sum()`.

export const STATUSES: readonly Status[] = StatusSchema.options;

/** Where the scrape-time gauges come from: the worker wires Temporal and Kubernetes in, tests hand in fakes. */
export interface GaugeSources {
  /** The `status` query of every running rollout workflow of this cluster. */
  rollouts(): Promise<RolloutStatusView[]>;
  /** Keelson stage and interrupt Jobs in the Jobs namespace. */
  jobs(): Promise<V1Job[]>;
}

export interface MetricDescription {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  labels: readonly string[];
  help: string;
}

const ROLLOUT_GAUGES = {
  keelson_rollout_matched_nodes: 'nodes the rollout matched, by compartment',
  keelson_rollout_ceiling: 'most nodes of the compartment interrupted at once (the interruption budget)',
  keelson_rollout_in_progress: 'nodes of the compartment in progress',
  keelson_rollout_completed: 'nodes of the compartment complete',
  keelson_rollout_progress_percent: 'completed / matched of the compartment, in percent',
  keelson_rollout_current_batch: 'batch number of the compartment (1-based)',
  keelson_rollout_consecutive_failures: 'failed batches in a row of the compartment',
  keelson_rollout_should_stop: '1 when the compartment stopped admitting nodes (failureThreshold reached)',
} as const;

/** Every Keelson metric, its labels and meaning: the source of docs/metrics.md's table. */
export const METRICS: readonly MetricDescription[] = [
  {
    name: 'keelson_stage_transitions_total',
    type: 'counter',
    labels: ['rollout', 'package', 'version', 'stage', 'state'],
    help: "package entries that moved to this stage and state on a node (counted at each node-state write; a stage end written together with the next stage's start counts only the latter)",
  },
  {
    name: 'keelson_node_state_writes_total',
    type: 'counter',
    labels: ['rollout', 'status'],
    help: 'node-state writes, by the node status written',
  },
  {
    name: 'keelson_node_state_write_conflicts_total',
    type: 'counter',
    labels: ['rollout'],
    help: 'node-state writes refused because another writer changed the annotation (ForeignNodeStateWrite)',
  },
  {
    name: 'keelson_stage_jobs_kept_total',
    type: 'counter',
    labels: [],
    help: 'deletes of failed stage Jobs declined to keep their logs (KEELSON_JOB_RETENTION_SECONDS above 0); a delete asked again counts again',
  },
  {
    name: 'keelson_stage_duration_seconds',
    type: 'histogram',
    labels: ['rollout', 'package', 'stage', 'outcome'],
    help: "time a stage or interrupt Job took, from the activity start to its outcome (complete or failed); a reboot's includes the wait for the node to come back (a RebootTimeout is `failed`)",
  },
  {
    name: 'keelson_stage_failed_pods_total',
    type: 'counter',
    labels: ['rollout', 'package', 'version', 'stage'],
    help: 'failed pod attempts of stage Jobs, counted when the stage ends (G6)',
  },
  {
    name: 'keelson_rollout_status',
    type: 'gauge',
    labels: ['rollout', 'status'],
    help: '1 for the status the rollout is in, 0 for the other seven (all eight are emitted)',
  },
  {
    name: 'keelson_node_status_count',
    type: 'gauge',
    labels: ['rollout', 'status'],
    help: 'nodes of the rollout in each status (all eight emitted)',
  },
  {
    name: 'keelson_node_target_count',
    type: 'gauge',
    labels: ['rollout'],
    help: 'nodes the rollout targets',
  },
  {
    name: 'keelson_package_state_count',
    type: 'gauge',
    labels: ['rollout', 'package', 'version', 'state'],
    help: 'nodes whose entry for the package is in this state (summed across stages, unlike Skyhook)',
  },
  {
    name: 'keelson_package_stage_count',
    type: 'gauge',
    labels: ['rollout', 'package', 'version', 'stage'],
    help: 'nodes whose entry for the package is at this stage',
  },
  {
    name: 'keelson_package_restarts_count',
    type: 'gauge',
    labels: ['rollout', 'package', 'version'],
    help: 'failed pod attempts over the nodes: recorded restarts plus the failed pods of Jobs still retrying (G6)',
  },
  ...Object.entries(ROLLOUT_GAUGES).map(([name, help]) => ({
    name,
    type: 'gauge' as const,
    labels: ['rollout', 'compartment'],
    help,
  })),
  {
    name: 'keelson_rollout_last_progress_timestamp_seconds',
    type: 'gauge',
    labels: ['rollout'],
    help: "when this replica last saw the rollout's status, flags, generation or any node's status or package stage or state change (or first saw the rollout), in seconds since the epoch: take `min()` over replicas",
  },
  {
    name: 'keelson_interrupt_permit_held_seconds',
    type: 'gauge',
    labels: ['rollout', 'node'],
    help: "how long the node has held the rollout's interrupt permit, as seen by this replica (from its first sight of it): take `max()` over replicas",
  },
  {
    name: 'keelson_metrics_refresh_errors_total',
    type: 'counter',
    labels: ['source'],
    help: "failed reads of the gauges' sources (rollouts: a status query; jobs: the Job list)",
  },
];

const help = (name: string) => METRICS.find((m) => m.name === name)!.help;
const labelsOf = (name: string) => [...METRICS.find((m) => m.name === name)!.labels];

type Row<T extends string> = Record<T, string>;

/** One worker's metrics registry. Activities report through the hooks; the gauges are refreshed when scraped. */
export class KeelsonMetrics implements ActivityMetrics {
  readonly registry = new Registry();
  private readonly transitions: Counter;
  private readonly writes: Counter;
  private readonly conflicts: Counter;
  private readonly kept: Counter;
  private readonly durations: Histogram;
  private readonly failedPods: Counter;
  private readonly refreshErrors: Counter;
  private readonly gauges = new Map<string, Gauge>();
  private readonly clocks = new RolloutClocks();
  private lastRefresh = 0;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly options: {
      sources?: GaugeSources;
      refreshSeconds?: number;
      processMetrics?: boolean;
      /** The clock of the progress and permit gauges (ms); tests move it. */
      now?: () => number;
    } = {},
  ) {
    const counter = (name: string) =>
      new Counter({ name, help: help(name), labelNames: labelsOf(name), registers: [this.registry] });
    this.transitions = counter('keelson_stage_transitions_total');
    this.writes = counter('keelson_node_state_writes_total');
    this.conflicts = counter('keelson_node_state_write_conflicts_total');
    this.kept = counter('keelson_stage_jobs_kept_total');
    this.failedPods = counter('keelson_stage_failed_pods_total');
    this.refreshErrors = counter('keelson_metrics_refresh_errors_total');
    this.durations = new Histogram({
      name: 'keelson_stage_duration_seconds',
      help: help('keelson_stage_duration_seconds'),
      labelNames: labelsOf('keelson_stage_duration_seconds'),
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200],
      registers: [this.registry],
    });
    const refresh = () => this.refresh();
    for (const m of METRICS.filter((d) => d.type === 'gauge')) {
      this.gauges.set(
        m.name,
        new Gauge({
          name: m.name,
          help: m.help,
          labelNames: [...m.labels],
          registers: [this.registry],
          // Every gauge waits for the same (de-duplicated) refresh: prom-client collects metrics concurrently.
          async collect() {
            await refresh();
          },
        }),
      );
    }
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'keelson_process_' });
  }

  // ---- hooks for the activities -------------------------------------------------------------------------------

  /** A node-state write that landed: counts each entry whose stage or state differs from what was there before. */
  nodeStateWritten(input: Parameters<ActivityMetrics['nodeStateWritten']>[0]): void {
    this.writes.inc({ rollout: input.rollout, status: input.status });
    const before = decodeNodeState(input.previous ?? undefined);
    const old = before.ok ? before.state : {};
    for (const [key, entry] of Object.entries(input.state)) {
      const prior = old[key];
      if (prior && prior.stage === entry.stage && prior.state === entry.state) continue;
      this.transitions.inc({
        rollout: input.rollout,
        package: entry.name,
        version: entry.version,
        stage: entry.stage,
        state: entry.state,
      });
    }
  }

  nodeStateConflict(rollout: string): void {
    this.conflicts.inc({ rollout });
  }

  stageJobKept(): void {
    this.kept.inc();
  }

  /** A stage or interrupt Job ended (or was adopted and ended): its duration and failed pod attempts. */
  stageEnded(input: StageEnded): void {
    const { rollout, package: pkg, version, stage } = input;
    this.durations.observe({ rollout, package: pkg, stage, outcome: input.outcome }, input.seconds);
    if (input.failedPods > 0) this.failedPods.inc({ rollout, package: pkg, version, stage }, input.failedPods);
  }

  // ---- scrape-time gauges --------------------------------------------------------------------------------------

  /** Recomputes every gauge from its sources, at most once per refresh period. */
  async refresh(force = false): Promise<void> {
    const sources = this.options.sources;
    if (!sources) return;
    const period = (this.options.refreshSeconds ?? 15) * 1000;
    if (!force && Date.now() - this.lastRefresh < period) return;
    this.refreshing ??= this.recompute(sources).finally(() => {
      this.lastRefresh = Date.now();
      this.refreshing = undefined;
    });
    await this.refreshing;
  }

  private async recompute(sources: GaugeSources): Promise<void> {
    const [rollouts, jobs] = await Promise.all([
      sources.rollouts().catch(() => {
        this.refreshErrors.inc({ source: 'rollouts' });
        return undefined;
      }),
      sources.jobs().catch(() => {
        this.refreshErrors.inc({ source: 'jobs' });
        return undefined;
      }),
    ]);
    if (rollouts === undefined) return; // keep the last figures rather than report an empty fleet
    for (const g of this.gauges.values()) g.reset();
    const inFlight = retryingFailedPods(jobs ?? []);
    const set = (name: string, labels: Row<string>, value: number) => this.gauges.get(name)!.set(labels, value);
    const now = (this.options.now ?? Date.now)();
    this.clocks.observe(rollouts, now);
    for (const h of this.clocks.permitHolds(now)) {
      set('keelson_interrupt_permit_held_seconds', { rollout: h.rollout, node: h.node }, h.seconds);
    }
    for (const r of rollouts) {
      const rollout = r.name;
      for (const s of STATUSES) set('keelson_rollout_status', { rollout, status: s }, r.status === s ? 1 : 0);
      const nodes = Object.values(r.nodes);
      for (const s of STATUSES) {
        set('keelson_node_status_count', { rollout, status: s }, nodes.filter((n) => n.status === s).length);
      }
      set('keelson_node_target_count', { rollout }, nodes.length);
      set('keelson_rollout_last_progress_timestamp_seconds', { rollout }, this.clocks.lastProgressSeconds(rollout)!);
      const states = new Map<string, number>();
      const stages = new Map<string, number>();
      const restarts = new Map<string, number>();
      const bump = (m: Map<string, number>, k: string, by = 1) => m.set(k, (m.get(k) ?? 0) + by);
      for (const n of nodes) {
        for (const [pkg, p] of Object.entries(n.packages)) {
          bump(states, JSON.stringify([pkg, p.version, p.state]));
          bump(stages, JSON.stringify([pkg, p.version, p.stage]));
          bump(restarts, JSON.stringify([pkg, p.version]), p.restarts ?? 0);
        }
      }
      for (const [key, n] of inFlight) {
        const [rr, pkg, version] = JSON.parse(key) as [string, string, string];
        if (rr === rollout) bump(restarts, JSON.stringify([pkg, version]), n);
      }
      for (const [k, n] of states) {
        const [pkg, version, state] = JSON.parse(k) as string[];
        set('keelson_package_state_count', { rollout, package: pkg!, version: version!, state: state! }, n);
      }
      for (const [k, n] of stages) {
        const [pkg, version, stage] = JSON.parse(k) as string[];
        set('keelson_package_stage_count', { rollout, package: pkg!, version: version!, stage: stage! }, n);
      }
      for (const [k, n] of restarts) {
        const [pkg, version] = JSON.parse(k) as string[];
        set('keelson_package_restarts_count', { rollout, package: pkg!, version: version! }, n);
      }
      for (const [compartment, c] of Object.entries(r.compartmentStatuses)) {
        const labels = { rollout, compartment };
        set('keelson_rollout_matched_nodes', labels, c.matched);
        set('keelson_rollout_ceiling', labels, c.ceiling);
        set('keelson_rollout_in_progress', labels, c.inProgress);
        set('keelson_rollout_completed', labels, c.completed);
        set('keelson_rollout_progress_percent', labels, c.progressPercent);
        set('keelson_rollout_current_batch', labels, c.batchState.currentBatch);
        set('keelson_rollout_consecutive_failures', labels, c.batchState.consecutiveFailures);
        set('keelson_rollout_should_stop', labels, c.batchState.shouldStop ? 1 : 0);
      }
    }
  }

  /** The text Prometheus scrapes. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * Failed pod attempts of Keelson Jobs that have not finished yet, by JSON [rollout, package, version]: the restarts
 * of a stage still retrying (G6), which the node state records only once the stage ends.
 */
export function retryingFailedPods(jobs: readonly V1Job[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const job of jobs) {
    const failed = job.status?.failed ?? 0;
    const finished = job.status?.conditions?.some(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    );
    if (failed === 0 || finished) continue;
    const id = jobIdentity(job);
    if (!id) continue;
    const key = JSON.stringify([id.rollout, id.package, id.version]);
    out.set(key, (out.get(key) ?? 0) + failed);
  }
  return out;
}

function jobIdentity(job: V1Job): { rollout: string; package: string; version: string } | undefined {
  const raw = job.metadata?.annotations?.[`${KEELSON_PREFIX}package`];
  if (!raw) return undefined;
  try {
    const pkg = JSON.parse(raw) as { name?: string; version?: string; rollout?: string };
    if (!pkg.name || !pkg.version || !pkg.rollout) return undefined;
    return { rollout: pkg.rollout, package: pkg.name, version: pkg.version };
  } catch {
    return undefined;
  }
}

/**
 * Serves `GET /metrics`, `/healthz` (alive) and `/readyz` (503 with the reason while `readiness` says not ready) on
 * host:port; resolves once listening.
 */
export async function serveMetrics(
  metrics: KeelsonMetrics,
  address: string,
  readiness: { ready: boolean; reason: string } = { ready: true, reason: 'ready' },
): Promise<http.Server> {
  const [host, port] = splitAddress(address);
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (req.url === '/readyz') {
      res.writeHead(readiness.ready ? 200 : 503, { 'content-type': 'text/plain' }).end(`${readiness.reason}\n`);
      return;
    }
    if (req.url !== '/metrics' || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    metrics.text().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

export function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i), Number(address.slice(i + 1))];
}
