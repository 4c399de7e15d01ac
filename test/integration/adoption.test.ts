import type { V1Job } from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { buildStageJob, interruptJobName, stageJobName } from '../../model';
import type { RunInterruptInput } from '../../activities/contract';
import { jobContext } from '../../activities/stage-jobs';
import { workloadInformer } from '../../activities';
import { testNamespace, until, useTestNamespace } from '../../harness/kube';
import { pkg, ROLLOUT, stageInput, testActivities, testSettings } from './activity-env';

const env = testActivities('placeholder');
const ns = useTestNamespace(env.core, 'adopt');

/** A raw package pod as a NodeWright operator made it before Jobs (§3.1): labels, package annotation, init chain. */
function nodewrightPod(name: string, node: string, pkgName: string, stage: string, seconds: string) {
  const p = 'nodewright.nvidia.com/';
  const env = [{ name: 'KEELSON_SIM_SECONDS', value: seconds }];
  return {
    metadata: {
      name,
      labels: { [`${p}name`]: 'legacy-rollout', [`${p}package`]: `${pkgName}-1.0.0` },
      annotations: {
        [`${p}package`]: JSON.stringify({
          name: pkgName,
          version: '1.0.0',
          skyhook: 'legacy-rollout',
          stage,
          image: `registry.example/${pkgName}`,
        }),
      },
    },
    spec: {
      nodeName: node,
      restartPolicy: 'OnFailure',
      initContainers: [
        { name: `${pkgName}-init`, image: `registry.example/${pkgName}:1.0.0`, env },
        { name: `${pkgName}-${stage}`, image: 'registry.example/agent:6.4.1', env },
        { name: `${pkgName}-${stage}check`, image: 'registry.example/agent:6.4.1', env },
      ],
      containers: [{ name: 'pause', image: 'registry.example/pause:3.10' }],
    },
  };
}

