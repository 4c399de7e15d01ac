import { AppsV1Api, PolicyV1Api, type V1Job } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { buildInterruptJob, buildStageJob, drainRules } from '../../model';
import { workloadInformer } from '../../activities';
import type { RunInterruptInput, RunStageInput, StageResult } from '../../activities/contract';
import { jobContext } from '../../activities/stage-jobs';
import { isJobFinished } from '../../activities/workloads';
import { standInController, until, useTestNamespace } from '../../harness/kube';
import { pkg, ROLLOUT, testActivities, testSettings } from './activity-env';

const env = testActivities('placeholder');
const ns = useTestNamespace(env.core, 'drain');

test('a drain blocked by a PDB waits, then goes through when the PDB allows it', async () => {
  const { activities, kc } = testActivities(ns);
  const policy = kc.makeApiClient(PolicyV1Api);
  const node = 'node-008';
  const podBody = (name: string) => ({
    metadata: { name, labels: { app: 'guarded' } },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  });
  await env.core.createNamespacedPod({ namespace: ns, body: podBody('guarded-0') });
  // A DaemonSet that runs nowhere owns the hand-made pod, so the garbage collector keeps it.
  const ds = await kc.makeApiClient(AppsV1Api).createNamespacedDaemonSet({
    namespace: ns,
    body: {
      metadata: { name: 'ds' },
      spec: {
        selector: { matchLabels: { app: 'ds' } },
        template: {
          metadata: { labels: { app: 'ds' } },
          spec: {
            nodeSelector: { 'keelson.dev/nowhere': 'true' },
            containers: [{ name: 'ds', image: 'registry.example/ds:1' }],
          },
        },
      },
    },
  });
  await env.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: {
        name: 'ds-pod',
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: ds.metadata!.uid! }],
      },
      spec: { nodeName: node, containers: [{ name: 'ds', image: 'registry.example/ds:1' }] },
    },
  });

  await policy.createNamespacedPodDisruptionBudget({
    namespace: ns,
    body: { metadata: { name: 'guard' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'guarded' } } } },
  });
  await until('the PDB counts the pod healthy', async () => {
    const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'guard', namespace: ns });
    return pdb.status?.currentHealthy === 1 ? true : undefined;
  });
  // The cordon's drain check judges the pods as the drain does: a pod to evict leaves the drain to its activity.
  const ref = { rollout: `${ROLLOUT}-check`, kind: 'Skyhook' as const, generation: 1, node };
  const rules = { ...drainRules(undefined), force: true };
  expect(await activities.cordon({ ...ref, drainRules: rules })).toEqual({ nothingToDrain: false });
  expect(await activities.cordon(ref)).toBeUndefined();
  const started = Date.now();
  const draining = activities.drain({ node, timeoutSeconds: 60, onTimeout: 'fail' });
  await new Promise((r) => setTimeout(r, 4000));
  // Still blocked: the pod is there and not terminating.
  const blocked = await env.core.readNamespacedPod({ name: 'guarded-0', namespace: ns });
  expect(blocked.metadata?.deletionTimestamp).toBeUndefined();
  await policy.patchNamespacedPodDisruptionBudget({
    name: 'guard',
    namespace: ns,
    body: [{ op: 'replace', path: '/spec/minAvailable', value: 0 }],
  });
  await draining;
  const seconds = (Date.now() - started) / 1000;
  process.stderr.write(`[measure] PDB-blocked drain finished after ${seconds.toFixed(1)}s\n`);
  expect(seconds).toBeGreaterThanOrEqual(4);
  const left = await env.core.listNamespacedPod({ namespace: ns, fieldSelector: `spec.nodeName=${node}` });
  expect(left.items.map((p) => p.metadata?.name)).toEqual(['ds-pod']); // DaemonSet pods are skipped
  expect(await activities.cordon({ ...ref, drainRules: rules })).toEqual({ nothingToDrain: true });
  expect(await activities.uncordon(ref)).toBe(true);
});

