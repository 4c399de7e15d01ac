import { z } from 'zod';
import { ObjectNameSchema } from './manifests/kube';

// `node ignore` and `node unignore` (Skyhook's `kubectl skyhook node ignore`): the request, which names nodes or a
// label selector, and the outcome on each node. Shared by the API and the CLI.

export const IgnoreActionSchema = z.enum(['ignore', 'unignore']);
export type IgnoreAction = z.infer<typeof IgnoreActionSchema>;

export const IgnoreBodySchema = z
  .strictObject({
    nodes: z.array(ObjectNameSchema).max(1000, 'names more than 1000 nodes').optional(),
    selector: z
      .string()
      .trim()
      .min(1, 'must not be empty (an empty selector matches every node)')
      .max(1024, 'is longer than 1024 characters')
      .regex(/^[A-Za-z0-9./_!=,()\s-]*$/, 'must be a Kubernetes label selector (e.g. team=gpu,tier!=canary)')
      .optional(),
  })
  .refine((b) => (b.nodes?.length ?? 0) > 0 || b.selector !== undefined, {
    message: 'name at least one node, or a selector',
    path: ['nodes'],
  });
export type IgnoreBody = z.infer<typeof IgnoreBodySchema>;

/** What happened on one node: its label changed, it already was as asked, or the change failed (`error`). */
export const IgnoreOutcomeSchema = z.enum([
  'ignored',
  'already ignored',
  'unignored',
  'not ignored',
  'not found',
  'failed',
]);
export type IgnoreOutcome = z.infer<typeof IgnoreOutcomeSchema>;

export const IgnoreResultSchema = z.object({
  node: z.string(),
  outcome: IgnoreOutcomeSchema,
  error: z.string().optional(),
});
export type IgnoreResult = z.infer<typeof IgnoreResultSchema>;

export const IgnoreAnswerSchema = z.object({
  action: IgnoreActionSchema,
  actor: z.string(),
  /** The labels set to `true` (ignore) or removed (unignore). */
  labels: z.array(z.string()),
  results: z.array(IgnoreResultSchema),
});
export type IgnoreAnswer = z.infer<typeof IgnoreAnswerSchema>;

/** The outcome on a node: `already` when its ignore labels were already as the action asks, so nothing changed. */
export function ignoreOutcome(action: IgnoreAction, already: boolean): IgnoreOutcome {
  if (action === 'ignore') return already ? 'already ignored' : 'ignored';
  return already ? 'not ignored' : 'unignored';
}

/** True when every node's outcome is a success. */
export const allSucceeded = (results: readonly IgnoreResult[]) =>
  results.every((r) => r.outcome !== 'not found' && r.outcome !== 'failed');
