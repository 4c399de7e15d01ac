import type { V1Job } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import {
  buildStageJob,
  RUN_ANNOTATION,
  safeName,
  type JobContext,
  type JobManifest,
  type Package,
  type Toleration,
} from '../model';
import { taintToleration } from '../model/taints';
import type { FinishedStageJob, KeelsonActivities, RolloutRef, RunStageInput, StageResult } from './contract';
import { heartbeat, pause, throwIfCancelled } from './activity-context';
import { findAdoptable, type StageIdentity } from './adoption';
import { mergePatch } from './clients';
import { upsertStageConfigMaps } from './configmaps';
import { cordonHeld, notCordoned } from './cordon';
import { waitForJob, waitForRawPod, type StageHeartbeat, type WaitContext } from './job-watch';
import { classifyKubeError, isConflict, isNotFound, kube, kubeOptional, KubeError } from './kube-errors';
import { isStaleRun } from './workloads';
import { FAILURE_TYPES } from '../model/failure-types';

// Stage Jobs (§3): created under a deterministic name, or adopted (G2); waited on by watch; their deadline patched
// (G4), suspended and resumed (G5), deleted only when the workflow has recorded the outcome (G3).

/** Bad activity input (a caller's bug): retrying cannot help. */
function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FAILURE_TYPES.invalidActivityInput, nonRetryable: true, message });
}

export function jobContext(
  w: WaitContext,
  input: RolloutRef & { node: string; timeoutSeconds: number; additionalTolerations: Toleration[]; runId?: string },
): JobContext {
  const s = w.settings;
  if (input.runId !== undefined && (typeof input.runId !== 'string' || input.runId === '')) {
    throw invalidInput(`runId ${JSON.stringify(input.runId)}: must be a non-empty string when given`);
  }
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
    ...(s.runtimeRequiredTaint && { runtimeRequiredToleration: taintToleration(s.runtimeRequiredTaint) }),
    nodeMetadataConfigMap: safeName(253, input.rollout, input.node, 'metadata'),
    backoffLimit: s.backoffLimit,
    activeDeadlineSeconds: input.timeoutSeconds,
    retentionSeconds: s.jobRetentionSeconds,
    ...(input.runId !== undefined && { runId: input.runId }),
  };
}

/**
 * Deletes a Job in the foreground and polls a direct GET (the watch cache may lag) every second until it is gone:
 * the garbage collector removes a foreground-deleted Job only after its pods, so gone means no executor is left.
 * With `uid`, only that Job is deleted and waited for, and the Job that holds the name afterwards, if any, is returned.
 */