test('a drain past its timeout with policy fail names the pods still there', async () => {
  const { activities, kc } = testActivities(ns);
  const policy = kc.makeApiClient(PolicyV1Api);
  const node = 'node-008';
  await env.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: 'stuck', labels: { app: 'stuck' } },
      spec: { nodeName: node, containers: [{ name: 'a', image: 'registry.example/a:1' }] },
    },
  });
  await policy.createNamespacedPodDisruptionBudget({
    namespace: ns,
    body: { metadata: { name: 'stuck' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'stuck' } } } },
  });
  await until('the PDB counts the pod healthy', async () =>
    (await policy.readNamespacedPodDisruptionBudget({ name: 'stuck', namespace: ns })).status?.currentHealthy === 1
      ? true
      : undefined,
  );
  await expect(activities.drain({ node, timeoutSeconds: 3, onTimeout: 'fail' })).rejects.toMatchObject({
    type: 'DrainTimeout',
    message: expect.stringContaining(`${ns}/stuck`),
  });
  await activities.drain({ node, timeoutSeconds: 2, onTimeout: 'force' });
  await expect(env.core.readNamespacedPod({ name: 'stuck', namespace: ns })).rejects.toMatchObject({ code: 404 });
});

test("kubectl's rules: a bare pod and emptyDir data block the drain, naming the options; the options let them go", async () => {
  const { activities } = testActivities(ns);
  const node = 'node-007';
  const owners = await standInController(env.core, ns);
  const container = { name: 'app', image: 'registry.example/app:1' };
  const pods = {
    managed: {
      metadata: { name: 'managed', ownerReferences: owners },
      spec: { nodeName: node, containers: [container] },
    },
    bare: { metadata: { name: 'bare' }, spec: { nodeName: node, containers: [container] } },
    scratch: {
      metadata: { name: 'scratch', ownerReferences: owners },
      spec: { nodeName: node, containers: [container], volumes: [{ name: 'tmp', emptyDir: {} }] },
    },
  };
  for (const body of Object.values(pods)) await env.core.createNamespacedPod({ namespace: ns, body });
  const kubectl = drainRules(undefined);
  await expect(activities.drain({ node, timeoutSeconds: 30, onTimeout: 'fail', rules: kubectl })).rejects.toMatchObject(
    {
      type: 'DrainBlocked',
      nonRetryable: true,
      message:
        `drain of node ${node} is blocked by 2 pod(s): ${ns}/bare (no controller would recreate it; allowed by ` +
        `drain.force: true), ${ns}/scratch (its emptyDir data would be lost; allowed by drain.deleteEmptyDirData: ` +
        "true); set the option in the rollout's spec.drain to evict them",
    },
  );
  // Blocked before anything is evicted, as kubectl drain refuses.
  const still = await env.core.listNamespacedPod({ namespace: ns, fieldSelector: `spec.nodeName=${node}` });
  expect(
    still.items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata?.name)
      .sort(),
  ).toEqual(['bare', 'managed', 'scratch']);
  // Only force: the emptyDir pod alone blocks.
  await expect(
    activities.drain({ node, timeoutSeconds: 30, onTimeout: 'fail', rules: drainRules({ force: true }) }),
  ).rejects.toMatchObject({ type: 'DrainBlocked', message: expect.not.stringContaining(`${ns}/bare`) });
  const rules = drainRules({ force: true, deleteEmptyDirData: true, gracePeriodSeconds: 0 });
  await activities.drain({ node, timeoutSeconds: 30, onTimeout: 'fail', rules });
  const left = await env.core.listNamespacedPod({ namespace: ns, fieldSelector: `spec.nodeName=${node}` });
  expect(left.items.map((p) => p.metadata?.name)).toEqual([]);
});

test('waitForProtectedPods waits while a protected pod runs and is bounded', async () => {
  const { activities } = testActivities(ns);
  const node = 'node-008';
  await env.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: 'precious', labels: { protect: 'yes' } },
      spec: { nodeName: node, containers: [{ name: 'a', image: 'registry.example/a:1' }] },
    },
  });
  const selector = { matchLabels: { protect: 'yes' } };
  expect(await activities.waitForProtectedPods({ node, selector, timeoutSeconds: 2 })).toBe(false);
  const waiting = activities.waitForProtectedPods({ node, selector, timeoutSeconds: 30 });
  await env.core.deleteNamespacedPod({ name: 'precious', namespace: ns });
  await expect(waiting).resolves.toBe(true);
});

