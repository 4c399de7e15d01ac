import { z } from 'zod';

// The subset of core/v1 types a package manifest carries; passed through to pods unchanged.

/** Kubernetes object names (rollouts, nodes): DNS subdomains. */
export const ObjectNameSchema = z
  .string()
  .max(253, 'is longer than 253 characters')
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a DNS subdomain: lowercase letters, digits, "-" and "."');

export const EnvVarSchema = z.strictObject({
  // Kubernetes' own rule (RelaxedEnvironmentVariableValidation, GA in 1.34): printable ASCII other than '='. Checked
  // here so such a manifest is refused up front instead of failing every node's Job creation later.
  name: z
    .string()
    .min(1)
    .regex(/^[\x20-\x3c\x3e-\x7e]+$/, {
      error: (iss) =>
        `${JSON.stringify(String(iss.input).slice(0, 64))} is not an environment variable name: printable ASCII characters other than '='`,
    }),
  value: z.string().optional(),
  valueFrom: z.record(z.string(), z.unknown()).optional(),
});
export type EnvVar = z.infer<typeof EnvVarSchema>;

export const TolerationSchema = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.enum(['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.int().optional(),
});
export type Toleration = z.infer<typeof TolerationSchema>;
