import type { CoreV1Event, V1Job, V1Pod } from '@kubernetes/client-node';
import { jobVerdict, podCreationRefused, rawPodVerdict } from '../../activities/job-outcome';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const created = new Date(NOW - 60_000);

function job(extra: Partial<V1Job> = {}): V1Job {
  return { metadata: { name: 'stage', uid: 'u1' }, spec: { template: {} }, ...extra };
}

function pod(name: string, status: V1Pod['status']): V1Pod {
  return { metadata: { name, creationTimestamp: created }, status };
}

describe('jobVerdict', () => {
  test("a Job of one completion ends at its pod's success, before the Job controller writes Complete", () => {
    const v = jobVerdict(job(), [pod('stage-abc', { phase: 'Succeeded' })], NOW, 300);
    expect(v).toEqual({ done: true, outcome: 'complete', reason: 'Complete', message: 'pod stage-abc succeeded' });
    const complete = job({ status: { conditions: [{ type: 'Complete', status: 'True' }] } });
    expect(jobVerdict(complete, [], NOW, 300)).toMatchObject({ done: true, outcome: 'complete', reason: 'Complete' });
  });

  test('an adopted Job of several completions or pods is not complete at its first pod', () => {
    const succeeded = [pod('a', { phase: 'Succeeded' }), pod('b', { phase: 'Succeeded' })];
    expect(jobVerdict(job({ spec: { template: {}, completions: 2 } }), succeeded, NOW, 300).done).toBe(false);
    expect(jobVerdict(job({ spec: { template: {}, parallelism: 2 } }), succeeded, NOW, 300).done).toBe(false);
  });

  test("a pod's success is left to the Job controller where it may not count it", () => {
    const ok = pod('a', { phase: 'Succeeded' });
    const verdict = (j: V1Job, pods: V1Pod[] = [ok]) => jobVerdict(j, pods, NOW, 300);
    // Not seen yet: a placeholder without its spec.
    expect(verdict({ metadata: { name: 'stage', uid: 'u1' } }).done).toBe(false);
    // Suspended (a pause deleted the pod, which then exited 0) or failing at its deadline.
    expect(verdict(job({ spec: { template: {}, suspend: true } })).done).toBe(false);
    const failing = job({
      status: { conditions: [{ type: 'FailureTarget', status: 'True', reason: 'DeadlineExceeded' }] },
    });
    expect(verdict(failing).done).toBe(false);
    // Being deleted, or a replacement pod still running.
    const deleting = { ...ok, metadata: { ...ok.metadata, deletionTimestamp: new Date(NOW) } };
    expect(verdict(job(), [deleting]).done).toBe(false);
    expect(verdict(job(), [ok, pod('b', { phase: 'Running' })]).done).toBe(false);
    // Within the margin of its deadline: the controller may fail it at the deadline.
    const started = new Date(NOW - 55_000);
    const nearDeadline = job({ spec: { template: {}, activeDeadlineSeconds: 60 }, status: { startTime: started } });
    expect(verdict(nearDeadline).done).toBe(false);
    const farFromDeadline = job({ spec: { template: {}, activeDeadlineSeconds: 600 }, status: { startTime: started } });
    expect(verdict(farFromDeadline)).toMatchObject({ done: true, outcome: 'complete' });
  });

  test('a Failed condition is the stage failed with its reason', () => {
    const failed = job({
      status: { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'too many' }] },
    });
    expect(jobVerdict(failed, [pod('a', { phase: 'Failed' })], NOW, 300)).toEqual({
      done: true,
      outcome: 'failed',
      reason: 'BackoffLimitExceeded',
      message: 'too many',
    });
  });

  test('a running pod is not an outcome; its status says where it is', () => {
    const v = jobVerdict(job({ status: { active: 1 } }), [pod('a', { phase: 'Running' })], NOW, 300);
    expect(v).toEqual({ done: false, status: 'active=1 failed=0 succeeded=0 a:Running' });
  });

  test('an image that cannot be pulled fails the stage only after the grace period', () => {
    const stuck = pod('a', {
      phase: 'Pending',
      containerStatuses: [
        {
          name: 'pkg',
          image: 'registry.example/missing:1',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ImagePullBackOff' } },
        },
      ],
    });
    expect(jobVerdict(job(), [stuck], NOW, 120).done).toBe(false);
    expect(jobVerdict(job(), [stuck], NOW, 30)).toMatchObject({
      done: true,
      outcome: 'failed',
      reason: 'ImagePullBackOff',
    });
  });
});

describe('podCreationRefused', () => {
  const refusal = (secondsAgo: number, message: string, lastSecondsAgo = secondsAgo): CoreV1Event => ({
    metadata: {},
    involvedObject: { kind: 'Job', name: 'stage', uid: 'u1' },
    reason: 'FailedCreate',
    message,
    firstTimestamp: new Date(NOW - secondsAgo * 1000),
    lastTimestamp: new Date(NOW - lastSecondsAgo * 1000),
  });
  const forbidden = 'Error creating: pods "stage-x" is forbidden: violates PodSecurity "restricted:latest": privileged';

  test('a refusal past the grace fails the stage with the latest refusal in the message', () => {
    const v = podCreationRefused([], [refusal(90, 'Error creating: quota', 90), refusal(80, forbidden, 5)], NOW, 60);
    expect(v).toEqual({
      done: true,
      outcome: 'failed',
      reason: 'FailedCreate',
      message: `the Job controller has been refused the stage pod for 90s (grace 60s): ${forbidden}`,
    });
  });

  test('within the grace the stage waits, saying why; no refusal or a pod made: nothing to say', () => {
    expect(podCreationRefused([], [refusal(10, forbidden)], NOW, 60)).toEqual({
      done: false,
      status: `pod refused for 10s: ${forbidden}`,
    });
    expect(podCreationRefused([], [], NOW, 60)).toBeUndefined();
    expect(podCreationRefused([], [{ ...refusal(90, 'x'), reason: 'SuccessfulCreate' }], NOW, 60)).toBeUndefined();
    expect(podCreationRefused([pod('stage-a', { phase: 'Running' })], [refusal(90, forbidden)], NOW, 60)).toBe(
      undefined,
    );
  });
});

describe('rawPodVerdict', () => {
  const spec = { containers: [], initContainers: [{ name: 'init' }, { name: 'apply' }] };
  const init = (name: string, exitCode: number) => ({
    name,
    image: 'i',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode, finishedAt: created } },
  });

  test('a legacy raw pod is complete when its last init container exited 0, its pause still running', () => {
    const p = {
      ...pod('legacy', { phase: 'Running', initContainerStatuses: [init('init', 0), init('apply', 0)] }),
      spec,
    };
    expect(rawPodVerdict(p, NOW, 300)).toMatchObject({ done: true, outcome: 'complete' });
  });

  test('a legacy raw pod whose init container exited non-zero failed, naming the container and exit code', () => {
    const p = {
      ...pod('legacy', { phase: 'Running', initContainerStatuses: [init('init', 0), init('apply', 3)] }),
      spec,
    };
    expect(rawPodVerdict(p, NOW, 300)).toMatchObject({
      done: true,
      outcome: 'failed',
      message: 'init container apply of pod legacy failed (exit 3)',
    });
  });
});
