import { z } from 'zod';
import { StageSchema } from '../model';

// Request schemas of the API (path parameters and small bodies). Manifests are validated by model/.

/** Rollout (Kubernetes object) and node names: DNS subdomains. */
export const ObjectNameSchema = z
  .string()
  .max(253, 'is longer than 253 characters')
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a DNS subdomain: lowercase letters, digits, "-" and "."');

export const NameParamsSchema = z.object({ name: ObjectNameSchema });
export const NodeParamsSchema = z.object({ node: ObjectNameSchema });

const text = (what: string) =>
  z.string().trim().min(1, `must not be empty (${what})`).max(1024, 'is longer than 1024 characters');

export const ControlBodySchema = z.strictObject({
  reason: text('why'),
  /**
   * Who the caller acts for (the CLI sends `user@host`): kept as `onBehalfOf`, not verified. The actor is always
   * the token's name.
   */
  actor: text('who').optional(),
});

export const RerunBodySchema = z.strictObject({
  rollout: ObjectNameSchema,
  package: z.string().min(1, 'must not be empty').max(253),
  stage: StageSchema.optional(),
});

export const ResetBodySchema = z.strictObject({ rollout: ObjectNameSchema });

export const ErrorBodySchema = z.object({
  error: z.enum([
    'invalid',
    'unauthorized',
    'forbidden',
    'not_found',
    'conflict',
    'unavailable',
    'too_large',
    'unsupported',
    'internal',
  ]),
  message: z.string(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
