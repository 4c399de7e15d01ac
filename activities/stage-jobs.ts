import type { V1Job } from '@kubernetes/client-node';
import { buildStageJob, safeName, type JobContext, type JobManifest, type Package, type Toleration } from '../model';
import type { KeelsonActivities, RolloutRef, RunStageInput, StageResult } from './contract';
import { findAdoptable, type StageIdentity } from './adoption';
import { mergePatch } from './clients';
import { upsertStageConfigMaps } from './configmaps';
import { waitForJob, waitForRawPod, type WaitContext } from './job-watch';
import { isConflict, kube, kubeOptional, KubeError } from './kube-errors';

// Stage Jobs (§3): created under a deterministic name, or adopted (G2); waited on by watch; their deadline patched
// (G4), suspended and resumed (G5), deleted only when the workflow has recorded the outcome (G3).

/** The runtime-required taint `key=value:Effect` as the toleration stage pods carry. */
export function taintToleration(taint: string | undefined): Toleration | undefined {
  const m = taint ? /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(taint) : null;
  if (!m) return undefined;
  return m[2] !== undefined
    ? { key: m[1], operator: 'Equal', value: m[2], effect: m[3] as Toleration['effect'] }
    : { key: m[1], operator: 'Exists', effect: m[3] as Toleration['effect'] };
}

export function jobContext(
  w: WaitContext,
  input: RolloutRef & { node: string; timeoutSeconds: number; additionalTolerations: Toleration[] },
): JobContext {
  const s = w.settings;
  return {
    rollout: input.rollout,
    rolloutUid: input.rolloutUid ?? s.cluster,
    generation: input.generation,
    node: input.node,
    namespace: s.namespace,
    agentImage: s.agentImage,
    copyDirRoot: s.copyDirRoot,
    agentLogRoot: s.agentLogRoot,
    ...(s.imagePullSecret && { imagePullSecret: s.imagePullSecret }),
    additionalTolerations: input.additionalTolerations,
    ...(taintToleration(s.runtimeRequiredTaint) && {
      runtimeRequiredToleration: taintToleration(s.runtimeRequiredTaint),
    }),
    nodeMetadataConfigMap: safeName(253, input.rollout, input.node, 'metadata'),
    backoffLimit: s.backoffLimit,
    activeDeadlineSeconds: input.timeoutSeconds,
  };
}

/**
 * Adopts or creates the Job of `manifest` and waits for its end. Order: Keelson's own Job under the deterministic
 * name (an earlier attempt of this activity); then, with adoption on, an operator's or another Keelson's Job or raw
 * Pod for the same package stage on the node; else a new Job.
 */
export async function runJob(
  w: WaitContext,
  manifest: JobManifest,
  identity: StageIdentity,
  beforeCreate: () => Promise<void>,
): Promise<StageResult> {
  const { namespace, name } = manifest.metadata;
  const what = `job ${namespace}/${name}`;
  const deleting = () => new KubeError(`${what} is being deleted; the stage starts again once it is gone`, 409, {});
  await w.workloads.ready();
  const existing = w.workloads.keelsonJobs.get(namespace, name);
  if (existing?.metadata?.deletionTimestamp) throw deleting();
  if (existing) return waitForJob(w, namespace, name, existing.metadata!.uid!, true);
  if (w.settings.adoption) {
    const found = await findAdoptable(w.workloads, w.settings, identity);
    if (found?.kind === 'pod') return waitForRawPod(w, found.namespace, found.name);
    if (found) {
      const job = await kube('get', `job ${found.namespace}/${found.name}`, () =>
        w.clients.batch.readNamespacedJob({ name: found.name, namespace: found.namespace }),
      );
      return waitForJob(w, found.namespace, found.name, job.metadata!.uid!, true);
    }
  }
  await beforeCreate();
  // Retention 0 sets no TTL: a zero TTL would let the Job controller delete a failed Job before it is recorded (G3).
  const retention = w.settings.jobRetentionSeconds;
  const body: V1Job = {
    ...manifest,
    spec: { ...manifest.spec, ...(retention > 0 && { ttlSecondsAfterFinished: retention }) },
  } as V1Job;
  let created: V1Job;
  let adopted = false;
  try {
    created = await w.clients.batch.createNamespacedJob({ namespace, body });
  } catch (err) {
    // Created by an earlier attempt that the watch cache has not shown yet: that Job is this stage's.
    if (!isConflict(err)) return kube('create', what, () => Promise.reject(err));
    created = await kube('get', what, () => w.clients.batch.readNamespacedJob({ name, namespace }));
    if (created.metadata?.deletionTimestamp) throw deleting();
    adopted = true;
  }
  return waitForJob(w, namespace, name, created.metadata!.uid!, adopted);
}

export function stageJobActivities(
  w: WaitContext,
): Pick<KeelsonActivities, 'runStage' | 'setStageDeadline' | 'suspendStageJob' | 'deleteStageJob'> {
  const namespace = w.settings.namespace;
  const patchJob = async (jobName: string, spec: Record<string, unknown>) => {
    await kubeOptional('patch', `job ${namespace}/${jobName}`, () =>
      w.clients.batch.patchNamespacedJob({ name: jobName, namespace, body: { spec } }, mergePatch),
    );
  };
  return {
    async runStage(input: RunStageInput) {
      const ctx = jobContext(w, input);
      const pkg: Package = input.package;
      const manifest = buildStageJob(ctx, pkg, input.stage);
      const identity = { node: input.node, package: pkg.name, version: pkg.version, stage: input.stage };
      return runJob(w, manifest, identity, () => upsertStageConfigMaps(w.clients, ctx, pkg, w.settings.agentImage));
    },
    async setStageDeadline({ jobName, activeDeadlineSeconds }) {
      await patchJob(jobName, { activeDeadlineSeconds });
    },
    async suspendStageJob({ jobName, suspend }) {
      await patchJob(jobName, { suspend });
    },
    async deleteStageJob({ jobName, failed, podNamespace }) {
      if (failed && w.settings.jobRetentionSeconds > 0) return;
      // An adopted legacy pod keeps running its pause container: left in place, every later rerun would adopt it again.
      if (podNamespace) {
        await kubeOptional('delete', `pod ${podNamespace}/${jobName}`, () =>
          w.clients.core.deleteNamespacedPod({ name: jobName, namespace: podNamespace }),
        );
        return;
      }
      await kubeOptional('delete', `job ${namespace}/${jobName}`, () =>
        w.clients.batch.deleteNamespacedJob({ name: jobName, namespace, propagationPolicy: 'Background' }),
      );
    },
  };
}
