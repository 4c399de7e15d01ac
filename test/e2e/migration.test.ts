import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Watch, type V1Pod } from '@kubernetes/client-node';
import { useE2E, PREFIX, eventually, skyhook, type NodeStateJson } from './e2e-stack';
import { leaveOperatorState, operatorEntry as entryOf } from './operator-state';

// Issue 8 item 3 (docs/migration.md): a cluster that a Skyhook operator managed until it was scaled to zero. Node A
// has kmod complete and driver half-way (apply in_progress, its raw package pod still running); node B has nothing.
// The same Skyhook manifest started in Keelson must take over without a second executor and without re-running what
// is done. As in step 2 of the guide, no Skyhook operator may run against the cluster meanwhile: one (such as the
// bench's) would itself record the legacy pod's success in nodeState and delete the pod.

const e2e = useE2E('mig', { nodes: 2 });
const ROLLOUT = 'gpu-stack';
const OPERATOR_NS = `${e2e.cluster}-skyhook`;
const AGENT = 'registry.example/skyhook/agent:6.4.1';
// Long enough that the legacy stage still runs when Keelson reaches the node (the simulator reads the pod's env).
const LEGACY_SECONDS = 60;
const packages = { kmod: { version: '1.0.0' }, driver: { version: '2.0.0' } };
const B_STAGES = ['driver@2.0.0:apply', 'driver@2.0.0:config', 'kmod@1.0.0:apply', 'kmod@1.0.0:config'];

beforeAll(async () => {
  await e2e.core.createNamespace({ body: { metadata: { name: OPERATOR_NS, labels: { 'keelson.dev/test': 'e2e' } } } });
});

afterAll(async () => {
  await e2e.core.deleteNamespace({ name: OPERATOR_NS }).catch(() => undefined);
});

/** Skyhook's generateSafeName: parts joined by `-`, dots to dashes, lowercased, cut, suffixed with 8 sha256 hex. */
function skyhookSafeName(max: number, ...parts: string[]): string {
  const joined = parts.join('-').replace(/\./g, '-').toLowerCase();
  const hash = createHash('sha256').update(joined).digest('hex').slice(0, 8);
  return `${joined.slice(0, max - hash.length - 1).replace(/-+$/, '')}-${hash}`;
}

/** Every pod of the operator namespace by UID, last value seen (a pod deleted later is still counted). */
async function recordOperatorPods(pods: Map<string, V1Pod>): Promise<() => void> {
  let stopped = false;
  let req: { abort(): void } | undefined;
  // A watch the apiserver ends (timeout, restart) starts again; its first events list what exists.
  const go = async () => {
    if (stopped) return;
    req = await new Watch(e2e.kc).watch(
      `/api/v1/namespaces/${OPERATOR_NS}/pods`,
      {},
      (_type: string, pod: V1Pod) => void pods.set(pod.metadata!.uid!, pod),
      () => void setTimeout(() => void go(), 200),
    );
  };
  await go();
  return () => {
    stopped = true;
    req?.abort();
  };
}

/** The legacy pod's stage is over: its last init container (the stage check) has terminated. */
function stageFinished(pod: V1Pod | undefined): boolean {
  return pod?.status?.initContainerStatuses?.at(-1)?.state?.terminated !== undefined;
}

