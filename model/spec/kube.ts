import { z } from 'zod';

// The subset of core/v1 types a package manifest carries; passed through to pods unchanged.

export const EnvVarSchema = z.strictObject({
  name: z.string().min(1),
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
