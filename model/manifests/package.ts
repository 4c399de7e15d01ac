import { z } from 'zod';
import { parseDurationMs } from '../duration';
import { globMatches, isGlob } from '../glob';
import { parseQuantity } from '../quantity';
import { isValidVersion } from '../semver';
import { parseImageReference } from './image';
import { EnvVarSchema } from './kube';
import { describeValue, whenParsed } from './validation-error';

// One package of a Skyhook/NodeWright spec, with the webhook's per-package rules.

export const PACKAGE_NAME_PATTERN = /^[a-z][-a-z0-9]{0,41}[a-z]$/;
/** Upper bound of a stage timeout; longer than any sane stage, short enough to surface a hung one within a day. */
export const MAX_STAGE_TIMEOUT_MS = 24 * 3_600_000;

export const VersionSchema = z.string().superRefine((v, ctx) => {
  if (!isValidVersion(v)) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(v)} is not a semantic version (MAJOR[.MINOR[.PATCH[-PRERELEASE][+BUILD]]], e.g. 1.2.3 or 1.2)`,
    });
  }
});

/** A positive whole-second duration of at most 24h, e.g. "10m" or "90s". */
export const StageTimeoutSchema = z.string().superRefine((text, ctx) => {
  const ms = parseDurationMs(text);
  if (ms === undefined || ms < 1000 || ms > MAX_STAGE_TIMEOUT_MS || ms % 1000 !== 0) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(text)} is not a stage timeout (a duration of whole seconds from 1s to 24h, e.g. "10m" or "90s")`,
    });
  }
});

