import { z } from 'zod';
import { DeploymentPolicySpecSchema } from './deployment-policy';
import { API_GROUPS, ROLLOUT_KIND_NAMES, type RolloutKind } from '../wire';
import { SkyhookSpecSchema } from './skyhook';

// RolloutSpec: what a workflow runs. A validated Skyhook or NodeWright manifest with its DeploymentPolicy resolved.
// Every transform in the schemas is idempotent, so a RolloutSpec re-validates through this schema (workflow inputs,
// HTTP bodies).

export const RolloutSpecSchema = z.object({
  name: z.string().min(1),
  kind: z.enum(ROLLOUT_KIND_NAMES),
  /** From the pause annotation of the manifest, or its spec.pause: the rollout starts paused. */
  paused: z.boolean(),
  /** From the disable annotation of the manifest. */
  disabled: z.boolean(),
  spec: SkyhookSpecSchema,
  /** null: no deploymentPolicy, the legacy interruptionBudget applies (§2.3). */
  policy: z.object({ name: z.string().min(1), spec: DeploymentPolicySpecSchema }).nullable(),
  /** Resolved per §2.2.6: the rollout's option, else the policy's flag, else false. */
  resetBatchStateOnCompletion: z.boolean(),
});
export type RolloutSpec = z.infer<typeof RolloutSpecSchema>;

/** The metadata key prefix of a rollout kind: `skyhook.nvidia.com/` or `nodewright.nvidia.com/`. */
export function metadataPrefix(kind: RolloutKind): string {
  return `${API_GROUPS[kind]}/`;
}
