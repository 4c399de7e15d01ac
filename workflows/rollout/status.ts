import {
  DEFAULT_COMPARTMENT,
  initialBatchState,
  nodeStatus,
  rolloutStatus,
  type AssignedCompartment,
  type RolloutSpec,
  type Status,
} from '../../model';
import type { CompartmentBatch } from './batch-admission';
import type { NodeStatusView, PackageStatus, RolloutChange, RolloutStatusView } from '../messages';
import type { PermitState } from './interrupt-permits';
import type { ReportedProgress } from './progress';

// How the rollout sees its nodes: the status batches judge by, and the Skyhook-compatible status view (§5.3).

export interface RolloutNode {
  labels: Record<string, string>;
  /** Ignore label or an untolerated taint (§5.2). */
  blocked: boolean;
  /** Still carries the runtime-required taint (§5.6). */
  runtimeTainted: boolean;
  /** The spec generation the node was last admitted with; 0 = never. */
  admittedGeneration: number;
  /** The node workflow's last report (what it wrote to the Node), its packages' progress alone. */
  reported?: ReportedProgress;
}

/** What the rollout workflow knows, minus its outbox: everything the status is computed from. */
export interface RolloutView {
  generation: number;
  /** The RolloutSpec of the current generation; its `spec` is the Skyhook spec (packages, selectors, ...). */
  rollout: RolloutSpec;
  paused: boolean;
  disabled: boolean;
  nodes: Record<string, RolloutNode>;
  /** Node names in list order (creation order, oldest first): batches pick in this order. */
  order: string[];
  batches: Record<string, CompartmentBatch>;
  permits: PermitState;
  /** Nodes have been listed at least once: before that, zero nodes means unknown, not complete. */
  listed: boolean;
  lastChange?: RolloutChange;
}

/**
 * A node's status as batches see it: waiting until admitted for this generation, in_progress until the node has
 * reported on it, and until it settles (complete, erroring, blocked) it is work in flight: a paused node, or one
 * waiting for a higher-priority rollout, holds the batch barrier.
 */
export function batchStatus(s: RolloutView, node: string): Status {
  const n = s.nodes[node]!;
  if (n.blocked) return 'blocked';
  if (n.admittedGeneration !== s.generation) return 'waiting';
  if (!n.reported || n.reported.generation < s.generation) return 'in_progress';
  const st = n.reported.status;
  return st === 'complete' || st === 'erroring' || st === 'blocked' ? st : 'in_progress';
}

function packagesOf(rollout: RolloutSpec, state: ReportedProgress['state']): Record<string, PackageStatus> {
  const out: Record<string, PackageStatus> = {};
  // The spec version's entry wins over an old one still being uninstalled.
  const entries = Object.values(state).sort(
    (a, b) =>
      Number(rollout.spec.packages[a.name]?.version === a.version) -
      Number(rollout.spec.packages[b.name]?.version === b.version),
  );
  for (const e of entries)
    out[e.name] = { version: e.version, stage: e.stage, state: e.state, restarts: e.restarts ?? 0 };
  return out;
}

/**
 * The status view. `asked`: the answer to a status query, where a node done with its packages is in progress until
 * its runtime-required taint is removed (the pass's last step), so that a reader who sees `complete` may schedule on
 * it. The workflow's own decisions (batch resets, search attributes) judge by the packages alone.
 */
export function rolloutStatusView(
  s: RolloutView,
  compartments: readonly AssignedCompartment[],
  asked = false,
): RolloutStatusView {
  const flags = { paused: s.paused, disabled: s.disabled };
  const nodes: Record<string, NodeStatusView> = {};
  const taintPending = (node: string) => asked && s.rollout.spec.runtimeRequired && s.nodes[node]!.runtimeTainted;
  for (const c of compartments) {
    for (const node of c.nodes) {
      const own = batchStatus(s, node);
      const reported = s.nodes[node]!.reported;
      const shown = own === 'in_progress' && reported?.generation === s.generation ? reported.status : own;
      nodes[node] = {
        status: nodeStatus({
          rollout: flags,
          own: shown === 'complete' && taintPending(node) ? 'in_progress' : shown,
          waitingOnHigherPriority: false,
          admitted: own !== 'waiting',
        }),
        compartment: c.name,
        packages: reported ? packagesOf(s.rollout, reported.state) : {},
      };
    }
  }
  const statuses = Object.values(nodes).map((n) => n.status);
  const complete = statuses.filter((st) => st === 'complete').length;
  const compartmentStatuses: RolloutStatusView['compartmentStatuses'] = {};
  for (const c of compartments) {
    if (c.nodes.length === 0 && c.name !== DEFAULT_COMPARTMENT) continue;
    const st = c.nodes.map((n) => nodes[n]!.status);
    const done = st.filter((x) => x === 'complete').length;
    compartmentStatuses[c.name] = {
      matched: c.nodes.length,
      ceiling: c.ceiling,
      inProgress: st.filter((x) => x === 'in_progress' || x === 'erroring').length,
      completed: done,
      progressPercent: c.nodes.length === 0 ? 100 : Math.floor((done * 100) / c.nodes.length),
      batchState: s.batches[c.name]?.state ?? initialBatchState(),
    };
  }
  return {
    name: s.rollout.name,
    status: s.listed ? rolloutStatus(statuses, flags) : 'unknown',
    generation: s.generation,
    paused: s.paused,
    disabled: s.disabled,
    nodes,
    compartmentStatuses,
    permits: Object.keys(s.permits.holders).sort(),
    nodesInProgress: statuses.filter((x) => x === 'in_progress' || x === 'erroring').length,
    completeNodes: `${complete}/${statuses.length}`,
    packageList: Object.values(s.rollout.spec.packages)
      .map((p) => `${p.name}:${p.version}`)
      .sort()
      .join(','),
    ...(s.lastChange && { lastChange: s.lastChange }),
  };
}
