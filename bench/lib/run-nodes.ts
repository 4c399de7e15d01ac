import type { KubeConfig, V1Node } from '@kubernetes/client-node';
import { nodeMetadataKeys } from '../../model';
import { keepWatching } from './fleet';

// One watch on a run's own nodes, read by both tools' runs alike:
// - the completion detector: the run is complete when every one of its nodes carries the per-rollout status label
//   `skyhook.nvidia.com/status_<rollout>=complete` and is schedulable again. The Keelson worker and the Skyhook
//   operator both write that label (the Skyhook-compatible node metadata), so the one detector serves both, and
//   neither tool is asked anything while the clock runs (no status query, no custom-resource status);
// - the cordon count of the budget sampler (spec.unschedulable, whoever set it).

export interface RunNode {
  status?: string;
  unschedulable: boolean;
}

export interface RunNodes {
  nodes: Map<string, RunNode>;
  /** Resolves with the local time (ms) every one of `count` nodes is first seen complete and schedulable. */
  untilComplete(count: number, timeoutMs: number): Promise<number>;
  /** How many nodes are complete now, for progress lines and timeout messages. */
  completeCount(): number;
  cordonedCount(): number;
  stop(): void;
}

export function statusLabel(rollout: string): string {
  return nodeMetadataKeys(rollout).status;
}

export async function watchRunNodes(kc: KubeConfig, selector: string, rollout: string): Promise<RunNodes> {
  const label = statusLabel(rollout);
  const nodes = new Map<string, RunNode>();
  const waiters: (() => void)[] = [];
  const stop = await keepWatching<V1Node>(kc, '/api/v1/nodes', { labelSelector: selector }, (type, node) => {
    const name = node.metadata?.name ?? '';
    if (type === 'DELETED') nodes.delete(name);
    else nodes.set(name, { status: node.metadata?.labels?.[label], unschedulable: node.spec?.unschedulable === true });
    // Checked at the event itself, so completion is timed by the watch event that shows it, not by a poll.
    for (const w of [...waiters]) w();
  });
  const done = (n: RunNode) => n.status === 'complete' && !n.unschedulable;
  const completeCount = () => [...nodes.values()].filter(done).length;
  return {
    nodes,
    completeCount,
    cordonedCount: () => [...nodes.values()].filter((n) => n.unschedulable).length,
    untilComplete(count, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (completeCount() < count) return;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(check), 1);
          resolve(Date.now());
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1);
          reject(new Error(`${completeCount()} of ${count} nodes complete and schedulable after ${timeoutMs / 1000}s`));
        }, timeoutMs);
        waiters.push(check);
        check();
      });
    },
    stop,
  };
}

/** One sample of the budget in use: nodes with stage work in flight and nodes cordoned, among the run's nodes. */
export interface BudgetSample {
  /** Seconds since the create call. */
  t: number;
  inFlight: number;
  cordoned: number;
}

export interface BudgetUse {
  budget: number;
  samplePeriodSeconds: number;
  samples: number;
  maxInFlight: number;
  maxCordoned: number;
  /** Every sample, so a breach can be located in time. */
  series: BudgetSample[];
}

export const SAMPLE_PERIOD_MS = 2000;

/**
 * Samples every 2 s, until stopped, how many of the run's nodes have stage work in flight (a stage Job or stage pod
 * that exists and is not finished, from the run's recorder) and how many are cordoned (from the node watch), and
 * calls `onSample` (the CPU meter's reading) at the same beat. The samples are read from watch caches: the sampler
 * sends no request of its own, so it adds nothing to either tool's request counts. A spell shorter than the period
 * can fall between two samples.
 */
export function sampleBudget(
  o: { budget: number; t0: number; inFlightNodes: () => Set<string>; runNodes: RunNodes },
  onSample?: () => void,
): { stop(): BudgetUse } {
  const series: BudgetSample[] = [];
  const take = () => {
    series.push({
      t: Math.round((Date.now() - o.t0) / 100) / 10,
      inFlight: o.inFlightNodes().size,
      cordoned: o.runNodes.cordonedCount(),
    });
    onSample?.();
  };
  take();
  const timer = setInterval(take, SAMPLE_PERIOD_MS);
  return {
    stop() {
      clearInterval(timer);
      take();
      return {
        budget: o.budget,
        samplePeriodSeconds: SAMPLE_PERIOD_MS / 1000,
        samples: series.length,
        maxInFlight: Math.max(0, ...series.map((s) => s.inFlight)),
        maxCordoned: Math.max(0, ...series.map((s) => s.cordoned)),
        series,
      };
    },
  };
}
