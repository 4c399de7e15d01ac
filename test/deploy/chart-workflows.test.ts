import { KubeConfig, RbacAuthorizationV1Api, type V1Job } from '@kubernetes/client-node';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { kubeClients, standInController, testNamespace } from '../../harness/kube';
import {
  createItestNodes,
  eventually,
  InProcessKeelson,
  nodeEntry,
  stageState,
  Timeline,
} from '../integration/worker-stack';
import { rolloutSpecOf } from '../../harness/manifests';
import { applyChart, jobsNamespaceOf, removeChart, serviceAccountKubeconfig, workerServiceAccount } from './chart-env';

// Whole workflows under the chart's RBAC: the chart is applied to the local RBAC apiserver, and a whole worker
// (workers/worker.ts startWorker) whose only Kubernetes credential is a token of the chart's worker ServiceAccount
// runs a rollout with a reboot on two fake nodes of its own: node listing and watches, cordon, protected-pod and
// drain checks, evictions, stage and interrupt Jobs and their ConfigMaps, pods and their logs, node-state writes,
// runtime-required taint removal and uncordon. Any call the chart does not allow is retried by the workflow and
// never succeeds, so a missing permission leaves the rollout unfinished and fails this test.

jest.setTimeout(900_000);

const { kc: adminKc, core } = kubeClients();
const release = `kw${Date.now().toString(36)}`;
const prefix = `kchw-${Date.now().toString(36).slice(-5)}`;
const RUNTIME_TAINT = { key: 'skyhook.nvidia.com', value: 'runtime-required', effect: 'NoSchedule' };
const PRINTED = 'module signature rejected';
/** Waits on a loaded 2-core machine shared with other suites. */
const LONG = 600_000;
let namespace = '';
let jobsNamespace = '';
let nodes: string[] = [];
let saKubeconfig = '';
let timeline: Timeline;
let worker: InProcessKeelson | undefined;

/** A workload pod on the node, managed by a controller, which the drain before a reboot must evict. */
async function createWorkload(node: string): Promise<void> {
  const ownerReferences = await standInController(core, namespace);
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: `workload-${node}`, labels: { app: 'workload' }, ownerReferences },
      spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    },
  });
}

beforeAll(async () => {
  namespace = await testNamespace(core, 'kchw');
  jobsNamespace = jobsNamespaceOf(namespace);
  applyChart(release, namespace);
  saKubeconfig = await serviceAccountKubeconfig(adminKc, release, namespace);
  nodes = await createItestNodes(core, prefix, 2, [RUNTIME_TAINT]);
  timeline = new Timeline(adminKc);
  await timeline.watch('job', `/apis/batch/v1/namespaces/${jobsNamespace}/jobs`);
  for (const node of nodes) await createWorkload(node);
  worker = await new InProcessKeelson(prefix, {
    KUBECONFIG: saKubeconfig,
    KEELSON_NAMESPACE: jobsNamespace,
    KEELSON_DRAIN_TIMEOUT_SECONDS: '300',
    KEELSON_REBOOT_TIMEOUT_SECONDS: '300',
  }).start();
}, 300_000);

afterAll(async () => {
  await worker?.stop();
  timeline?.stop();
  for (const n of nodes) await core.deleteNode({ name: n }).catch(() => undefined);
  await removeChart(adminKc, release, namespace);
});

test("the worker's only Kubernetes credential is the chart ServiceAccount's token", async () => {
  const kc = new KubeConfig();
  kc.loadFromFile(saKubeconfig);
  expect(kc.getCurrentUser()?.name).toBe(workerServiceAccount(release));
  expect(kc.getCurrentUser()?.token).toMatch(/^ey/);
  expect(kc.getCurrentUser()?.certFile ?? kc.getCurrentUser()?.keyFile).toBeUndefined();
});

