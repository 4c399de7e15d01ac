import type { CoreV1Event, V1Job, V1Pod } from '@kubernetes/client-node';
import type { StageResult } from './contract';
import { cancelled, heartbeat } from './activity-context';
import type { Clients } from './clients';
import {
  FAILED_CREATE,
  jobVerdict,
  lastFailure,
  podCreationRefused,
  rawPodRestarts,
  rawPodVerdict,
  type Verdict,
} from './job-outcome';
import { classifyKubeError, KubeError, kubeCode, kubeOptional } from './kube-errors';
import { readLogTail, unavailable } from './log-tail';
import type { ActivitySettings } from './settings';
import { ChangeSignal, WatchCache } from './watch-cache';
import type { WorkloadInformer } from './workload-informer';

// Waiting for a stage's end by watch: a Job (Keelson's or an adopted NodeWright one) with its pods, or an adopted
// Skyhook raw Pod. Heartbeats carry the Job name and its last status; cancellation stops the wait and leaves the
// Job in place (the workflow decides what happens to it).

export interface WaitContext {
  clients: Clients;
  settings: ActivitySettings;
  workloads: WorkloadInformer;
}

/** The heartbeat details of a stage wait. */
export interface StageHeartbeat {
  jobName: string;
  status: string;
}

async function untilVerdict(
  ctx: WaitContext,
  signal: ChangeSignal,
  jobName: string,
  evaluate: () => Verdict | Promise<Verdict>,
): Promise<Extract<Verdict, { done: true }>> {
  for (;;) {
    const verdict = await evaluate();
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

function jobGone(namespace: string, name: string): KubeError {
  return new KubeError(`Job ${namespace}/${name} was deleted while Keelson waited for it`, 404, {});
}

/** A Job and its pods as a wait sees them, and how to stop seeing them. */
interface JobView {
  job: () => Promise<V1Job>;
  pods: () => V1Pod[];
  signal: ChangeSignal;
  stop: () => void;
}

/**
 * A Keelson Job in the Jobs namespace, seen through the worker's shared watches. A Job just created may not be in
 * the cache yet: for one poll period the wait trusts the watch, then reads the Job directly until the cache has it.
 */
async function sharedView(ctx: WaitContext, namespace: string, name: string, uid: string): Promise<JobView> {
  const { workloads } = ctx;
  await workloads.ready();
  const signal = new ChangeSignal();
  const unsubscribe = workloads.subscribeJob(uid, signal.notify);
  const since = Date.now();
  let seen = false;
  let direct: { job: V1Job | undefined; at: number } | undefined;
  const pollMs = ctx.settings.pollSeconds * 1000;
  return {
    signal,
    stop: unsubscribe,
    pods: () => workloads.podsOf(uid),
    async job() {
      const cached = workloads.keelsonJobs.get(namespace, name);
      if (cached?.metadata?.uid === uid) {
        seen = true;
        return cached;
      }
      if (seen) throw jobGone(namespace, name);
      if (Date.now() - since < pollMs) return placeholder(namespace, name, uid);
      if (!direct || Date.now() - direct.at >= pollMs) {
        const job = await kubeOptional('get', `job ${namespace}/${name}`, () =>
          ctx.clients.batch.readNamespacedJob({ name, namespace }),
        );
        direct = { job, at: Date.now() };
      }
      if (direct.job?.metadata?.uid !== uid) throw jobGone(namespace, name);
      return direct.job;
    },
  };
}

/** A Job not yet seen: no status, so the verdict is "waiting". */
function placeholder(namespace: string, name: string, uid: string): V1Job {
  return { metadata: { namespace, name, uid } };
}

/** A Job elsewhere (adopted from an operator or another Keelson run): a watch of its own for this wait. */
async function ownView(ctx: WaitContext, namespace: string, name: string, uid: string): Promise<JobView> {
  const signal = new ChangeSignal();
  const jobs = new WatchCache<V1Job>({
    kc: ctx.clients.kc,
    path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
    list: (q) => ctx.clients.batch.listNamespacedJob({ namespace, ...q }),
    fieldSelector: `metadata.name=${name}`,
    onChange: signal.notify,
  });
  const pods = podsCache(ctx, namespace, { labelSelector: `batch.kubernetes.io/controller-uid=${uid}` }, signal.notify);
  const stop = () => {
    jobs.stop();
    pods.stop();
  };
  try {
    await jobs.start();
    await pods.start();
  } catch (err) {
    stop();
    throw err;
  }
  return {
    signal,
    stop,
    pods: () => pods.items(),
    job: async () => {
      const job = jobs.items().find((j) => j.metadata?.uid === uid);
      if (!job) throw jobGone(namespace, name);
      return job;
    },
  };
}

/** The Job controller has ended the Job (Complete or Failed): it starts no pod any more. */
function jobFinished(job: V1Job | undefined): boolean {
  return (job?.status?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

/**
 * A running Job that has had no pod for a poll period: only then are its events read, since the controller makes a
 * Job's pod within a second or so when it can.
 */
function podlessTooLong(ctx: WaitContext, job: V1Job, pods: readonly V1Pod[]): boolean {
  const created = job.metadata?.creationTimestamp;
  if (pods.length > 0 || job.spec?.suspend || created === undefined) return false;
  return Date.now() - new Date(created).getTime() >= ctx.settings.pollSeconds * 1000;
}

/**
 * The Job controller's FailedCreate events of a Job. The worker reads events in the Jobs namespace; an adopted Job
 * elsewhere may be in a namespace it may not read them in, and then it goes without.
 */
async function creationEvents(ctx: WaitContext, job: V1Job): Promise<CoreV1Event[]> {
  const { namespace, name, uid } = job.metadata!;
  try {
    const list = await ctx.clients.core.listNamespacedEvent({
      namespace: namespace!,
      fieldSelector: `involvedObject.uid=${uid},reason=${FAILED_CREATE}`,
    });
    return list.items;
  } catch (err) {
    if (kubeCode(err) === 403 && namespace !== ctx.settings.namespace) return [];
    throw classifyKubeError(err, 'list', `events of job ${namespace}/${name}`);
  }
}

/** Waits for a Job to end (Complete, Failed, or an image that cannot be pulled past the grace period). */
export async function waitForJob(
  ctx: WaitContext,
  namespace: string,
  name: string,
  uid: string,
  adopted: boolean,
): Promise<StageResult> {
  const view =
    namespace === ctx.workloads.namespace
      ? await sharedView(ctx, namespace, name, uid)
      : await ownView(ctx, namespace, name, uid);
  let job: V1Job | undefined;
  try {
    const verdict = await untilVerdict(ctx, view.signal, name, async () => {
      job = await view.job();
      const verdict = jobVerdict(job, view.pods(), Date.now(), ctx.settings.imagePullGraceSeconds);
      if (verdict.done || !podlessTooLong(ctx, job, view.pods())) return verdict;
      const refused = podCreationRefused(
        view.pods(),
        await creationEvents(ctx, job),
        Date.now(),
        ctx.settings.podCreateGraceSeconds,
      );
      if (!refused || refused.done) return refused ?? verdict;
      return { done: false, status: `${verdict.status} ${refused.status}` };
    });
    const podList = view.pods();
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
      ...(verdict.outcome === 'failed' && !jobFinished(job) && { unfinished: true as const }),
    };
  } finally {
    view.stop();
  }
}

/** Waits for an adopted legacy raw package Pod to succeed or fail (§3.8). */
export async function waitForRawPod(ctx: WaitContext, namespace: string, name: string): Promise<StageResult> {
  const signal = new ChangeSignal();
  const pods = podsCache(ctx, namespace, { fieldSelector: `metadata.name=${name}` }, signal.notify);
  let pod: V1Pod | undefined;
  await pods.start();
  try {
    const verdict = await untilVerdict(ctx, signal, name, () => {
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
  if (verdict.reason === FAILED_CREATE) return unavailable(`no pod was created: ${verdict.message}`, budget);
  if (!failure)
    return unavailable(
      `no failed container to read (${verdict.reason}${verdict.message ? `: ${verdict.message}` : ''})`,
      budget,
    );
  return readLogTail(ctx.clients, failure.pod, failure.container, budget);
}
