import { stageJobName } from '../../model';
import { testNamespace } from '../harness/kube';
import { pkg, ROLLOUT, stageInput, testActivities } from './activity-env';

const env = testActivities('placeholder');
let ns: string;

beforeAll(async () => {
  ns = await testNamespace(env.core, 'adopt');
});
afterAll(async () => {
  await env.core.deleteNamespace({ name: ns });
});

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
