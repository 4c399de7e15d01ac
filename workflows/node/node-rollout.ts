import { changedConfigKeys } from '../../model/config-changes';
import type { RolloutSpec } from '../../model/manifests/rollout-spec';
import type { Package } from '../../model/manifests/skyhook';
import type { RolloutOnNode } from '../../model/node-decide';
import { entryKey, type NodeState, type PackageEntry, type Status } from '../../model/node-state';
import { applyConfigChange, applyVersionChanges, inConfigCycle } from '../../model/stage-machine';
import { stageTimeoutSeconds } from '../../model/stage-timeout';
import { nodeStatus, nodeStatusFromState } from '../../model/status';
import type { NodeSettings } from '../messages';
import type { StageClock } from './stage-run';

// What a node workflow holds for one rollout that targets it, and how a new desired spec changes it.

export interface NodeRollout {
  /** The RolloutSpec of the rollout's last desire; its `spec` is the Skyhook spec (packages, drain, ...). */
  rollout: RolloutSpec;
  /** DesireArgs.rolloutUid: absent for rollouts that started before it. */
  rolloutUid?: string;
  generation: number;
  settings: NodeSettings;
  state: NodeState;
  /** Changed configMap keys of the current config cycle per package (Skyhook's status.configUpdates). */
  configUpdates: Record<string, string[]>;
  paused: boolean;
  disabled: boolean;
  /** A higher-priority rollout is incomplete on this node (§5.5). */
  waiting: boolean;
  /** The node's existing annotation has been read (the first write must test against it). */
  initialized: boolean;
  /** Workflow time each running stage first started, by run key: the stage timeout counts from there (G4). */
  stageStarted: Record<string, number>;
  /** Each running stage's run ID, by run key: its Job carries it, so a stale Job is never adopted (G11). */
  stageRunIds?: Record<string, string>;
  /** Each running stage's clock, by run key: pauses do not count against its timeout (G14). */
  stageClocks?: Record<string, StageClock>;
  /** The last permit that came with a desire: the same desire delivered again does not hand it over twice (G16). */
  admissionPermit?: string;
}

export function newNodeRollout(
  rollout: RolloutSpec,
  generation: number,
  settings: NodeSettings,
  rolloutUid?: string,
): NodeRollout {
  return {
    ...(rolloutUid && { rolloutUid }),
    rollout,
    generation,
    settings,
    state: {},
    configUpdates: {},
    paused: rollout.paused,
    disabled: rollout.disabled,
    waiting: false,
    initialized: false,
    stageStarted: {},
  };
}

/**
 * A new generation: version changes become upgrade or uninstall (§3.7), configMap changes a config run (§3.6). With
 * `guards` (model/node-decide.ts), only a package past its apply or upgrade enters a config cycle: one still installing
 * takes the new configMap in its own config stage and keeps its own interrupt, and an erroring apply is rerun, never
 * skipped to config; a downgrade's placeholder the spec no longer wants is dropped.
 */
export function applyNewSpec(
  r: NodeRollout,
  rollout: RolloutSpec,
  generation: number,
  settings: NodeSettings,
  guards: boolean,
): void {
  const before = r.rollout.spec.packages;
  const { state, changed } = applyVersionChanges(rollout.spec.packages, r.state, guards);
  const configUpdates = { ...r.configUpdates };
  for (const name of changed) delete configUpdates[name];
  let next = state;
  for (const pkg of Object.values(rollout.spec.packages)) {
    const keys = changedConfigKeys(before[pkg.name], pkg);
    if (keys.length === 0) continue;
    if (guards && !inConfigCycle(next[entryKey(pkg.name, pkg.version)])) continue;
    configUpdates[pkg.name] = keys;
    next = applyConfigChange(next, pkg);
  }
  Object.assign(r, { rollout, generation, settings, state: next, configUpdates });
}

/**
 * Failed stages of packages that a new spec changes at the same version (env, image, configMap, ...): they run again
 * with it, as Skyhook replaces a failing package pod that no longer matches the spec (§3.6, §3.8). Not the interrupt:
 * its Job is the node's merged one, not the package's.
 */
export function fixedStages(
  before: Readonly<Record<string, Package>>,
  after: Readonly<Record<string, Package>>,
  state: NodeState,
): PackageEntry[] {
  return Object.values(state).filter((e) => {
    const pkg = after[e.name];
    return (
      e.state === 'erroring' &&
      e.stage !== 'interrupt' &&
      pkg?.version === e.version &&
      JSON.stringify(before[e.name]) !== JSON.stringify(pkg)
    );
  });
}

/** Seconds a stage of this package may run: its stageTimeout, the rollout's, the worker's default, else 1h. */
export function stageTimeoutOf(r: NodeRollout, packageName: string): number {
  const own = r.rollout.spec.packages[packageName]?.stageTimeout ?? r.rollout.spec.stageTimeout;
  const fallback = r.settings.defaultStageTimeoutSeconds;
  return own === undefined && fallback !== undefined ? fallback : stageTimeoutSeconds(r.rollout, packageName);
}

export function rolloutNodeStatus(r: NodeRollout): Status {
  return nodeStatus({
    rollout: { paused: r.paused, disabled: r.disabled },
    own: nodeStatusFromState(r.rollout.spec.packages, r.state, r.configUpdates),
    waitingOnHigherPriority: r.waiting,
    admitted: true,
  });
}

/** Order across rollouts on one node: priority, then name (§5.5). */
export function byPriority(rollouts: Record<string, NodeRollout>): string[] {
  return Object.keys(rollouts).sort(
    (a, b) => rollouts[a]!.rollout.spec.priority - rollouts[b]!.rollout.spec.priority || (a < b ? -1 : a > b ? 1 : 0),
  );
}

/** What decideNode sees of each rollout on the node, in priority order. */
export function rolloutsOnNode(
  rollouts: Record<string, NodeRollout>,
  forgetting: ReadonlySet<string>,
): RolloutOnNode[] {
  return byPriority(rollouts).map((name) => {
    const r = rollouts[name]!;
    const { state, configUpdates, paused, disabled, waiting, initialized } = r;
    const packages = r.rollout.spec.packages;
    return {
      name,
      packages,
      state,
      configUpdates,
      paused,
      disabled,
      waiting,
      initialized,
      forgetting: forgetting.has(name),
    };
  });
}
