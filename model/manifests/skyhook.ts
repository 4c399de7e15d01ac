import { z } from 'zod';
import { findCycle } from '../dependency-graph';
import { LabelSelectorSchema } from '../label-selector';
import { ROLLOUT_KIND_NAMES, ROLLOUT_KINDS } from '../wire';
import { TolerationSchema } from './kube';
import { PACKAGE_NAME_PATTERN, PackageSchema, StageTimeoutSchema } from './package';
import { DrainOptionsSchema } from '../drain';
import { describeValue, whenParsed } from './validation-error';

// The spec of a Skyhook or NodeWright custom resource (§2.1), with the validating webhook's cross-field rules and
// Keelson's additions: dependsOn cycles are rejected, a rollout-level default stageTimeout, and drain options.

export const DEFAULT_PRIORITY = 200;

export const InterruptionBudgetSchema = z
  .strictObject({
    percent: z.int().min(0).max(100).nullish(),
    count: z.int().min(0).nullish(),
  })
  .superRefine((b, ctx) => {
    if (b.percent != null && b.count != null) {
      ctx.addIssue({
        code: 'custom',
        message: `sets percent ${b.percent} and count ${b.count}: set at most one`,
      });
    }
  });
export type InterruptionBudget = z.infer<typeof InterruptionBudgetSchema>;

const PackagesSchema = z
  .record(z.string(), PackageSchema)
  .superRefine((packages, ctx) => {
    for (const [key, pkg] of Object.entries(packages)) {
      if (!PACKAGE_NAME_PATTERN.test(key)) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `package name ${JSON.stringify(key)} must match ${PACKAGE_NAME_PATTERN.source} (2-43 lowercase letters, digits, '-')`,
        });
      }
      if (pkg.name !== undefined && pkg.name !== key) {
        ctx.addIssue({
          code: 'custom',
          path: [key, 'name'],
          message: `${JSON.stringify(pkg.name)} differs from its key ${JSON.stringify(key)}: leave name unset`,
        });
      }
      for (const [dep, version] of Object.entries(pkg.dependsOn ?? {})) {
        const target = packages[dep];
        if (version === '') continue;
        if (!target) {
          ctx.addIssue({
            code: 'custom',
            path: [key, 'dependsOn', dep],
            message: `depends on ${dep}@${version}, but the spec has no package ${JSON.stringify(dep)}`,
          });
        } else if (target.version !== version) {
          ctx.addIssue({
            code: 'custom',
            path: [key, 'dependsOn', dep],
            message: `depends on ${dep}@${version}, but the spec has ${dep}@${target.version}`,
          });
        }
      }
    }
    const cycle = findCycle(packages);
    if (cycle) {
      ctx.addIssue({
        code: 'custom',
        path: [cycle[0]!, 'dependsOn'],
        message: `dependsOn has a cycle ${cycle.join(' -> ')}: packages on a cycle could never run`,
      });
    }
  })
  .transform((packages) =>
    Object.fromEntries(Object.entries(packages).map(([key, pkg]) => [key, { ...pkg, name: key }])),
  );

/** NodeWright's priority ordering across rollouts: per node (its default, and what Keelson does), or fleet-wide. */
export const SEQUENCING_MODES = ['node', 'all'] as const;

export const SkyhookSpecSchema = z
  .strictObject({
    nodeSelectors: LabelSelectorSchema.default({}),
    // `packages: null` is how Skyhook's own uninstall test removes every package: no packages, like an empty map.
    packages: PackagesSchema.nullish().transform((packages) => packages ?? {}),
    priority: z.int().min(1).default(DEFAULT_PRIORITY),
    interruptionBudget: InterruptionBudgetSchema.optional(),
    deploymentPolicy: z.string().default(''),
    deploymentPolicyOptions: z.strictObject({ resetBatchStateOnCompletion: z.boolean().default(true) }).optional(),
    podNonInterruptLabels: LabelSelectorSchema.default({}),
    additionalTolerations: z.array(TolerationSchema).default([]),
    runtimeRequired: z.boolean().default(false),
    autoTaintNewNodes: z.boolean().default(false),
    serial: z.boolean().default(false),
    /** Starts the rollout paused, as the pause annotation does (Skyhook's operator ignores it; Keelson honours it). */
    pause: z.boolean().default(false),
    stageTimeout: StageTimeoutSchema.optional(),
    /** How the node is drained before an interrupt (kubectl drain's options); unset: kubectl's defaults. */
    drain: DrainOptionsSchema.optional(),
    // No default: a spec stored before this field existed must compare equal to the same manifest parsed today.
    sequencing: z.enum(SEQUENCING_MODES).optional(),
  })
  .superRefine(
    (spec, ctx) => {
      const budget = spec.interruptionBudget;
      if (spec.deploymentPolicy !== '' && budget && (budget.percent != null || budget.count != null)) {
        ctx.addIssue({
          code: 'custom',
          path: ['interruptionBudget'],
          message: `is set together with deploymentPolicy ${JSON.stringify(spec.deploymentPolicy)}: use one or the other`,
        });
      }
    },
    whenParsed('deploymentPolicy', 'interruptionBudget'),
  );
export type SkyhookSpec = z.infer<typeof SkyhookSpecSchema>;
export type Package = SkyhookSpec['packages'][string];

export const SkyhookManifestSchema = z
  .object({
    apiVersion: z.enum(Object.values(ROLLOUT_KINDS)),
    kind: z.enum(ROLLOUT_KIND_NAMES),
    metadata: z.looseObject({
      name: z
        .string()
        .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, {
          error: (iss) => `${describeValue(iss.input)} is not a DNS subdomain name`,
        })
        .max(253),
      annotations: z.record(z.string(), z.string()).optional(),
    }),
    spec: SkyhookSpecSchema,
  })
  .superRefine(
    (m, ctx) => {
      if (ROLLOUT_KINDS[m.kind] !== m.apiVersion) {
        ctx.addIssue({
          code: 'custom',
          path: ['apiVersion'],
          message: `${JSON.stringify(m.apiVersion)} does not serve kind ${m.kind}: use ${ROLLOUT_KINDS[m.kind]}`,
        });
      }
    },
    whenParsed('apiVersion', 'kind'),
  );
export type SkyhookManifest = z.infer<typeof SkyhookManifestSchema>;
