import { ROLLOUT_KINDS } from '../../model/wire';

// Skyhook manifests of packages the simulator plays (deploy/dev/simulator.ts reads the KEELSON_SIM_* env of each
// stage pod): how long a stage runs and which stages fail. The one builder of such manifests, for the end-to-end
// tests, the fault tests and the bench alike.

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