test('a simulated reboot is detected by its new boot ID, then Ready', async () => {
  const { activities } = testActivities(ns);
  const node = 'node-009';
  const before = (await activities.readNode({ rollout: ROLLOUT, kind: 'Skyhook', generation: 1, node })).facts.bootId;
  const result = await activities.runInterrupt({
    rollout: ROLLOUT,
    kind: 'Skyhook',
    generation: 1,
    node,
    owner: pkg('reboot-pkg', { KEELSON_SIM_REBOOT_SECONDS: '3' }),
    interrupt: { type: 'reboot' },
    timeoutSeconds: 120,
    additionalTolerations: [],
  });
  expect(result.outcome).toBe('complete');
  const started = Date.now();
  await activities.waitForReboot({ node, previousBootId: before, timeoutSeconds: 60 });
  process.stderr.write(
    `[measure] reboot seen ${((Date.now() - started) / 1000).toFixed(1)}s after the interrupt Job completed\n`,
  );
  const after = await activities.readNode({ rollout: ROLLOUT, kind: 'Skyhook', generation: 1, node });
  expect(after.facts.bootId).not.toBe(before);
  expect(after.facts.ready).toBe(true);
  // No second reboot: waiting on the new boot ID times out with a clear failure.
  await expect(
    activities.waitForReboot({ node, previousBootId: after.facts.bootId, timeoutSeconds: 2 }),
  ).rejects.toMatchObject({ type: 'RebootTimeout' });
});

test('G13 a reboot interrupt waits in its own activity: complete once the node is back, RebootTimeout when it is not', async () => {
  const { activities } = testActivities(ns);
  const node = 'node-009';
  const ref = { rollout: `${ROLLOUT}-inside`, kind: 'Skyhook' as const, generation: 1, node };
  const before = (await activities.readNode(ref)).facts.bootId;
  const reboot: RunInterruptInput = {
    ...ref,
    owner: pkg('reboot-pkg', { KEELSON_SIM_REBOOT_SECONDS: '3' }),
    interrupt: { type: 'reboot' },
    timeoutSeconds: 120,
    additionalTolerations: [],
    runId: 'inside-1',
    reboot: { previousBootId: before, timeoutSeconds: 60 },
  };
  const rebooted = await activities.runInterrupt(reboot);
  expect(rebooted).toMatchObject({ outcome: 'complete', reason: 'Complete' });
  const after = (await activities.readNode(ref)).facts;
  expect(after.bootId).not.toBe(before);
  expect(after.ready).toBe(true);
  // An interrupt that does not reboot the node (a noop) with the reboot's wait: the node never comes back as new.
  const stayed = await activities.runInterrupt({
    ...ref,
    owner: pkg('noop-pkg'),
    interrupt: { type: 'noop' },
    timeoutSeconds: 120,
    additionalTolerations: [],
    runId: 'inside-2',
    reboot: { previousBootId: after.bootId, timeoutSeconds: 2 },
  });
  expect(stayed).toMatchObject({
    outcome: 'failed',
    reason: 'RebootTimeout',
    logTail: expect.stringMatching(/^RebootTimeout: node node-009 did not come back from its reboot within 2s/),
  });
  // A retry after its Job completed and went (its TTL ran out during a long reboot): the node already shows a new
  // boot ID, so no Job is created again and the node is not rebooted twice.
  await env.batch.deleteNamespacedJob({ name: rebooted.jobName, namespace: ns, propagationPolicy: 'Background' });
  await until(
    'the completed interrupt Job is gone',
    async () =>
      (await env.batch.readNamespacedJob({ name: rebooted.jobName, namespace: ns }).then(
        () => undefined,
        () => true,
      )) ?? undefined,
    30_000,
  );
  // The retry carries the heartbeat its earlier attempt sent while it waited for the reboot.
  const retry = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { rebootOf: rebooted.jobName } });
  const retried = (await retry.run(activities.runInterrupt, reboot)) as StageResult;
  expect(retried).toMatchObject({ outcome: 'complete', adopted: false });
  await expect(env.batch.readNamespacedJob({ name: retried.jobName, namespace: ns })).rejects.toMatchObject({
    code: 404,
  });
  expect((await activities.readNode(ref)).facts.bootId).toBe(after.bootId);
  // Without that heartbeat a new boot ID proves nothing of its own (an unrelated reboot): the run creates its Job.
  const unrelated = await activities.runInterrupt({ ...reboot, runId: 'inside-4' });
  expect(unrelated.outcome).toBe('complete');
  const job = await env.batch.readNamespacedJob({ name: unrelated.jobName, namespace: ns });
  expect(job.metadata?.annotations?.['keelson.dev/run']).toBe('inside-4');
});

