import { fromCarried, toCarried, type CarriedForm } from '../../model/carried-rollout';
import type { DesireArgs, NodeView } from '../messages';
import type { NodeRollout } from './node-rollout';

// What the node workflow hands its next run at continue-as-new, and how that run reads it.

export interface NodeCarried {
  rollouts: Record<string, NodeRollout>;
  /** Per rollout, the annotation value last written (the writer's test-then-replace precondition). */
  previous: Record<string, string | null>;
  /** The oldest rollout whose cordon is on the node (shown in status). */
  cordonedBy: string | null;
  /** Every rollout whose cordon is on the node, oldest first: each is its own (§4), and goes with its rollout. */
  cordons?: string[];
  interrupt: NodeView['interrupt'];
  /** The boot ID seen before the running interrupt, so a reboot is recognised even across continue-as-new. */
  bootId: string | null;
  /** Stage runs numbered so far: a run's ID tells its Job from a stale one of the same name (G11). */
  runSeq?: number;
  /** Rollouts being forgotten, and desires of rollouts started again under their names, across continue-as-new. */
  forgetting?: string[];
  reborn?: Record<string, DesireArgs>;
  /** Progress reports sent so far: with the write's time, their order, so the rollout drops a late older one. */
  reports?: number;
  /** Node-state writes ordered so far: each write's order on the Node, so a stale copy of a write is known (G1). */
  writes?: number;
}

/** The carried state as continue-as-new passes it: each rollout's entry in the form every build reads. */
export type CarriedNode = Omit<NodeCarried, 'rollouts'> & { rollouts: Record<string, CarriedForm<NodeRollout>> };

export function readCarried(carried: CarriedNode): NodeCarried {
  const rollouts = Object.entries(carried.rollouts).map(([name, r]) => [name, fromCarried(r)] as const);
  return { ...carried, rollouts: Object.fromEntries(rollouts) };
}

/**
 * The state to carry. The forgets under way and the desires waiting for them are the run's live ones: what the run
 * was started with is stale once those forgets are done, and carried again it would forget a rollout started anew
 * under the name, or hold its desire for ever.
 */
export function carriedForm(
  s: NodeCarried,
  live: { forgetting: Set<string>; reborn: Map<string, DesireArgs> },
): CarriedNode {
  const rest: NodeCarried = { ...s };
  delete rest.forgetting;
  delete rest.reborn;
  const rollouts = Object.entries(s.rollouts).map(([name, r]) => [name, toCarried(r)] as const);
  return {
    ...rest,
    rollouts: Object.fromEntries(rollouts),
    ...(live.forgetting.size > 0 && { forgetting: [...live.forgetting] }),
    ...(live.reborn.size > 0 && { reborn: Object.fromEntries(live.reborn) }),
  };
}