test('G2 a raw pod labelled as a NodeWright package pod is adopted and no Job is created', async () => {
  const { activities } = testActivities(ns);
  await env.core.createNamespacedPod({
    namespace: ns,
    body: nodewrightPod('legacy-apply', 'node-006', 'legacy-pkg', 'apply', '3'),
  });
  const result = await activities.runStage(stageInput('node-006', pkg('legacy-pkg')));
  expect(result).toMatchObject({ outcome: 'complete', adopted: true, jobName: 'legacy-apply', reason: 'Complete' });
  const jobs = await env.batch.listJobForAllNamespaces({ labelSelector: 'keelson.dev/package=legacy-pkg' });
  expect(jobs.items).toHaveLength(0);
  const name = stageJobName({
    rollout: ROLLOUT,
    package: 'legacy-pkg',
    version: '1.0.0',
    stage: 'apply',
    node: 'node-006',
  });
  expect(
    (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items,
  ).toHaveLength(0);
});

test('G2 a crash-looping legacy raw pod is reported failed with its restarts', async () => {
  const { activities } = testActivities(ns);
  const body = nodewrightPod('legacy-config', 'node-006', 'legacy-pkg', 'config', '1');
  for (const c of body.spec.initContainers) c.env.push({ name: 'KEELSON_SIM_FAIL_STAGES', value: 'config' });
  await env.core.createNamespacedPod({ namespace: ns, body });
  const result = await activities.runStage(stageInput('node-006', pkg('legacy-pkg'), { stage: 'config' }));
  expect(result).toMatchObject({
    outcome: 'failed',
    adopted: true,
    jobName: 'legacy-config',
    reason: 'CrashLoopBackOff',
  });
  expect(result.failedPods).toBeGreaterThanOrEqual(1);
});

test('G2 the interrupt waits until no package workload of any family runs on the node', async () => {
  const { activities } = testActivities(ns);
  await env.core.createNamespacedPod({
    namespace: ns,
    body: nodewrightPod('legacy-slow', 'node-006', 'slow-legacy', 'apply', '6'),
  });
  const started = Date.now();
  const result = await activities.runInterrupt({
    rollout: ROLLOUT,
    kind: 'NodeWright',
    generation: 1,
    node: 'node-006',
    owner: pkg('owner-pkg'),
    interrupt: { type: 'noop' },
    timeoutSeconds: 120,
    additionalTolerations: [],
  });
  const waited = (Date.now() - started) / 1000;
  expect(result.outcome).toBe('complete');
  // The legacy pod ran 6s after creation; the interrupt Job could only start after it.
  expect(waited).toBeGreaterThanOrEqual(5);
  const legacy = await env.core.readNamespacedPod({ name: 'legacy-slow', namespace: ns });
  const job = await env.batch.readNamespacedJob({ name: result.jobName, namespace: ns });
  const lastInit = legacy.status!.initContainerStatuses!.at(-1)!.state!.terminated!.finishedAt!;
  expect(new Date(job.metadata!.creationTimestamp!).getTime()).toBeGreaterThanOrEqual(
    new Date(lastInit).getTime() - 1000,
  );
});

test("G11 Keelson's Jobs of another run or another rollout are never adopted; an older Keelson's Job still is", async () => {
  const { activities } = testActivities(ns);
  const other = await testNamespace(env.core, 'adopt-other');
  try {
    // Another worker (another namespace) ran the same package stage on the node: once for another rollout, once for
    // this rollout in an earlier run, and once for this rollout before Jobs carried a run.
    const elsewhere = testActivities(other).activities;
    const node = 'node-006';
    await elsewhere.runStage(stageInput(node, pkg('shared-pkg'), { rollout: `${ROLLOUT}-other`, runId: 'run-x' }));
    await elsewhere.runStage(stageInput(node, pkg('shared-pkg'), { runId: 'run-old' }));
    const fresh = await activities.runStage(stageInput(node, pkg('shared-pkg'), { runId: 'run-new' }));
    const name = stageJobName({ rollout: ROLLOUT, package: 'shared-pkg', version: '1.0.0', stage: 'apply', node });
    expect(fresh).toMatchObject({ outcome: 'complete', adopted: false, jobName: name });
    expect((await env.batch.readNamespacedJob({ name, namespace: ns })).metadata?.annotations).toMatchObject({
      'keelson.dev/run': 'run-new',
    });

    await elsewhere.runStage(stageInput(node, pkg('older-pkg')));
    const adopted = await activities.runStage(stageInput(node, pkg('older-pkg'), { runId: 'run-new' }));
    expect(adopted).toMatchObject({ outcome: 'complete', adopted: true });
    const own = stageJobName({ rollout: ROLLOUT, package: 'older-pkg', version: '1.0.0', stage: 'apply', node });
    expect(
      (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${own}` })).items,
    ).toHaveLength(0);
  } finally {
    await env.core.deleteNamespace({ name: other });
  }
});

test('G12 the interrupt waits for an unfinished stage Job whose pod does not exist yet', async () => {
  const { activities, clients } = testActivities(ns);
  const node = 'node-006';
  const settings = testSettings(ns);
  // Another rollout's stage Job on the node, created suspended: the Job controller makes no pod until it resumes.
  const input = stageInput(node, pkg('podless-pkg', { KEELSON_SIM_SECONDS: '2' }), { rollout: `${ROLLOUT}-podless` });
  const w = { clients, settings, workloads: workloadInformer(clients.kc, settings) };
  const manifest = buildStageJob(jobContext(w, input), input.package, 'apply');
  const stage = manifest.metadata.name;
  await env.batch.createNamespacedJob({
    namespace: ns,
    body: { ...manifest, spec: { ...manifest.spec, suspend: true } } as V1Job,
  });
  const rollout = `${ROLLOUT}-g12`;
  const mock = new MockActivityEnvironment();
  const beats: { status: string }[] = [];
  mock.on('heartbeat', (d: { status: string }) => beats.push(d));
  const interrupt: RunInterruptInput = {
    rollout,
    kind: 'NodeWright',
    generation: 1,
    node,
    owner: pkg('owner-pkg'),
    interrupt: { type: 'noop' },
    timeoutSeconds: 120,
    additionalTolerations: [],
    runId: 'run-1',
  };
  const interrupting = mock.run(activities.runInterrupt, interrupt);
  await until('a heartbeat naming the stage Job', async () =>
    beats.some((b) => b.status.includes(`unfinished stage job(s) on ${node}: ${ns}/${stage}`)) ? true : undefined,
  );
  const pods = await env.core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${stage}` });
  expect(pods.items).toEqual([]);
  const interruptJob = interruptJobName(rollout, 'noop', node);
  expect(
    (await env.batch.listNamespacedJob({ namespace: ns, fieldSelector: `metadata.name=${interruptJob}` })).items,
  ).toEqual([]);
  await env.batch.patchNamespacedJob({
    name: stage,
    namespace: ns,
    body: [{ op: 'replace', path: '/spec/suspend', value: false }],
  });
  const result = (await interrupting) as Awaited<ReturnType<typeof activities.runInterrupt>>;
  expect(result).toMatchObject({ outcome: 'complete', jobName: interruptJob, adopted: false });
  // The interrupt Job was created only once the stage Job had finished.
  const finished = (await env.batch.readNamespacedJob({ name: stage, namespace: ns })).status?.completionTime;
  const created = (await env.batch.readNamespacedJob({ name: interruptJob, namespace: ns })).metadata
    ?.creationTimestamp;
  expect(new Date(created!).getTime()).toBeGreaterThanOrEqual(new Date(finished!).getTime() - 1000);
});
