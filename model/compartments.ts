import { selectorMatches, type Labels } from './label-selector';
import {
  DEFAULT_COMPARTMENT,
  strategyParams,
  type DeploymentPolicySpec,
  type StrategyParams,
} from './manifests/deployment-policy';
import type { RolloutSpec } from './manifests/rollout-spec';
import type { InterruptionBudget } from './manifests/skyhook';

// Compartments (§2.2): ceilings, the legacy interruptionBudget mapping (§2.3), and the assignment of nodes to
// compartments when selectors overlap (§2.2.5).

/** A budget as the ceiling computation reads it; the legacy budget may hold 0. */
export type BudgetLike = { percent?: number | null; count?: number | null };

/** §2.2.1: count as is; a percent of the matched nodes, at least 1, or 0 when nothing matched. */
export function ceiling(budget: BudgetLike, matched: number): number {
  if (budget.count != null) return budget.count;
  if (matched === 0) return 0;
  return Math.max(1, Math.floor((matched * (budget.percent ?? 100)) / 100));
}

export const LEGACY_POLICY_NAME = 'legacy';

/** §2.3: no deploymentPolicy means one fixed-strategy compartment `__default__` sized by interruptionBudget. */
export function legacyPolicySpec(budget: InterruptionBudget | undefined, nodeCount: number): DeploymentPolicySpec {
  const initialBatch =
    budget?.count != null
      ? Math.max(1, Math.min(nodeCount, budget.count))
      : Math.max(1, Math.floor((nodeCount * (budget?.percent ?? 100)) / 100));
  return {
    resetBatchStateOnCompletion: false,
    default: {
      budget: budget?.count != null ? { count: budget.count } : { percent: budget?.percent ?? 100 },
      strategy: { fixed: { initialBatch, batchThreshold: 100, failureThreshold: null, safetyLimit: 50 } },
    },
    compartments: [],
  };
}

/** The policy a rollout runs under: its DeploymentPolicy, or the legacy mapping for this many nodes. */
export function effectivePolicy(rollout: RolloutSpec, nodeCount: number): { name: string; spec: DeploymentPolicySpec } {
  return (
    rollout.policy ?? { name: LEGACY_POLICY_NAME, spec: legacyPolicySpec(rollout.spec.interruptionBudget, nodeCount) }
  );
}

export interface NodeInfo {
  name: string;
  labels: Labels;
}

export interface AssignedCompartment {
  name: string;
  budget: BudgetLike;
  strategy?: StrategyParams;
  /** Over the nodes assigned to this compartment (what compartmentStatuses reports). */
  ceiling: number;
  /** In the order given (Keelson passes creation order, oldest first). */
  nodes: string[];
}

const SAFETY: Record<StrategyParams['type'], number> = { fixed: 0, linear: 1, exponential: 2 };

/**
 * Every compartment of the policy, `__default__` last, each with the nodes assigned to it. A node matching several
 * selectors goes to the safest strategy, then the smaller ceiling (over all nodes its selector matches), then the
 * smaller name (§2.2.5).
 */
export function assignCompartments(nodes: readonly NodeInfo[], policy: DeploymentPolicySpec): AssignedCompartment[] {
  const candidates = policy.compartments.map((c) => {
    const strategy = c.strategy ? strategyParams(c.strategy) : undefined;
    const matched = nodes.filter((n) => selectorMatches(c.selector, n.labels)).length;
    return { compartment: c, strategy, selectorCeiling: ceiling(c.budget, matched) };
  });
  const rank = (c: (typeof candidates)[number]) => (c.strategy ? SAFETY[c.strategy.type] : 3);
  const assigned = new Map<string, string[]>();
  // One pass over the nodes, each tested against the selectors once more: the rollout calls this on every change of
  // its node list or spec, at thousands of nodes.
  for (const node of nodes) {
    const best = candidates
      .filter((c) => selectorMatches(c.compartment.selector, node.labels))
      .sort(
        (a, b) =>
          rank(a) - rank(b) ||
          a.selectorCeiling - b.selectorCeiling ||
          (a.compartment.name < b.compartment.name ? -1 : a.compartment.name > b.compartment.name ? 1 : 0),
      )[0];
    const name = best ? best.compartment.name : DEFAULT_COMPARTMENT;
    const members = assigned.get(name);
    if (members) members.push(node.name);
    else assigned.set(name, [node.name]);
  }
  const all = [
    ...candidates.map((c) => ({ name: c.compartment.name, budget: c.compartment.budget, strategy: c.strategy })),
    { name: DEFAULT_COMPARTMENT, budget: policy.default.budget, strategy: strategyParams(policy.default.strategy) },
  ];
  return all.map((c) => {
    const members = assigned.get(c.name) ?? [];
    return { ...c, ceiling: ceiling(c.budget, members.length), nodes: members };
  });
}
