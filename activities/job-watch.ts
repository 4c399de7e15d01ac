import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { StageResult } from './contract';
import { cancelled, heartbeat } from './activity-context';
import type { Clients } from './clients';
import { jobVerdict, lastFailure, rawPodRestarts, rawPodVerdict, type Verdict } from './job-outcome';
import { KubeError } from './kube-errors';
import { readLogTail, unavailable } from './log-tail';
import type { ActivitySettings } from './settings';
import { ChangeSignal, WatchCache } from './watch-cache';

// Waiting for a stage's end by watch: a Job (Keelson's or an adopted NodeWright one) with its pods, or an adopted
// Skyhook raw Pod. Heartbeats carry the Job name and its last status; cancellation stops the wait and leaves the
// Job in place (the workflow decides what happens to it).

export interface WaitContext {
  clients: Clients;
  settings: ActivitySettings;
}

/** The heartbeat details of a stage wait. */
export interface StageHeartbeat {
  jobName: string;
  status: string;
}

async function untilVerdict(
  ctx: WaitContext,
  caches: WatchCache<V1Job | V1Pod>[],
  signal: ChangeSignal,
  jobName: string,
  evaluate: () => Verdict,
): Promise<Extract<Verdict, { done: true }>> {
  for (const cache of caches) await cache.start();
  for (;;) {
    const verdict = evaluate();
    if (verdict.done) return verdict;
    heartbeat({ jobName, status: verdict.status } satisfies StageHeartbeat);
    await Promise.race([signal.wait(ctx.settings.pollSeconds * 1000), cancelled()]);
  }
}

function podsCache(
  ctx: WaitContext,
  namespace: string,
  selector: { labelSelector?: string; fieldSelector?: string },
  onChange: () => void,
) {
  return new WatchCache<V1Pod>({
    kc: ctx.clients.kc,
    path: `/api/v1/namespaces/${namespace}/pods`,
    list: (q) => ctx.clients.core.listNamespacedPod({ namespace, ...q }),
    ...selector,
    onChange,
  });
}

/** Waits for a Job to end (Complete, Failed, or an image that cannot be pulled past the grace period). */
export async function waitForJob(
  ctx: WaitContext,
  namespace: string,
  name: string,
  uid: string,
  adopted: boolean,
): Promise<StageResult> {
  const signal = new ChangeSignal();
  const jobs = new WatchCache<V1Job>({
    kc: ctx.clients.kc,
    path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
    list: (q) => ctx.clients.batch.listNamespacedJob({ namespace, ...q }),
    fieldSelector: `metadata.name=${name}`,
    onChange: signal.notify,
  });
  const pods = podsCache(ctx, namespace, { labelSelector: `batch.kubernetes.io/controller-uid=${uid}` }, signal.notify);
  let job: V1Job | undefined;
  try {
    const verdict = await untilVerdict(ctx, [jobs, pods] as WatchCache<V1Job | V1Pod>[], signal, name, () => {
      job = jobs.items().find((j) => j.metadata?.uid === uid);
      if (!job) throw new KubeError(`Job ${namespace}/${name} was deleted while Keelson waited for it`, 404, {});
      return jobVerdict(job, pods.items(), Date.now(), ctx.settings.imagePullGraceSeconds);
    });
    const podList = pods.items();
    const restarts = podList.reduce((sum, p) => sum + rawPodRestarts(p), 0);
    const counted = (job?.status?.failed ?? 0) + (job?.status?.uncountedTerminatedPods?.failed?.length ?? 0);
    const failedPods = Math.max(counted, restarts);
    return {
      outcome: verdict.outcome,
      reason: verdict.reason,
      jobName: name,
      adopted,
      failedPods,
      logTail: verdict.outcome === 'failed' ? await failureTail(ctx, podList, verdict) : '',
    };
  } finally {
    jobs.stop();
    pods.stop();
  }
}

/** Waits for an adopted legacy raw package Pod to succeed or fail (§3.8). */
export async function waitForRawPod(ctx: WaitContext, namespace: string, name: string): Promise<StageResult> {
  const signal = new ChangeSignal();
  const pods = podsCache(ctx, namespace, { fieldSelector: `metadata.name=${name}` }, signal.notify);
  let pod: V1Pod | undefined;
  try {
    const verdict = await untilVerdict(ctx, [pods] as WatchCache<V1Job | V1Pod>[], signal, name, () => {
      pod = pods.items()[0];
      if (!pod)
        throw new KubeError(`legacy package pod ${namespace}/${name} disappeared while Keelson waited for it`, 404, {});
      return rawPodVerdict(pod, Date.now(), ctx.settings.imagePullGraceSeconds);
    });
    return {
      outcome: verdict.outcome,
      reason: verdict.reason,
      jobName: name,
      adopted: true,
      failedPods: rawPodRestarts(pod!),
      logTail: verdict.outcome === 'failed' ? await failureTail(ctx, [pod!], verdict) : '',
      podNamespace: namespace,
    };
  } finally {
    pods.stop();
  }
}

async function failureTail(
  ctx: WaitContext,
  pods: V1Pod[],
  verdict: { reason: string; message: string },
): Promise<string> {
  const budget = ctx.settings.logTailBytes;
  const failure = lastFailure(pods);
  if (!failure)
    return unavailable(
      `no failed container to read (${verdict.reason}${verdict.message ? `: ${verdict.message}` : ''})`,
      budget,
    );
  return readLogTail(ctx.clients, failure.pod, failure.container, budget);
}
