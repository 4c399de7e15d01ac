import { parseDurationMs } from './duration';
import type { RolloutSpec } from './manifests/rollout-spec';

// Apart from the rollout spec's schema, which only the rollout workflow evaluates: a node workflow reads the timeout
// without instantiating the schemas (docs/architecture.md, "Changing a workflow").

/** When neither the package nor the rollout sets one (NodeWright's JOB_STAGE_TIMEOUT default). */
export const DEFAULT_STAGE_TIMEOUT = '1h';

/** Seconds a stage of this package may run: the package's stageTimeout, else the rollout's, else 1h. */
export function stageTimeoutSeconds(rollout: RolloutSpec, packageName: string): number {
  const text = rollout.spec.packages[packageName]?.stageTimeout ?? rollout.spec.stageTimeout ?? DEFAULT_STAGE_TIMEOUT;
  return Math.ceil(parseDurationMs(text)! / 1000);
}