export const GracefulShutdownSchema = z.string().superRefine((text, ctx) => {
  if (parseDurationMs(text) === undefined) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} is not a duration (e.g. "30s", "1m30s")` });
  }
});

export const InterruptSchema = z.strictObject({
  type: z.enum(['service', 'reboot', 'noop', 'restartAllServices']),
  services: z.array(z.string().min(1)).optional(),
});
export type Interrupt = z.infer<typeof InterruptSchema>;

const RESOURCE_FIELDS = ['cpuRequest', 'cpuLimit', 'memoryRequest', 'memoryLimit'] as const;

export const ResourcesSchema = z
  .strictObject({
    cpuRequest: z.string().optional(),
    cpuLimit: z.string().optional(),
    memoryRequest: z.string().optional(),
    memoryLimit: z.string().optional(),
  })
  .superRefine((res, ctx) => {
    const set = RESOURCE_FIELDS.filter((f) => res[f] !== undefined);
    if (set.length === 0) return;
    if (set.length < RESOURCE_FIELDS.length) {
      const missing = RESOURCE_FIELDS.filter((f) => res[f] === undefined);
      ctx.addIssue({
        code: 'custom',
        message: `sets ${set.join(', ')} but not ${missing.join(', ')}: set all four resource fields or none`,
      });
      return;
    }
    const value: Record<string, number> = {};
    for (const field of RESOURCE_FIELDS) {
      const q = parseQuantity(res[field]!);
      if (q === undefined || q <= 0) {
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `${JSON.stringify(res[field])} is not a positive quantity (e.g. 500m, 1, 256Mi)`,
        });
      } else value[field] = q;
    }
    for (const [limit, request] of [
      ['cpuLimit', 'cpuRequest'],
      ['memoryLimit', 'memoryRequest'],
    ] as const) {
      if (value[limit] !== undefined && value[request] !== undefined && value[limit] < value[request]) {
        ctx.addIssue({
          code: 'custom',
          path: [limit],
          message: `${JSON.stringify(res[limit])} is below ${request} ${JSON.stringify(res[request])}: a limit may not be lower than its request`,
        });
      }
    }
  });
export type Resources = z.infer<typeof ResourcesSchema>;

const CONFIG_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

/**
 * NodeWright's explicit uninstall of a package (`uninstall.enabled`, `uninstall.apply`). Accepted and carried in the
 * spec so NodeWright manifests load; Keelson does not act on it yet (docs/manifests.md says what it does instead).
 */
export const UninstallSchema = z
  .strictObject({
    /** The package ships uninstall scripts. */
    enabled: z.boolean().default(false),
    /** Uninstall the package from every node while it stays in the spec, with its env and configMap. */
    apply: z.boolean().default(false),
  })
  .superRefine((u, ctx) => {
    if (u.apply && !u.enabled) {
      ctx.addIssue({
        code: 'custom',
        path: ['apply'],
        message:
          'is true but enabled is false: uninstall.apply needs uninstall.enabled true (the package has uninstall scripts)',
      });
    }
  });
export type Uninstall = z.infer<typeof UninstallSchema>;

// The cross-field rules run each as soon as the fields they read parsed (whenParsed), so a manifest's every error is
// reported at once.
export const PackageSchema = z
  .strictObject({
    name: z.string().optional(),
    version: VersionSchema,
    image: z.string(),
    containerSHA: z
      .string()
      .regex(/^sha256:[a-f0-9]{64}$/, { error: (iss) => `${describeValue(iss.input)} is not sha256:<64 hex digits>` })
      .optional(),
    agentImageOverride: z.string().optional(),
    interrupt: InterruptSchema.optional(),
    configInterrupts: z.record(z.string(), InterruptSchema).optional(),
    configMap: z.record(z.string(), z.string()).optional(),
    dependsOn: z.record(z.string(), z.string()).optional(),
    env: z.array(EnvVarSchema).optional(),
    resources: ResourcesSchema.optional(),
    gracefulShutdown: GracefulShutdownSchema.optional(),
    stageTimeout: StageTimeoutSchema.optional(),
    uninstall: UninstallSchema.optional(),
  })
  .superRefine((pkg, ctx) => {
    // A tag is allowed and replaced by the version, as Skyhook does (a warning says so); a digest belongs in
    // containerSHA, where Keelson pulls by it.
    const image = parseImageReference(pkg.image);
    if ('problem' in image) {
      ctx.addIssue({ code: 'custom', path: ['image'], message: `${JSON.stringify(pkg.image)} ${image.problem}` });
    } else if (image.digest !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['image'],
        message: `${JSON.stringify(pkg.image)} has a digest: give the repository in image and the digest in containerSHA`,
      });
    }
  }, whenParsed('image'))
  .superRefine((pkg, ctx) => {
    if (pkg.agentImageOverride === undefined) return;
    const agent = parseImageReference(pkg.agentImageOverride);
    const problem =
      'problem' in agent ? agent.problem : agent.tag === undefined && agent.digest === undefined ? 'has no tag' : '';
    if (problem) {
      ctx.addIssue({
        code: 'custom',
        path: ['agentImageOverride'],
        message: `${JSON.stringify(pkg.agentImageOverride)} ${problem} (a full image:tag is required)`,
      });
    }
  }, whenParsed('agentImageOverride'))
  .superRefine(
    (pkg, ctx) => {
      const configKeys = Object.keys(pkg.configMap ?? {});
      for (const key of configKeys) {
        if (!CONFIG_KEY.test(key)) {
          ctx.addIssue({
            code: 'custom',
            path: ['configMap', key],
            message: `key ${JSON.stringify(key)} is not a valid ConfigMap key (1-253 of letters, digits, '-', '_', '.')`,
          });
        }
      }
      for (const pattern of Object.keys(pkg.configInterrupts ?? {})) {
        const found = isGlob(pattern) ? configKeys.some((k) => globMatches(pattern, k)) : configKeys.includes(pattern);
        if (!found) {
          ctx.addIssue({
            code: 'custom',
            path: ['configInterrupts', pattern],
            message: isGlob(pattern)
              ? `glob ${JSON.stringify(pattern)} matches no configMap key`
              : `key ${JSON.stringify(pattern)} is not a configMap key`,
          });
        }
      }
    },
    whenParsed('configMap', 'configInterrupts'),
  )
  .superRefine((pkg, ctx) => {
    for (const [dep, version] of Object.entries(pkg.dependsOn ?? {})) {
      if (version === '') {
        ctx.addIssue({ code: 'custom', path: ['dependsOn', dep], message: `dependency ${dep} needs a version` });
      }
    }
  }, whenParsed('dependsOn'))
  // The stored image is the repository alone: the version is always the tag (Skyhook replaces a tag the same way).
  .transform((pkg) => {
    const image = parseImageReference(pkg.image);
    return { ...pkg, image: 'problem' in image ? pkg.image : image.repository };
  });
