import type { NodeState, Status } from './node-state';
import { isNodeComplete, type ConfigUpdates } from './stage-machine';
import type { Package } from './manifests/skyhook';

// Status derivation (§5.3): a node's status for one rollout, and the rollout's aggregate status.

/** The status a node's own package entries show: complete, erroring, in_progress, or waiting when nothing ran yet. */
export function nodeStatusFromState(
  packages: Readonly<Record<string, Package>>,
  state: NodeState,
  configUpdates: ConfigUpdates = {},
): Status {
  if (isNodeComplete(packages, state, configUpdates)) return 'complete';
  const entries = Object.values(state);
  if (entries.some((e) => e.state === 'erroring')) return 'erroring';
  if (entries.some((e) => e.state === 'in_progress' || e.state === 'skipped')) return 'in_progress';
  return entries.length > 0 ? 'in_progress' : 'waiting';
}

export interface NodeStatusInput {
  /** The rollout's pause or disable, which the node mirrors. */
  rollout: { paused: boolean; disabled: boolean };
  /** The node's status from its entries (nodeStatusFromState) or `blocked` from the picker. */
  own: Status;
  /** A higher-priority rollout targets the node and is incomplete on it (§5.5). */
  waitingOnHigherPriority: boolean;
  /** The node has been admitted to a batch. */
  admitted: boolean;
}

/** §5.3 per node: disabled/paused mirror the rollout; an incomplete node behind a higher priority or a batch waits. */
export function nodeStatus(input: NodeStatusInput): Status {
  if (input.rollout.disabled) return 'disabled';
  if (input.rollout.paused) return 'paused';
  if (input.own === 'complete' || input.own === 'blocked') return input.own;
  if (input.waitingOnHigherPriority || !input.admitted) return 'waiting';
  return input.own;
}

export interface RolloutFlags {
  paused: boolean;
  disabled: boolean;
  policyMissing?: boolean;
}

/** §5.3 per rollout, over its nodes' statuses; zero nodes is complete. */
export function rolloutStatus(nodeStatuses: readonly Status[], flags: RolloutFlags): Status {
  if (flags.policyMissing) return 'blocked';
  const remaining = nodeStatuses.filter((s) => s !== 'complete');
  let status: Status;
  if (remaining.length === 0) status = 'complete';
  else if (remaining.includes('in_progress')) status = 'in_progress';
  else
    status =
      (['erroring', 'blocked', 'unknown', 'waiting'] as const).find((s) => remaining.every((r) => r === s)) ??
      'unknown';
  if (status === 'complete') return status;
  if (flags.disabled) return 'disabled';
  if (flags.paused) return 'paused';
  return status;
}
