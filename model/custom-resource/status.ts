import { z } from 'zod';
import { NodeStateSchema, StatusSchema } from '../node-state';

// The `.status` of a Skyhook or NodeWright custom resource, in the fields and forms Skyhook's operator writes, so
// `kubectl get skyhooks`, Argo CD's health checks and Skyhook's CLI read Keelson's status as they read the operator's.

/** A metav1.Condition, with the bounds the Kubernetes API puts on each field. */
export const ConditionSchema = z.object({
  type: z
    .string()
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    ),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: z.iso.datetime(),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof ConditionSchema>;

export const RolloutResourceStatusSchema = z.object({
  /** The rollout's aggregate status over its nodes. */
  status: StatusSchema.optional(),
  /** Each target node's package entries, as in its nodeState annotation. */
  nodeState: z.record(z.string(), NodeStateSchema).optional(),
  /** Each target node's status for this rollout. */
  nodeStatus: z.record(z.string(), StatusSchema).optional(),
  /** `<complete>/<target>` nodes, for the printer column. */
  completeNodes: z.string().optional(),
  /** Nodes in_progress or erroring, for the printer column. */
  nodesInProgress: z.int().min(0).optional(),
  /** Each package of the spec as `name:version`, sorted, comma separated, for the printer column. */
  packageList: z.string().optional(),
  /** The metadata.generation the status was written for. */
  observedGeneration: z.int().min(0).optional(),
  // A list map keyed by type, as Kubernetes' conditions are: a server-side apply owns one condition, not the list.
  conditions: z
    .array(ConditionSchema)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
    .optional(),
});
export type RolloutResourceStatus = z.infer<typeof RolloutResourceStatusSchema>;
