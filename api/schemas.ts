import { z } from 'zod';
import { ObjectNameSchema, StageSchema } from '../model';

// Request schemas of the API (path parameters and small bodies). Manifests are validated by model/.

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

/** `GET /v1/nodes/:node/logs`: which package stage's pod, which container, how much, and whether to follow. */
export const LogsQuerySchema = z.strictObject({
  rollout: ObjectNameSchema,
  package: z.string().min(1, 'must not be empty').max(253, 'is longer than 253 characters'),
  stage: StageSchema.optional(),
  container: z.string().min(1, 'must not be empty').max(253, 'is longer than 253 characters').optional(),
  tail: z.coerce
    .number({ message: 'must be a whole number of lines from 1 to 100000' })
    .int('must be a whole number of lines from 1 to 100000')
    .min(1, 'must be a whole number of lines from 1 to 100000')
    .max(100_000, 'must be a whole number of lines from 1 to 100000')
    .optional(),
  follow: z.enum(['true', 'false'], { message: 'must be true or false' }).optional(),
});
export type LogsQuery = z.infer<typeof LogsQuerySchema>;
