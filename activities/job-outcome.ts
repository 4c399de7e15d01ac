import type { CoreV1Event, V1ContainerStatus, V1Job, V1Pod } from '@kubernetes/client-node';

// Pure verdicts over what the watch caches hold: has a stage Job (or a legacy raw package Pod) ended, how, and
// which pod and container hold the failure's log. No I/O, so the wait loop re-evaluates them on every change.

export type Verdict =
  { done: false; status: string } | { done: true; outcome: 'complete' | 'failed'; reason: string; message: string };

export const IMAGE_PULL_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
]);

function allStatuses(pod: V1Pod): V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

function createdMs(pod: V1Pod): number {
  const t = pod.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : Date.now();
}

/** A pod that has failed to pull an image for longer than the grace period (never a hang: §8 of the semantics). */
export function imagePullFailure(pods: readonly V1Pod[], nowMs: number, graceSeconds: number): Verdict | undefined {
  for (const pod of pods) {
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' || pod.metadata?.deletionTimestamp)
      continue;
    const stuck = allStatuses(pod).find((s) => IMAGE_PULL_REASONS.has(s.state?.waiting?.reason ?? ''));
    if (!stuck) continue;
    const waited = (nowMs - createdMs(pod)) / 1000;
    if (waited < graceSeconds) continue;
    const reason = stuck.state!.waiting!.reason!;
    return {
      done: true,
      outcome: 'failed',
      reason,
      message: `container ${stuck.name} of pod ${pod.metadata?.name} cannot pull image ${stuck.image} for ${Math.round(waited)}s (grace ${graceSeconds}s): ${stuck.state?.waiting?.message ?? reason}`,
    };
  }
  return undefined;
}

/** The Job controller's event reason when it cannot create a pod, and the stage failure reason Keelson gives it. */
export const FAILED_CREATE = 'FailedCreate';

function eventFirstMs(e: CoreV1Event): number | undefined {
  const t = e.firstTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp;
  return t === undefined ? undefined : new Date(t).getTime();
}

/**
 * The Job controller has been refused the Job's pod (Pod Security admission, a ResourceQuota, a webhook) for longer
 * than the grace period, and the Job has no pod: it would retry forever, so the stage fails with the refusal's words.
 * A refusal that lifts within the grace (quota freed) lets the stage go on.
 */
export function podCreationRefused(
  pods: readonly V1Pod[],
  events: readonly CoreV1Event[],
  nowMs: number,
  graceSeconds: number,
): Verdict | undefined {
  if (pods.length > 0) return undefined;
  const refusals = events.filter((e) => e.reason === FAILED_CREATE);
  const firsts = refusals.map(eventFirstMs).filter((t): t is number => t !== undefined);
  if (firsts.length === 0) return undefined;
  const refusedFor = (nowMs - Math.min(...firsts)) / 1000;
  const latest = [...refusals].sort(
    (a, b) => new Date(b.lastTimestamp ?? 0).getTime() - new Date(a.lastTimestamp ?? 0).getTime(),
  )[0]!;
  if (refusedFor < graceSeconds) {
    return { done: false, status: `pod refused for ${Math.round(refusedFor)}s: ${latest.message ?? FAILED_CREATE}` };
  }
  return {
    done: true,
    outcome: 'failed',
    reason: FAILED_CREATE,
    message: `the Job controller has been refused the stage pod for ${Math.round(refusedFor)}s (grace ${graceSeconds}s): ${latest.message ?? FAILED_CREATE}`,
  };
}

function podSummary(pods: readonly V1Pod[]): string {
  return pods
    .map((p) => {
      const waiting = allStatuses(p)
        .map((s) => s.state?.waiting?.reason)
        .find((r) => r && r !== 'PodInitializing');
      return `${p.metadata?.name}:${p.status?.phase ?? 'Pending'}${waiting ? `/${waiting}` : ''}`;
    })
    .join(' ');
}

/** How close to its deadline a pod's success is left to the Job controller, which may fail the Job at the deadline. */
export const DEADLINE_MARGIN_MS = 10_000;

/**
 * The pod whose success is the Job's, before the Job controller writes Complete (it batches pod events: a second or
 * more later). Only where the controller cannot decide otherwise: a Job of one completion, seen with its spec, not
 * suspended and not failing (a suspension or a deadline deletes pods, and one that then exits 0 is not counted), every
 * pod of it terminal (no replacement running), the pod not being deleted, and the deadline not near.
 */