export async function deleteJobUntilGone(
  w: WaitContext,
  namespace: string,
  name: string,
  uid: string | undefined,
  why: string,
): Promise<V1Job | undefined> {
  const what = `job ${namespace}/${name}`;
  try {
    await w.clients.batch.deleteNamespacedJob({
      name,
      namespace,
      body: { propagationPolicy: 'Foreground', ...(uid !== undefined && { preconditions: { uid } }) },
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    // With a UID, 409: the name already holds another Job, returned below for the caller to judge.
    if (!(uid !== undefined && isConflict(err))) throw classifyKubeError(err, 'delete', what);
  }
  for (;;) {
    const job = await kubeOptional('get', what, () => w.clients.batch.readNamespacedJob({ name, namespace }));
    if (!job || (uid !== undefined && job.metadata?.uid !== uid)) return job;
    const pods = job.status?.active ?? 0;
    const status = `${why}: waiting for ${what} to be gone (deleting; ${pods} active pod(s))`;
    heartbeat({ jobName: name, status } satisfies StageHeartbeat);
    await pause(1000);
  }
}

/**
 * Adopts or creates the Job of `manifest` and waits for its end. Order: Keelson's own Job under the deterministic
 * name (an earlier attempt of this run); then, with adoption on, an operator's or another Keelson's Job or raw Pod
 * for the same package stage on the node; else a new Job. A Job of another run under the name is stale (G11): a
 * retained failed interrupt of an earlier reboot, or a stopped run's Job the watch cache still shows. It is never
 * adopted: it is deleted, and the new Job is created once the API server no longer has it.
 */
export async function runJob(
  w: WaitContext,
  manifest: JobManifest,
  identity: StageIdentity,
  beforeCreate: () => Promise<unknown>,
): Promise<StageResult> {
  const { namespace, name } = manifest.metadata;
  const what = `job ${namespace}/${name}`;
  const read = () => kubeOptional('get', what, () => w.clients.batch.readNamespacedJob({ name, namespace }));
  /** The Job under the name once no stale one holds it: this run's (or an older Keelson's) to adopt, or none. */
  const current = async (job: V1Job | undefined): Promise<V1Job | undefined> => {
    while (job && isStaleRun(job, identity.runId)) {
      const why = `stale job of run ${job.metadata?.annotations?.[RUN_ANNOTATION]}`;
      job = await deleteJobUntilGone(w, namespace, name, job.metadata!.uid!, why);
    }
    if (job?.metadata?.deletionTimestamp) {
      throw new KubeError(`${what} is being deleted; the stage starts again once it is gone`, 409, {});
    }
    return job;
  };
  await w.workloads.ready();
  // The watch cache may show a Job the API server no longer has, or an older one than it has: a direct read decides.
  const cached = w.workloads.keelsonJobs.get(namespace, name);
  const existing = cached && (await current(await read()));
  if (existing) return waitForJob(w, namespace, name, existing.metadata!.uid!, true);
  if (w.settings.adoption) {
    const found = await findAdoptable(w.workloads, w.settings, identity, { namespace, name });
    if (found?.kind === 'pod') return waitForRawPod(w, found.namespace, found.name);
    if (found) {
      const job = await kube('get', `job ${found.namespace}/${found.name}`, () =>
        w.clients.batch.readNamespacedJob({ name: found.name, namespace: found.namespace }),
      );
      return waitForJob(w, found.namespace, found.name, job.metadata!.uid!, true);
    }
  }
  await beforeCreate();
  // A wait the workflow has stopped creates nothing more (G11); one stopped after this point has its Job deleted.
  await throwIfCancelled();
  const body = manifest as V1Job;
  for (;;) {
    let created: V1Job | undefined;
    try {
      created = await w.clients.batch.createNamespacedJob({ namespace, body });
    } catch (err) {
      if (!isConflict(err)) throw classifyKubeError(err, 'create', what);
    }
    if (created) return waitForJob(w, namespace, name, created.metadata!.uid!, false);
    // The name is taken by a Job the watch cache did not show: an earlier attempt's of this run is adopted; a stale
    // one is deleted and creating starts over, as it does when the Job is gone by the time it is read.
    const taken = await current(await read());
    if (taken) return waitForJob(w, namespace, name, taken.metadata!.uid!, true);
  }
}

export function stageJobActivities(
  w: WaitContext,
  metrics?: { stageJobKept(): void },
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
      const identity = {
        rollout: input.rollout,
        node: input.node,
        package: pkg.name,
        version: pkg.version,
        stage: input.stage,
        runId: input.runId,
      };
      return runJob(w, manifest, identity, async () => {
        const node = await upsertStageConfigMaps(w.clients, ctx, pkg);
        // G16: a stage of an interrupting package runs on the node its rollout cordoned and drained, not on one made
        // schedulable since (by hand, or by an uncordon whose workflow task a crashed worker lost).
        if (input.cordoned && !cordonHeld(node, w.settings.keyPrefix, input))
          throw notCordoned(input, `its ${input.stage} stage`);
      });
    },
    async setStageDeadline({ jobName, activeDeadlineSeconds }) {
      await patchJob(jobName, { activeDeadlineSeconds });
    },
    async suspendStageJob({ jobName, suspend }) {
      await patchJob(jobName, { suspend });
    },
    async deleteStageJob(input) {
      if ('untilGone' in input) {
        if (input.untilGone !== true) {
          throw invalidInput(
            `deleteStageJob ${input.jobName}: untilGone must be true when given, not ${input.untilGone}`,
          );
        }
        const { podNamespace } = input as FinishedStageJob;
        if (podNamespace !== undefined) {
          throw invalidInput(
            `deleteStageJob ${input.jobName}: untilGone applies to Keelson Jobs, not to an adopted legacy pod (podNamespace ${podNamespace})`,
          );
        }
        // A stopped run's Job goes whatever its outcome and the retention: the next run may start only once it is gone.
        await deleteJobUntilGone(w, namespace, input.jobName, undefined, 'stopped run');
        return;
      }
      const { jobName, failed, podNamespace, unfinished } = input;
      // A failed Job is kept for its logs, unless it has not finished: it could still start its pod.
      if (failed && !unfinished && w.settings.jobRetentionSeconds > 0) {
        metrics?.stageJobKept();
        return;
      }
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
