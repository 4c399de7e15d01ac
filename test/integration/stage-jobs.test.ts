import { PatchStrategy, setHeaderOptions, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { CancelledFailure } from '@temporalio/common';
import { RUN_ANNOTATION, stageJobName } from '../../model';
import type { RunStageInput } from '../../activities/contract';
import { until, useTestNamespace } from '../../harness/kube';
import { laggingActivities, pkg, ROLLOUT, stageInput, testActivities } from './activity-env';

const env = testActivities('placeholder');
const ns = useTestNamespace(env.core, 'stage');
let a: ReturnType<typeof testActivities>['activities'];
beforeAll(() => {
  a = testActivities(ns).activities;
});

const jobNameOf = (node: string, name: string, stage = 'apply') =>
  stageJobName({ rollout: ROLLOUT, package: name, version: '1.0.0', stage: stage as 'apply', node });

test('runStage creates the stage Job under its deterministic name and reports Complete', async () => {
  const started = Date.now();
  const result = await a.runStage(stageInput('node-004', pkg('ok-pkg')));
  const seconds = (Date.now() - started) / 1000;
  expect(result).toEqual({
    outcome: 'complete',
    reason: 'Complete',
    jobName: jobNameOf('node-004', 'ok-pkg'),
    adopted: false,
    failedPods: 0,
    logTail: '',
  });
  process.stderr.write(`[measure] 1s stage end to end: ${seconds.toFixed(1)}s\n`);
  const job = await env.batch.readNamespacedJob({ name: result.jobName, namespace: ns });
  expect(job.spec?.ttlSecondsAfterFinished).toBe(600);
  // A second call (an activity retry) adopts the same Job instead of creating another.
  const again = await a.runStage(stageInput('node-004', pkg('ok-pkg')));
  expect(again).toMatchObject({ outcome: 'complete', adopted: true, jobName: result.jobName });
});

test('G3 a Job failing with BackoffLimitExceeded keeps its failed pods and reports its reason and a log tail', async () => {
  const printed = 'modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.1.0';
  const result = await a.runStage(
    stageInput('node-004', pkg('bad-pkg', { KEELSON_SIM_FAIL_STAGES: 'apply', KEELSON_SIM_LOG: printed })),
  );
  expect(result.outcome).toBe('failed');
  expect(result.reason).toBe('BackoffLimitExceeded');
  // The tail is the failed pod's own log, fetched through the apiserver from the (kwok) kubelet.
  expect(result.logTail).toContain(printed);
  // G6: backoffLimit 1 means the first pod and one retry, both failed, counted from Job status.
  expect(result.failedPods).toBe(2);
  expect(result.logTail.length).toBeGreaterThan(0);
  expect(Buffer.byteLength(result.logTail)).toBeLessThanOrEqual(2048);
  // The Job and its failed pods are still there for the workflow to record before any cleanup.
  const job = await env.batch.readNamespacedJob({ name: result.jobName, namespace: ns });
  expect(job.status?.failed).toBe(2);
  const pods = await env.core.listNamespacedPod({
    namespace: ns,
    labelSelector: `batch.kubernetes.io/controller-uid=${job.metadata!.uid}`,
  });
  expect(pods.items.filter((p) => p.status?.phase === 'Failed')).toHaveLength(2);
  // A finished Job: kept for its logs (retention) once recorded.
  expect(result.unfinished).toBeUndefined();
});

test('G6 failed pods are counted while the stage still retries', async () => {
  const input = stageInput('node-004', pkg('slow-bad', { KEELSON_SIM_FAIL_STAGES: 'apply' }));
  const local = testActivities(ns, { backoffLimit: 2 }).activities;
  const mock = new MockActivityEnvironment();
  const beats: { status: string }[] = [];
  mock.on('heartbeat', (d: { status: string }) => beats.push(d));
  const result = (await mock.run(local.runStage, input)) as Awaited<ReturnType<typeof local.runStage>>;
  expect(result.failedPods).toBe(3);
  expect(result.reason).toBe('BackoffLimitExceeded');
  expect(beats.some((b) => /failed=[12]\b/.test(b.status))).toBe(true);
});

test('an image that cannot be pulled is reported as a failure within the grace period', async () => {
  const started = Date.now();
  const result = await a.runStage(
    stageInput('node-005', pkg('nopull', {}, { image: 'registry.nowhere.invalid/nopull' })),
  );
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(`[measure] unpullable image reported after ${seconds.toFixed(1)}s (grace 5s)\n`);
  expect(result.outcome).toBe('failed');
  expect(result.reason).toMatch(/^(ErrImagePull|ImagePullBackOff)$/);
  expect(result.logTail).toContain('registry.nowhere.invalid/nopull');
  // Its Job has not finished: the pod would run once the image can be pulled, so it does not stay for retention.
  expect(result.unfinished).toBe(true);
  expect(seconds).toBeGreaterThanOrEqual(4);
  expect(seconds).toBeLessThan(5 + 10);
});

test('a stage pod refused by Pod Security fails the stage after the grace, naming the refusal', async () => {
  // A Jobs namespace that enforces the restricted profile: the Job controller is refused the privileged stage pod.
  const restricted = `${ns}-restricted`;
  await env.core.createNamespace({
    body: { metadata: { name: restricted, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
  });
  try {
    const local = testActivities(restricted).activities;
    const mock = new MockActivityEnvironment();
    const beats: { status: string }[] = [];
    mock.on('heartbeat', (d: { status: string }) => beats.push(d));
    const started = Date.now();
    const result = (await mock.run(local.runStage, stageInput('node-006', pkg('refused-pkg')))) as Awaited<
      ReturnType<typeof local.runStage>
    >;
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(`[measure] refused stage pod reported after ${seconds.toFixed(1)}s (grace 3s)\n`);
    expect(result).toMatchObject({ outcome: 'failed', reason: 'FailedCreate', failedPods: 0 });
    expect(result.logTail).toContain('no pod was created: the Job controller has been refused the stage pod');
    expect(result.logTail).toContain('violates PodSecurity "restricted:latest"');
    expect(beats.some((b) => b.status.includes('pod refused for'))).toBe(true);
    expect(seconds).toBeGreaterThanOrEqual(3);
    expect(seconds).toBeLessThan(3 + 15);
    const pods = await env.core.listNamespacedPod({ namespace: restricted });
    expect(pods.items).toHaveLength(0);

    // G11: the Job has not finished, so it is deleted once recorded whatever the retention (600 s here): kept, it
    // would start its pod as soon as the refusal lifts, a stage nobody watches beside the package's next run.
    expect(result.unfinished).toBe(true);
    await local.deleteStageJob({ jobName: result.jobName, failed: true, unfinished: true });
    await env.core.patchNamespace(
      { name: restricted, body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until('the refused Job gone', async () => {
      const jobs = await env.batch.listNamespacedJob({ namespace: restricted });
      return jobs.items.length === 0 ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await env.core.listNamespacedPod({ namespace: restricted })).items).toHaveLength(0);
  } finally {
    await env.core.deleteNamespace({ name: restricted });
  }
});

test('G4 setStageDeadline patches a running Job, and the new deadline ends it with DeadlineExceeded', async () => {
  const input = stageInput('node-005', pkg('long-pkg', { KEELSON_SIM_SECONDS: '60' }), { timeoutSeconds: 600 });
  const running = a.runStage(input);
  const name = jobNameOf('node-005', 'long-pkg');
  await until(
    'the Job exists',
    async () => (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0],
  );
  await a.setStageDeadline({ jobName: name, activeDeadlineSeconds: 3 });
  const job = await env.batch.readNamespacedJob({ name, namespace: ns });
  expect(job.spec?.activeDeadlineSeconds).toBe(3);
  const result = await running;
  expect(result).toMatchObject({ outcome: 'failed', reason: 'DeadlineExceeded', jobName: name });
});

test('G5 suspendStageJob suspends and resumes a stage Job', async () => {
  const input = stageInput('node-005', pkg('pause-pkg', { KEELSON_SIM_SECONDS: '2' }));
  const name = jobNameOf('node-005', 'pause-pkg');
  const mock = new MockActivityEnvironment();
  const beats: { status: string }[] = [];
  mock.on('heartbeat', (d: { status: string }) => beats.push(d));
  const running = mock.run(a.runStage, input);
  await until(
    'the Job exists',
    async () => (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0],
  );
  await a.suspendStageJob({ jobName: name, suspend: true });
  expect((await env.batch.readNamespacedJob({ name, namespace: ns })).spec?.suspend).toBe(true);
  await until('a suspended heartbeat', async () =>
    beats.some((b) => b.status.startsWith('suspended')) ? true : undefined,
  );
  await a.suspendStageJob({ jobName: name, suspend: false });
  await expect(running).resolves.toMatchObject({ outcome: 'complete' });
});

test('cancelling runStage stops the wait and leaves the Job in place', async () => {
  const input = stageInput('node-005', pkg('cancel-pkg', { KEELSON_SIM_SECONDS: '30' }));
  const name = jobNameOf('node-005', 'cancel-pkg');
  const mock = new MockActivityEnvironment();
  const running = mock.run(a.runStage, input);
  await until(
    'the Job exists',
    async () => (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0],
  );
  mock.cancel();
  await expect(running).rejects.toBeInstanceOf(CancelledFailure);
  const job = await env.batch.readNamespacedJob({ name, namespace: ns });
  expect(job.metadata?.deletionTimestamp).toBeUndefined();
  await a.deleteStageJob({ jobName: name });
  await until('the Job is gone', async () =>
    (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items.length === 0
      ? true
      : undefined,
  );
});

const podsOf = async (uid: string): Promise<V1Pod[]> =>
  (await env.core.listNamespacedPod({ namespace: ns, labelSelector: `batch.kubernetes.io/controller-uid=${uid}` }))
    .items;

const jobNamed = async (name: string): Promise<V1Job | undefined> =>
  (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0];

/** Starts a stage and stops waiting on it once its pod runs, as a stopped run does: the Job and pod stay. */
async function leaveRunning(input: RunStageInput): Promise<{ job: V1Job; pod: V1Pod }> {
  const mock = new MockActivityEnvironment();
  const running = mock.run(a.runStage, input);
  const name = jobNameOf(input.node, input.package.name, input.stage);
  const found = await until('the pod running', async () => {
    const job = await jobNamed(name);
    const pod = job && (await podsOf(job.metadata!.uid!)).find((p) => p.status?.phase === 'Running');
    return pod && { job, pod };
  });
  mock.cancel();
  await expect(running).rejects.toBeInstanceOf(CancelledFailure);
  return found;
}

const HOLD = 'keelson.dev/test-hold';

/** Sets the pod's finalizers from the ones it has now, guarded by its resource version. */
async function patchFinalizers(pod: V1Pod, next: (finalizers: string[]) => string[]): Promise<void> {
  const current = await env.core.readNamespacedPod({ name: pod.metadata!.name!, namespace: ns });
  await env.core.patchNamespacedPod({
    name: pod.metadata!.name!,
    namespace: ns,
    body: [
      { op: 'test', path: '/metadata/resourceVersion', value: current.metadata!.resourceVersion },
      { op: 'add', path: '/metadata/finalizers', value: next(current.metadata!.finalizers ?? []) },
    ],
  });
}

/** Keeps a pod in the API server once deleted (as a slow kubelet would), so its foreground-deleted Job stays too. */
const holdPod = (pod: V1Pod) => patchFinalizers(pod, (f) => [...f, HOLD]);
const releasePod = (pod: V1Pod) =>
  patchFinalizers(pod, (f) => {
    if (!f.includes(HOLD)) throw new Error(`pod ${pod.metadata!.name} lost the test's finalizer ${HOLD}`);
    return f.filter((x) => x !== HOLD);
  });

const seconds = (n: number) => new Promise((r) => setTimeout(r, n * 1000));

test("G11 a stale Job under the stage's name (another run) is deleted and replaced, never adopted", async () => {
  const node = 'node-004';
  const name = jobNameOf(node, 'rerun-pkg');
  const stale = await leaveRunning(
    stageInput(node, pkg('rerun-pkg', { KEELSON_SIM_SECONDS: '60' }), { runId: 'run-1' }),
  );
  expect(stale.job.metadata?.annotations?.[RUN_ANNOTATION]).toBe('run-1');
  await holdPod(stale.pod);
  const mock = new MockActivityEnvironment();
  const beats: { status: string }[] = [];
  mock.on('heartbeat', (d: { status: string }) => beats.push(d));
  const rerun = mock.run(a.runStage, stageInput(node, pkg('rerun-pkg'), { runId: 'run-2' }));
  try {
    // While run 1's pod is still there, its Job is being deleted and no Job of run 2 exists beside it.
    await until('a heartbeat naming the stale run', async () =>
      beats.some((b) => b.status.includes('stale job of run run-1')) ? true : undefined,
    );
    await seconds(2);
    const meanwhile = await jobNamed(name);
    expect(meanwhile?.metadata?.uid).toBe(stale.job.metadata?.uid);
    expect(meanwhile?.metadata?.deletionTimestamp).toBeDefined();
  } finally {
    await releasePod(stale.pod);
  }
  const result = await rerun;
  expect(result).toMatchObject({ outcome: 'complete', reason: 'Complete', adopted: false, jobName: name });
  const job = await env.batch.readNamespacedJob({ name, namespace: ns });
  expect(job.metadata?.uid).not.toBe(stale.job.metadata?.uid);
  expect(job.metadata?.annotations?.[RUN_ANNOTATION]).toBe('run-2');
  expect(await podsOf(stale.job.metadata!.uid!)).toEqual([]);
});

test('G11 a stale Job the watch cache does not show yet is replaced on the create conflict, not adopted', async () => {
  const node = 'node-004';
  const lagging = await laggingActivities(ns);
  // Run 1 failed after the lagging caches listed; its Job is kept for its logs (retention 600).
  const failed = await a.runStage(
    stageInput(node, pkg('lag-pkg', { KEELSON_SIM_FAIL_STAGES: 'apply' }), { runId: 'run-1' }),
  );
  expect(failed.outcome).toBe('failed');
  const result = await lagging.runStage(stageInput(node, pkg('lag-pkg'), { runId: 'run-2' }));
  expect(result).toMatchObject({ outcome: 'complete', adopted: false, jobName: failed.jobName });
  const job = await env.batch.readNamespacedJob({ name: failed.jobName, namespace: ns });
  expect(job.metadata?.annotations?.[RUN_ANNOTATION]).toBe('run-2');
});

test('G11 a Job the watch cache still shows but the API server no longer has is not adopted: the Job is created', async () => {
  const node = 'node-004';
  const done = await a.runStage(stageInput(node, pkg('ghost-pkg')));
  const lagging = await laggingActivities(ns);
  await env.batch.deleteNamespacedJob({ name: done.jobName, namespace: ns, propagationPolicy: 'Background' });
  await until('the Job gone', async () => ((await jobNamed(done.jobName)) ? undefined : true));
  const result = await lagging.runStage(stageInput(node, pkg('ghost-pkg')));
  expect(result).toMatchObject({ outcome: 'complete', adopted: false, jobName: done.jobName });
  expect(await jobNamed(done.jobName)).toBeDefined();
});

test('G11 deleteStageJob untilGone returns only once the Job and its pods are gone', async () => {
  const node = 'node-005';
  const name = jobNameOf(node, 'stopped-pkg');
  const { job, pod } = await leaveRunning(stageInput(node, pkg('stopped-pkg', { KEELSON_SIM_SECONDS: '60' })));
  await holdPod(pod);
  const mock = new MockActivityEnvironment();
  const beats: { status: string }[] = [];
  mock.on('heartbeat', (d: { status: string }) => beats.push(d));
  let returned = false;
  const deleting = mock.run(a.deleteStageJob, { jobName: name, untilGone: true }).then(() => (returned = true));
  try {
    await until('a heartbeat while the Job goes', async () =>
      beats.some((b) => b.status.includes(`job ${ns}/${name} to be gone`)) ? true : undefined,
    );
    await seconds(2);
    expect(returned).toBe(false);
    expect((await jobNamed(name))?.metadata?.deletionTimestamp).toBeDefined();
  } finally {
    await releasePod(pod);
  }
  await deleting;
  // Checked at once: nothing of the stopped run is left for the next stage to run beside.
  expect(await jobNamed(name)).toBeUndefined();
  expect(await podsOf(job.metadata!.uid!)).toEqual([]);
  // A failed Job goes too, whatever the retention; a Job already gone is done.
  const failed = await a.runStage(stageInput(node, pkg('stopped-bad', { KEELSON_SIM_FAIL_STAGES: 'apply' })));
  expect(failed.outcome).toBe('failed');
  await a.deleteStageJob({ jobName: failed.jobName, untilGone: true });
  expect(await jobNamed(failed.jobName)).toBeUndefined();
  await a.deleteStageJob({ jobName: failed.jobName, untilGone: true });
});

test('runStage and deleteStageJob name bad input instead of acting on it', async () => {
  await expect(a.runStage(stageInput('node-005', pkg('input-pkg'), { runId: '' }))).rejects.toMatchObject({
    type: 'InvalidActivityInput',
    nonRetryable: true,
    message: 'runId "": must be a non-empty string when given',
  });
  expect(await jobNamed(jobNameOf('node-005', 'input-pkg'))).toBeUndefined();
  const stoppedPod = { jobName: 'legacy-apply', untilGone: true, podNamespace: ns } as const;
  await expect(a.deleteStageJob(stoppedPod)).rejects.toMatchObject({
    type: 'InvalidActivityInput',
    message: expect.stringContaining('untilGone applies to Keelson Jobs'),
  });
});
