import { MockActivityEnvironment } from '@temporalio/testing';
import { CancelledFailure } from '@temporalio/common';
import { stageJobName } from '../../model';
import { testNamespace, until } from '../harness/kube';
import { pkg, ROLLOUT, stageInput, testActivities } from './activity-env';

const env = testActivities('placeholder');
let ns: string;
let a: ReturnType<typeof testActivities>['activities'];

beforeAll(async () => {
  ns = await testNamespace(env.core, 'stage');
  a = testActivities(ns).activities;
});
afterAll(async () => {
  await env.core.deleteNamespace({ name: ns });
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
  expect(seconds).toBeGreaterThanOrEqual(4);
  expect(seconds).toBeLessThan(5 + 10);
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