/** The raw package pod Skyhook's operator runs for one stage (§3.1): labels, package annotation, init chain, pause. */
function legacyStagePod(node: string, pkg: string, version: string, stage: string): V1Pod {
  const image = `registry.example/keelson/${pkg}`;
  const copyDir = `/var/lib/skyhook/${ROLLOUT}/${pkg}-${version}-0a1b2c3d-1`;
  const env = [
    { name: 'SKYHOOK_LOG_DIR', value: `/var/log/skyhook/${ROLLOUT}` },
    { name: 'SKYHOOK_ROOT_DIR', value: `/var/lib/skyhook/${ROLLOUT}` },
    { name: 'COPY_RESOLV', value: 'false' },
    { name: 'SKYHOOK_RESOURCE_ID', value: `${ROLLOUT}-0a1b2c3d-1_${pkg}_${version}` },
    { name: 'KEELSON_SIM_SECONDS', value: String(LEGACY_SECONDS) },
  ];
  const agent = (mode: string) => ({
    name: `${pkg}-${mode.replace('-', '')}`,
    image: AGENT,
    args: [mode, '/root', copyDir],
    env,
    securityContext: { privileged: true },
    volumeMounts: [{ name: 'root-mount', mountPath: '/root', mountPropagation: 'HostToContainer' }],
  });
  return {
    metadata: {
      name: skyhookSafeName(63, ROLLOUT, pkg, version, stage, node),
      labels: { [`${PREFIX}name`]: ROLLOUT, [`${PREFIX}package`]: `${pkg}-${version}` },
      annotations: {
        [`${PREFIX}package`]: JSON.stringify({ name: pkg, version, skyhook: ROLLOUT, stage, image }),
      },
      // Skyhook also sets a controller ownerReference to the Skyhook object; there is no Skyhook CRD here, and the
      // garbage collector would delete a pod whose owner it cannot find.
    },
    spec: {
      nodeName: node,
      restartPolicy: 'OnFailure',
      hostPID: true,
      hostNetwork: true,
      tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists' }],
      volumes: [{ name: 'root-mount', hostPath: { path: '/' } }],
      initContainers: [
        {
          name: `${pkg}-init`,
          image: `${image}:${version}`,
          imagePullPolicy: 'Always',
          command: ['/bin/sh', '-c', 'mkdir -p /root/${SKYHOOK_DIR} && cp -r /skyhook-package/* /root/${SKYHOOK_DIR}'],
          env,
        },
        agent(stage),
        agent(`${stage}-check`),
      ],
      containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }],
    },
  };
}