test('G16 an interrupt on a node its rollout has not cordoned creates no Job: NotCordoned; cordoned, it runs', async () => {
  const { activities, clients } = testActivities(ns);
  const ref = { rollout: `${ROLLOUT}-lost`, kind: 'Skyhook' as const, generation: 1, node: 'node-008' };
  const input: RunInterruptInput = {
    ...ref,
    owner: pkg('noop-pkg'),
    interrupt: { type: 'noop' },
    timeoutSeconds: 120,
    additionalTolerations: [],
    runId: 'lost-1',
    cordoned: true,
  };
  await expect(activities.runInterrupt(input)).rejects.toMatchObject({
    type: 'NotCordoned',
    nonRetryable: true,
    message: expect.stringContaining(`node node-008 is not cordoned by rollout ${ref.rollout}`),
  });
  const settings = testSettings(ns);
  const w = { clients, settings, workloads: workloadInformer(clients.kc, settings) };
  const { name } = buildInterruptJob(jobContext(w, input), input.owner, input.interrupt).metadata;
  await expect(env.batch.readNamespacedJob({ name, namespace: ns })).rejects.toMatchObject({ code: 404 });
  await activities.cordon(ref);
  try {
    expect(await activities.runInterrupt(input)).toMatchObject({ outcome: 'complete' });
  } finally {
    await activities.uncordon(ref);
  }
});

test('G16 a stage of an interrupting package on a node its rollout has not cordoned creates no Job: NotCordoned; cordoned, it runs', async () => {
  const { activities, clients } = testActivities(ns);
  const ref = { rollout: `${ROLLOUT}-lost-stage`, kind: 'Skyhook' as const, generation: 1, node: 'node-008' };
  const input: RunStageInput = {
    ...ref,
    package: pkg('drv-pkg', {}, { interrupt: { type: 'reboot' } }),
    stage: 'apply',
    timeoutSeconds: 120,
    additionalTolerations: [],
    runId: 'lost-stage-1',
    cordoned: true,
  };
  await expect(activities.runStage(input)).rejects.toMatchObject({
    type: 'NotCordoned',
    nonRetryable: true,
    message: expect.stringContaining(`node node-008 is not cordoned by rollout ${ref.rollout}: its apply stage`),
  });
  const settings = testSettings(ns);
  const w = { clients, settings, workloads: workloadInformer(clients.kc, settings) };
  const { name } = buildStageJob(jobContext(w, input), input.package, 'apply').metadata;
  await expect(env.batch.readNamespacedJob({ name, namespace: ns })).rejects.toMatchObject({ code: 404 });
  await activities.cordon(ref);
  try {
    expect(await activities.runStage(input)).toMatchObject({ outcome: 'complete' });
  } finally {
    await activities.uncordon(ref);
  }
});

test('G11 a retained failed interrupt Job of an earlier run does not fail the next reboot', async () => {
  const { activities, clients } = testActivities(ns);
  const node = 'node-009';
  const input = (runId: string): RunInterruptInput => ({
    rollout: `${ROLLOUT}-g11`,
    kind: 'Skyhook',
    generation: 1,
    node,
    owner: pkg('reboot-pkg'),
    interrupt: { type: 'reboot' },
    timeoutSeconds: 120,
    additionalTolerations: [],
    runId,
  });
  // Run 1's reboot failed (its agent exited 1) and its Job is kept for its logs (retention 600).
  const settings = testSettings(ns);
  const w = { clients, settings, workloads: workloadInformer(clients.kc, settings) };
  const failing = buildInterruptJob(jobContext(w, input('run-1')), input('run-1').owner, { type: 'reboot' });
  failing.spec.template.spec.containers[0]!.env.push({ name: 'KEELSON_SIM_FAIL_STAGES', value: 'interrupt' });
  const stale = await env.batch.createNamespacedJob({ namespace: ns, body: failing as V1Job });
  await until(
    "run 1's interrupt Job failed",
    async () => {
      const job = await env.batch.readNamespacedJob({ name: failing.metadata.name, namespace: ns });
      return isJobFinished(job) === 'Failed' ? true : undefined;
    },
    90_000,
  );
  const before = (await activities.readNode({ rollout: ROLLOUT, kind: 'Skyhook', generation: 1, node })).facts.bootId;
  const result = await activities.runInterrupt(input('run-2'));
  expect(result).toMatchObject({ outcome: 'complete', adopted: false, jobName: failing.metadata.name });
  const job = await env.batch.readNamespacedJob({ name: result.jobName, namespace: ns });
  expect(job.metadata?.uid).not.toBe(stale.metadata?.uid);
  expect(job.metadata?.annotations?.['keelson.dev/run']).toBe('run-2');
  await activities.waitForReboot({ node, previousBootId: before, timeoutSeconds: 60 });
});
