import { z } from 'zod';
import type { ImagePolicy } from '../model/image-policy';

// The image policy's settings, shared by the worker (the rollout workflow checks specs with them, through an
// activity) and the API (which checks first): both must be given the same values.

const list = (item: z.ZodString) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item));

const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export const ImagePolicySettingsSchema = z.object({
  KEELSON_IMAGE_ALLOWED_PREFIXES: list(z.string().regex(/^\S+$/, 'must be image prefixes separated by commas'))
    .optional()
    .describe(
      'image prefixes (registry.example/team/) package images and agent overrides must start with, comma-separated; unset: any image',
    ),
  KEELSON_IMAGE_REQUIRE_DIGEST: z
    .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1')
    .default(false)
    .describe('packages must pin their image by containerSHA, agent overrides by @sha256: digest'),
  KEELSON_ENV_SECRET_ALLOWLIST: z
    .union([
      z.literal('-'),
      list(z.string().regex(SECRET_NAME, 'must be Secret names separated by commas, or - for none')),
    ])
    .optional()
    .describe('Secrets a package env valueFrom.secretKeyRef may name, comma-separated; -: none; unset: any'),
});
export type ImagePolicySettings = z.infer<typeof ImagePolicySettingsSchema>;

export function imagePolicyOf(s: ImagePolicySettings): ImagePolicy {
  const secrets = s.KEELSON_ENV_SECRET_ALLOWLIST;
  return {
    allowedPrefixes: s.KEELSON_IMAGE_ALLOWED_PREFIXES ?? [],
    requireDigest: s.KEELSON_IMAGE_REQUIRE_DIGEST,
    ...(secrets !== undefined && { allowedSecrets: secrets === '-' ? [] : secrets }),
  };
}