test('migration: Skyhook node state and a running legacy pod are adopted; no completed stage runs again', async () => {
  const [a, b] = e2e.nodes as [string, string];
  // The worker bundles its workflows first (minutes on a loaded machine); the legacy stage must outlast that.
  await eventually(
    'worker running',
    async () => expect(readFileSync(e2e.workerLog, 'utf8')).toContain("'RUNNING'"),
    240_000,
  );
  // Node A as the operator left it: kmod done, the driver's apply in progress.
  await leaveOperatorState(e2e.core, a, ROLLOUT, {
    'kmod|1.0.0': entryOf('kmod', '1.0.0', 'config', 'complete'),
    'driver|2.0.0': entryOf('driver', '2.0.0', 'apply', 'in_progress'),
  });
  const operatorPods = new Map<string, V1Pod>();
  const stopPods = await recordOperatorPods(operatorPods);
  const legacy = await e2e.core.createNamespacedPod({
    namespace: OPERATOR_NS,
    body: legacyStagePod(a, 'driver', '2.0.0', 'apply'),
  });
  const legacyNow = () => operatorPods.get(legacy.metadata!.uid!);
  await eventually('the legacy driver apply pod runs', async () => {
    expect(legacyNow()?.status?.phase).toBe('Running');
    expect(stageFinished(legacyNow())).toBe(false);
  });
  // Keelson's takeover is its first write of the driver entry (attempts 1 at apply/in_progress): was the legacy
  // stage still running then?
  let runningAtTakeover: boolean | undefined;
  const stopNodes = await e2e.watchNodes((n) => {
    const raw = n.metadata?.annotations?.[`${PREFIX}nodeState_${ROLLOUT}`];
    if (n.metadata?.name !== a || raw === undefined || runningAtTakeover !== undefined) return;
    const driver = (JSON.parse(raw) as NodeStateJson)['driver|2.0.0'];
    if (driver?.stage === 'apply' && (driver as { attempts?: number }).attempts === 1)
      runningAtTakeover = !stageFinished(legacyNow());
  });
  try {
    await e2e.start_(ROLLOUT, [skyhook({ name: ROLLOUT, nodes: [a, b], packages })]);
    await e2e.waitComplete(ROLLOUT, 240_000);
  } finally {
    stopNodes();
    stopPods();
  }
  expect(runningAtTakeover).toBe(true);

  // Node A: kmod untouched, driver apply not started again (the legacy pod was waited on); only driver config ran.
  expect(e2e.workloads.jobKeys(a)).toEqual(['driver@2.0.0:config']);
  expect(e2e.workloads.podKeys(a)).toEqual(['driver@2.0.0:config']);
  expect(e2e.workloads.jobKeys(b)).toEqual(B_STAGES);
  expect(e2e.workloads.podKeys(b)).toEqual(B_STAGES);
  // Nothing else appeared where the operator ran its pods: the one legacy pod, never replaced.
  expect([...operatorPods.keys()]).toEqual([legacy.metadata!.uid]);
  // driver config started only after the legacy apply pod's last init container (the apply check) had exited 0.
  const done = legacyNow()!.status!.initContainerStatuses!.at(-1)!;
  expect(done.state?.terminated?.exitCode).toBe(0);
  const configJob = e2e.workloads.job(a, 'driver@2.0.0:config')!;
  expect(new Date(configJob.metadata!.creationTimestamp!).getTime()).toBeGreaterThanOrEqual(
    new Date(done.state!.terminated!.finishedAt!).getTime() - 1000,
  );

  // The node state Skyhook would write at the end, plus Keelson's attempts counter on the stages it ran.
  expect(await e2e.nodeState(a, ROLLOUT)).toEqual({
    'kmod|1.0.0': entryOf('kmod', '1.0.0', 'config', 'complete'),
    'driver|2.0.0': { ...entryOf('driver', '2.0.0', 'config', 'complete'), attempts: 1 },
  });
  expect(await e2e.nodeState(b, ROLLOUT)).toEqual({
    'kmod|1.0.0': { ...entryOf('kmod', '1.0.0', 'config', 'complete'), attempts: 1 },
    'driver|2.0.0': { ...entryOf('driver', '2.0.0', 'config', 'complete'), attempts: 1 },
  });
  for (const n of [a, b]) {
    const node = await e2e.node(n);
    expect(node.metadata?.labels?.[`${PREFIX}status_${ROLLOUT}`]).toBe('complete');
    expect(node.metadata?.annotations?.[`${PREFIX}status_${ROLLOUT}`]).toBe('complete');
    const notReady = node.status?.conditions?.find((c) => c.type === `${PREFIX}${ROLLOUT}/NotReady`);
    expect(notReady).toMatchObject({ status: 'False', reason: 'Complete' });
  }
  expect(await e2e.status(ROLLOUT)).toMatchObject({ status: 'complete', completeNodes: '2/2' });
}, 300_000);

test('migration: the adopted legacy pod is deleted once its outcome is recorded, so a later rerun runs the stage', async () => {
  const [a] = e2e.nodes as [string, string];
  // Skyhook deletes a package pod once its success is recorded; its pause container would otherwise keep it Running
  // and every later rerun would "adopt" the finished pod instead of running the stage.
  const legacy = await e2e.core.listNamespacedPod({ namespace: OPERATOR_NS });
  expect(legacy.items.filter((p) => !p.metadata?.deletionTimestamp)).toEqual([]);
  e2e.workloads.clear();
  expect(await e2e.cliOk(['node', 'rerun', a, '--rollout', ROLLOUT, '--package', 'driver'])).toBe(
    `node ${a}: driver of ${ROLLOUT} runs again\n`,
  );
  const rerun = ['driver@2.0.0:apply', 'driver@2.0.0:config'];
  await eventually(
    'driver apply and config Jobs on node A',
    async () => expect(e2e.workloads.jobKeys(a)).toEqual(rerun),
    240_000,
  );
  await e2e.statusUntil(ROLLOUT, 'complete again', (s) => expect(s.status).toBe('complete'), 240_000);
  expect(e2e.workloads.jobKeys(a)).toEqual(rerun);
}, 600_000);