test('a rollout with a reboot completes on 2 nodes under the chart ServiceAccount', async () => {
  const w = worker!;
  const bootIds = async () =>
    Promise.all(nodes.map(async (n) => (await core.readNode({ name: n })).status?.nodeInfo?.bootID));
  const before = await bootIds();
  await w.client.startRollout(
    rolloutSpecOf(
      'rbac-whole',
      nodes,
      {
        driver: { interrupt: { type: 'reboot' }, configMap: { 'driver.conf': 'mode=strict' } },
        tool: {},
      },
      { runtimeRequired: true },
    ),
  );
  await eventually(
    'the rollout complete',
    async () => expect((await w.client.rolloutStatus('rbac-whole')).status).toBe('complete'),
    LONG,
  );

  const after = await bootIds();
  for (const [i, node] of nodes.entries()) {
    // Rebooted (new boot ID), uncordoned, runtime-required taint removed, every package complete on the Node.
    expect(after[i]).not.toBe(before[i]);
    const n = await core.readNode({ name: node });
    expect(n.spec?.unschedulable ?? false).toBe(false);
    expect((n.spec?.taints ?? []).map((t) => t.key)).not.toContain(RUNTIME_TAINT.key);
    for (const pkg of ['driver', 'tool']) {
      expect((await nodeEntry(core, node, 'rbac-whole', pkg)).state).toBe('complete');
    }
    // The workload was evicted by the drain, which waits until it is gone.
    const workload = await core.readNamespacedPod({ name: `workload-${node}`, namespace }).then(
      () => 'still there',
      (err: { code?: number }) => err.code,
    );
    expect(workload).toBe(404);
  }
  // Stage and interrupt Jobs ran on both nodes, and each was deleted once recorded.
  const jobs = new Map(
    timeline.events.filter((e) => e.kind === 'job').map((e) => [e.obj.metadata?.uid, e.obj as V1Job]),
  );
  const stages = [...jobs.values()].map((j) => j.metadata?.labels?.['keelson.dev/stage']);
  expect(stages.filter((s) => s === 'interrupt')).toHaveLength(2);
  expect(stages.filter((s) => s === 'apply')).toHaveLength(4);
  const deleted = new Set(timeline.events.filter((e) => e.type === 'DELETED').map((e) => e.obj.metadata?.uid));
  expect([...jobs.keys()].filter((uid) => !deleted.has(uid))).toEqual([]);
  // The package and node-metadata ConfigMaps the stage pods mount were written with the chart's permissions.
  const configMaps = (await core.listNamespacedConfigMap({ namespace: jobsNamespace })).items.map(
    (c) => c.metadata?.name ?? '',
  );
  expect(configMaps.filter((n) => n.includes('driver')).length).toBeGreaterThanOrEqual(1);
  for (const node of nodes) expect(configMaps.filter((n) => n.includes(node)).length).toBeGreaterThanOrEqual(1);
});

test("a failed stage's log tail reaches node state under the chart ServiceAccount", async () => {
  const w = worker!;
  const node = nodes[0]!;
  await w.client.startRollout(rolloutSpecOf('rbac-logs', [node], { bad: { failStages: 'apply', log: PRINTED } }));
  await eventually(
    'the failure and its log tail in node state',
    async () => {
      const bad = await nodeEntry(core, node, 'rbac-logs', 'bad');
      expect(stageState(bad)).toBe('apply:erroring');
      expect(bad.lastError).toContain(PRINTED);
    },
    LONG,
  );
});

test('without pods/eviction in the ClusterRole the drain is refused (403) and the rollout does not finish', async () => {
  const w = worker!;
  const node = nodes[1]!;
  const rbac = adminKc.makeApiClient(RbacAuthorizationV1Api);
  const name = `${release}-keelson-${namespace}-worker`;
  const role = await rbac.readClusterRole({ name });
  const rules = role.rules!.filter((r) => !(r.resources ?? []).includes('pods/eviction'));
  expect(rules).toHaveLength(role.rules!.length - 1);
  await rbac.replaceClusterRole({ name, body: { ...role, rules } });
  await createWorkload(node);
  await w.client.startRollout(rolloutSpecOf('rbac-denied', [node], { fw: { interrupt: { type: 'reboot' } } }));
  await eventually(
    'the eviction refused',
    async () => {
      const failures = await w.activityFailures(nodeWorkflowId(w.cluster, node));
      expect(failures.join('\n')).toContain('forbidden: Keelson may not create eviction of pod');
    },
    LONG,
  );
  expect((await w.client.rolloutStatus('rbac-denied')).status).not.toBe('complete');
  expect((await core.readNamespacedPod({ name: `workload-${node}`, namespace })).metadata?.deletionTimestamp).toBe(
    undefined,
  );
});
