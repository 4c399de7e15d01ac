import YAML from 'yaml';
import { parseRolloutDocuments, RolloutSpecSchema, type RolloutSpec } from '../model';
import { ROLLOUT_KINDS } from '../model/wire';

// The one builder of rollouts for the tests and the bench: Skyhook manifests of packages the simulator plays
// (deploy/dev/simulator.ts reads the KEELSON_SIM_* env of each stage pod: how long a stage runs and which stages
// fail), DeploymentPolicy manifests, and rollout specs, read from manifests through the parser the CLI and API use or
// written directly for workflow tests.

export interface PackageDef {
  version: string;
  image?: string;
  simSeconds?: number;
  failStages?: string;
  /** A line a failing stage prints (KEELSON_SIM_LOG). */
  log?: string;
  stageTimeout?: string;
  interrupt?: { type: string; services?: string[] };
  dependsOn?: Record<string, string>;
  configMap?: Record<string, string>;
  configInterrupts?: Record<string, { type: string; services?: string[] }>;
  env?: Record<string, string>;
}

export interface SkyhookDef {
  name: string;
  nodes?: string[];
  selector?: Record<string, unknown>;
  packages: Record<string, PackageDef>;
  priority?: number;
  budget?: { percent?: number; count?: number };
  deploymentPolicy?: string;
  resetBatchStateOnCompletion?: boolean;
  runtimeRequired?: boolean;
  additionalTolerations?: Record<string, unknown>[];
}

/** A Skyhook manifest as a plain object (JSON is YAML, so it is written to a .yaml file as is). */
export function skyhook(def: SkyhookDef): Record<string, unknown> {
  const packages = Object.fromEntries(
    Object.entries(def.packages).map(([name, p]) => {
      const env: Record<string, string> = { KEELSON_SIM_SECONDS: String(p.simSeconds ?? 1), ...(p.env ?? {}) };
      if (p.failStages) env.KEELSON_SIM_FAIL_STAGES = p.failStages;
      if (p.log) env.KEELSON_SIM_LOG = p.log;
      return [
        name,
        {
          version: p.version,
          image: p.image ?? `registry.example/keelson/${name}`,
          env: Object.entries(env).map(([k, value]) => ({ name: k, value })),
          ...(p.stageTimeout && { stageTimeout: p.stageTimeout }),
          ...(p.interrupt && { interrupt: p.interrupt }),
          ...(p.dependsOn && { dependsOn: p.dependsOn }),
          ...(p.configMap && { configMap: p.configMap }),
          ...(p.configInterrupts && { configInterrupts: p.configInterrupts }),
        },
      ];
    }),
  );
  const nodeSelectors =
    def.selector ??
    ({ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: def.nodes ?? [] }] } as const);
  return {
    apiVersion: ROLLOUT_KINDS.Skyhook,
    kind: 'Skyhook',
    metadata: { name: def.name },
    spec: {
      nodeSelectors,
      ...(def.priority !== undefined && { priority: def.priority }),
      ...(def.deploymentPolicy
        ? { deploymentPolicy: def.deploymentPolicy }
        : { interruptionBudget: def.budget ?? { percent: 100 } }),
      ...(def.resetBatchStateOnCompletion !== undefined && {
        deploymentPolicyOptions: { resetBatchStateOnCompletion: def.resetBatchStateOnCompletion },
      }),
      ...(def.runtimeRequired && { runtimeRequired: true }),
      ...(def.additionalTolerations && { additionalTolerations: def.additionalTolerations }),
      packages,
    },
  };
}

/** A Skyhook manifest (YAML, as a user writes it) that targets the given nodes by hostname. */
export function skyhookYaml(name: string, nodes: string[], packages: Record<string, PackageDef>): string {
  return YAML.stringify(skyhook({ name, nodes, packages }));
}

/** A budget and the batch strategy of a DeploymentPolicy's default or of one of its compartments. */
export interface PolicyTier {
  budget: { count?: number; percent?: number };
  strategy?: Record<string, Record<string, number>>;
}

export interface CompartmentDef extends PolicyTier {
  name: string;
  matchLabels: Record<string, string>;
}

export interface DeploymentPolicyDef {
  name: string;
  default: PolicyTier;
  compartments?: CompartmentDef[];
  resetBatchStateOnCompletion?: boolean;
}

/** A DeploymentPolicy manifest as a plain object. */
export function deploymentPolicy(def: DeploymentPolicyDef): Record<string, unknown> {
  return {
    apiVersion: ROLLOUT_KINDS.Skyhook,
    kind: 'DeploymentPolicy',
    metadata: { name: def.name },
    spec: {
      ...(def.resetBatchStateOnCompletion !== undefined && {
        resetBatchStateOnCompletion: def.resetBatchStateOnCompletion,
      }),
      default: def.default,
      compartments: (def.compartments ?? []).map((c) => ({
        name: c.name,
        selector: { matchLabels: c.matchLabels },
        budget: c.budget,
        ...(c.strategy && { strategy: c.strategy }),
      })),
    },
  };
}

/** The rollouts of manifests, read through the parser the CLI and API use; a refused manifest throws its errors. */
export function parsedRollouts(docs: unknown[]): RolloutSpec[] {
  const { rollouts, errors } = parseRolloutDocuments(docs);
  if (errors.length > 0) throw new Error(`manifest refused: ${JSON.stringify(errors)}`);
  return rollouts;
}

/** The one rollout of a Skyhook manifest on the given nodes, packages at 1.0.0 unless given. */
export function rolloutSpecOf(
  name: string,
  nodes: string[],
  packages: Record<string, Omit<PackageDef, 'version'> & { version?: string }>,
  options: { runtimeRequired?: boolean } = {},
): RolloutSpec {
  const versioned = Object.fromEntries(Object.entries(packages).map(([pkg, p]) => [pkg, { version: '1.0.0', ...p }]));
  return parsedRollouts([skyhook({ name, nodes, packages: versioned, ...options })])[0]!;
}

/** A DeploymentPolicy of one default compartment: a budget of `count` nodes, fixed batches of `initialBatch`. */
export function fixedBatchPolicy(
  name: string,
  { count, initialBatch, failureThreshold = null, resetBatchStateOnCompletion = false }: FixedBatchPolicy,
): NonNullable<RolloutSpec['policy']> {
  return {
    name,
    spec: {
      resetBatchStateOnCompletion,
      default: {
        budget: { count },
        strategy: { fixed: { initialBatch, batchThreshold: 100, failureThreshold, safetyLimit: 50 } },
      },
      compartments: [],
    },
  };
}

interface FixedBatchPolicy {
  count: number;
  initialBatch: number;
  failureThreshold?: number | null;
  resetBatchStateOnCompletion?: boolean;
}

/** A rollout spec written directly (workflow tests): a Skyhook of the given wire spec, running, with its policy. */
export function rolloutSpec(
  name: string,
  spec: Record<string, unknown>,
  policy: RolloutSpec['policy'] = null,
): RolloutSpec {
  return RolloutSpecSchema.parse({
    name,
    kind: 'Skyhook',
    paused: false,
    disabled: false,
    spec,
    policy,
    resetBatchStateOnCompletion: false,
  });
}
