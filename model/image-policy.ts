import { z } from 'zod';
import type { RolloutSpec } from './manifests/rollout-spec';
import type { ValidationError } from './manifests/validation-error';

// Which images a rollout may run and which Secrets its env may read, from the operator's settings (the API's and the
// worker's), never from the rollout's starter. An unset list allows anything of its kind.

export const ImagePolicySchema = z.object({
  /** Image reference prefixes (`registry.example/team/`); empty: any image. */
  allowedPrefixes: z.array(z.string().min(1)),
  /** Package images must be pinned by containerSHA, agent overrides by `@sha256:` digest. */
  requireDigest: z.boolean(),
  /** Secret names env `valueFrom.secretKeyRef` may name; undefined: any Secret. */
  allowedSecrets: z.array(z.string().min(1)).optional(),
});
export type ImagePolicy = z.infer<typeof ImagePolicySchema>;

export const OPEN_IMAGE_POLICY: ImagePolicy = { allowedPrefixes: [], requireDigest: false };

/**
 * A prefix matches the reference itself or ends where a path, tag or digest begins, so `registry.example` does not
 * allow `registry.example.evil/x`.
 */
export function imageAllowed(image: string, prefixes: readonly string[]): boolean {
  if (prefixes.length === 0) return true;
  return prefixes.some(
    (p) => image === p || (image.startsWith(p) && (p.endsWith('/') || ['/', ':', '@'].includes(image[p.length]!))),
  );
}

function secretOf(valueFrom: Record<string, unknown> | undefined): string | undefined {
  const ref = valueFrom?.secretKeyRef as { name?: unknown } | undefined;
  return ref === undefined ? undefined : typeof ref.name === 'string' ? ref.name : '';
}

/** Every breach of the policy in a valid rollout spec, each naming the field, the value and what is allowed. */
export function imagePolicyErrors(
  rollout: RolloutSpec,
  policy: ImagePolicy,
  base = 'spec.packages',
): ValidationError[] {
  const errors: ValidationError[] = [];
  const allowed = `allowed: ${policy.allowedPrefixes.join(', ')} (KEELSON_IMAGE_ALLOWED_PREFIXES)`;
  for (const [key, pkg] of Object.entries(rollout.spec.packages)) {
    const at = `${base}.${key}`;
    const image = pkg.containerSHA ? `${pkg.image}@${pkg.containerSHA}` : `${pkg.image}:${pkg.version}`;
    if (!imageAllowed(image, policy.allowedPrefixes)) {
      errors.push({
        path: `${at}.image`,
        message: `${JSON.stringify(pkg.image)} is outside the image policy; ${allowed}`,
      });
    }
    if (policy.requireDigest && !pkg.containerSHA) {
      errors.push({
        path: `${at}.containerSHA`,
        message: 'is required: the image policy pins images by digest (KEELSON_IMAGE_REQUIRE_DIGEST)',
      });
    }
    const agent = pkg.agentImageOverride;
    if (agent !== undefined && !imageAllowed(agent, policy.allowedPrefixes)) {
      errors.push({
        path: `${at}.agentImageOverride`,
        message: `${JSON.stringify(agent)} is outside the image policy; ${allowed}`,
      });
    }
    if (agent !== undefined && policy.requireDigest && !agent.includes('@sha256:')) {
      errors.push({
        path: `${at}.agentImageOverride`,
        message: `${JSON.stringify(agent)} has no @sha256: digest, which the image policy requires (KEELSON_IMAGE_REQUIRE_DIGEST)`,
      });
    }
    const secrets = policy.allowedSecrets;
    (pkg.env ?? []).forEach((e, i) => {
      const secret = secretOf(e.valueFrom);
      if (secrets === undefined || secret === undefined || secrets.includes(secret)) return;
      errors.push({
        path: `${at}.env[${i}].valueFrom.secretKeyRef.name`,
        message:
          `${JSON.stringify(secret)} is not an allowed Secret; allowed: ${secrets.join(', ') || 'none'} ` +
          '(KEELSON_ENV_SECRET_ALLOWLIST)',
      });
    });
  }
  return errors;
}