function succeededPod(job: V1Job, pods: readonly V1Pod[], nowMs: number): V1Pod | undefined {
  const spec = job.spec;
  if (!spec || spec.suspend || (spec.completions ?? 1) !== 1 || (spec.parallelism ?? 1) > 1) return undefined;
  if ((job.status?.conditions ?? []).some((c) => c.type === 'FailureTarget' && c.status === 'True')) return undefined;
  if (!pods.every((p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed')) return undefined;
  const started = job.status?.startTime;
  if (spec.activeDeadlineSeconds !== undefined && started !== undefined) {
    const deadline = new Date(started).getTime() + spec.activeDeadlineSeconds * 1000;
    if (nowMs > deadline - DEADLINE_MARGIN_MS) return undefined;
  }
  return pods.find((p) => p.status?.phase === 'Succeeded' && !p.metadata?.deletionTimestamp);
}

/** A stage or interrupt Job's verdict: its terminal condition or its pod's success, or an image that cannot be pulled past the grace. */
export function jobVerdict(job: V1Job, pods: readonly V1Pod[], nowMs: number, graceSeconds: number): Verdict {
  const conditions = (job.status?.conditions ?? []).filter((c) => c.status === 'True');
  const complete = conditions.find((c) => c.type === 'Complete' || c.type === 'SuccessCriteriaMet');
  if (complete) return { done: true, outcome: 'complete', reason: 'Complete', message: complete.message ?? '' };
  // Failed, not FailureTarget: the counts are final only once the Job's pods have terminated.
  const failed = conditions.find((c) => c.type === 'Failed');
  if (failed) {
    return { done: true, outcome: 'failed', reason: failed.reason ?? 'Failed', message: failed.message ?? '' };
  }
  const succeeded = succeededPod(job, pods, nowMs);
  if (succeeded) {
    return {
      done: true,
      outcome: 'complete',
      reason: 'Complete',
      message: `pod ${succeeded.metadata?.name} succeeded`,
    };
  }
  const failing = conditions.find((c) => c.type === 'FailureTarget');
  const pull = job.spec?.suspend ? undefined : imagePullFailure(pods, nowMs, graceSeconds);
  if (pull) return pull;
  const s = job.status ?? {};
  const state = job.spec?.suspend ? 'suspended ' : failing ? `failing (${failing.reason}) ` : '';
  return {
    done: false,
    status:
      `${state}active=${s.active ?? 0} failed=${s.failed ?? 0} succeeded=${s.succeeded ?? 0} ${podSummary(pods)}`.trim(),
  };
}

/**
 * A legacy Skyhook raw package Pod (§3.8): the stage succeeded when its last init container terminated 0; it failed
 * when an init container terminated non-zero or crash-loops. Its main container (pause) keeps running either way.
 */
export function rawPodVerdict(pod: V1Pod, nowMs: number, graceSeconds: number): Verdict {
  const inits = pod.status?.initContainerStatuses ?? [];
  const bad = inits.find(
    (s) =>
      (s.state?.terminated && s.state.terminated.exitCode !== 0) || s.state?.waiting?.reason === 'CrashLoopBackOff',
  );
  if (bad) {
    const exit = bad.state?.terminated?.exitCode ?? bad.lastState?.terminated?.exitCode;
    const reason = bad.state?.waiting?.reason ?? bad.state?.terminated?.reason ?? 'Error';
    return {
      done: true,
      outcome: 'failed',
      reason,
      message: `init container ${bad.name} of pod ${pod.metadata?.name} failed${exit !== undefined ? ` (exit ${exit})` : ''}`,
    };
  }
  const specInits = pod.spec?.initContainers ?? [];
  const last = specInits.length > 0 ? inits.find((s) => s.name === specInits[specInits.length - 1]!.name) : undefined;
  if (last?.state?.terminated?.exitCode === 0) {
    return { done: true, outcome: 'complete', reason: 'Complete', message: `init container ${last.name} exited 0` };
  }
  if (specInits.length === 0 && pod.status?.phase === 'Succeeded') {
    return { done: true, outcome: 'complete', reason: 'Complete', message: '' };
  }
  if (pod.status?.phase === 'Failed') {
    return { done: true, outcome: 'failed', reason: pod.status.reason ?? 'Failed', message: pod.status.message ?? '' };
  }
  return imagePullFailure([pod], nowMs, graceSeconds) ?? { done: false, status: podSummary([pod]) };
}

/** Failed attempts of a raw pod: restarts of its containers (a crash loop restarts in place). */
export function rawPodRestarts(pod: V1Pod): number {
  return allStatuses(pod).reduce((sum, s) => sum + (s.restartCount ?? 0), 0);
}

function failedExit(s: V1ContainerStatus): boolean {
  const t = s.state?.terminated ?? s.lastState?.terminated;
  return t !== undefined && t.exitCode !== 0;
}

function finishedMs(pod: V1Pod): number {
  const ends = allStatuses(pod)
    .map((s) => s.state?.terminated?.finishedAt ?? s.lastState?.terminated?.finishedAt)
    .filter((t): t is Date => t !== undefined)
    .map((t) => new Date(t).getTime());
  return ends.length > 0 ? Math.max(...ends) : createdMs(pod);
}

/** The pod and container whose log explains the failure: the last pod with a failed container, that container. */
export function lastFailure(pods: readonly V1Pod[]): { pod: V1Pod; container: string } | undefined {
  const failed = pods
    .filter((p) => p.status?.phase === 'Failed' || allStatuses(p).some(failedExit))
    .sort((a, b) => finishedMs(b) - finishedMs(a) || createdMs(b) - createdMs(a));
  const pod = failed[0];
  if (!pod) return undefined;
  const statuses = allStatuses(pod);
  const container =
    statuses.find(failedExit)?.name ??
    [...statuses].reverse().find((s) => s.state?.terminated)?.name ??
    pod.spec?.containers?.[0]?.name;
  return container ? { pod, container } : undefined;
}
