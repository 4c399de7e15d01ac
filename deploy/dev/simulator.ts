/**
 * Dev-only pod simulator: plays the kubelet for pods on the kwok fake nodes, per the simulation contract
 * (README.md). kwok keeps the nodes alive; this process makes their pods run, finish, fail and reboot nodes:
 * - a bound pod starts Running at once; a package or Job pod then runs KEELSON_SIM_SECONDS (default 1);
 * - a stage listed in KEELSON_SIM_FAIL_STAGES exits 1 (a Job pod ends Failed; a raw OnFailure pod crash-loops);
 * - an image whose registry host ends in `.invalid` never pulls (ErrImagePull, then ImagePullBackOff);
 * - a successful reboot interrupt gives the node a new boot ID and keeps it NotReady for KEELSON_SIM_REBOOT_SECONDS
 *   (default 5);
 * - a pod being deleted is removed at once, as a kubelet would after its containers stop.
 * Real clusters never see any of this: the agent does not read these variables.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type V1Container,
  type V1ContainerStatus,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { stateDir } from './paths';

const kc = new KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const podLogDir = path.join(stateDir, 'pod-logs');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategicPatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

const fakeNodes = new Set<string>();
const scheduled = new Set<string>(); // pod UIDs with a pending completion timer
const deleting = new Set<string>();

function log(message: string): void {
  process.stdout.write(`${new Date().toISOString()} ${message}\n`);
}

function envOf(pod: V1Pod): Map<string, string> {
  const env = new Map<string, string>();
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  for (const c of containers) for (const e of c.env ?? []) if (e.value !== undefined) env.set(e.name, e.value);
  return env;
}

function seconds(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && Number.isFinite(n) && n >= 0 ? n : fallback;
}

/** The package stage a pod runs, from the `<prefix>/package` annotation (Skyhook, NodeWright, Keelson) or a label. */
function stageOf(pod: V1Pod): string | undefined {
  for (const [key, value] of Object.entries(pod.metadata?.annotations ?? {})) {
    if (!key.endsWith('/package')) continue;
    try {
      const parsed = JSON.parse(value) as { stage?: unknown };
      if (typeof parsed.stage === 'string') return parsed.stage;
    } catch {
      // not a package annotation
    }
  }
  for (const [key, value] of Object.entries(pod.metadata?.labels ?? {})) if (key.endsWith('/stage')) return value;
  return undefined;
}

function isWorkload(pod: V1Pod): boolean {
  const ownedByJob = (pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'Job');
  return ownedByJob || stageOf(pod) !== undefined;
}

/** True when an interrupt container's base64 JSON argument asks for a node restart. */
function requestsReboot(pod: V1Pod): boolean {
  if (stageOf(pod) !== 'interrupt') return false;
  const args = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].flatMap((c) => [
    ...(c.args ?? []),
    ...(c.command ?? []),
  ]);
  return args.some((arg) => {
    const decoded = /^[A-Za-z0-9+/=]{8,}$/.test(arg) ? Buffer.from(arg, 'base64').toString('utf8') : arg;
    return /node_restart|"reboot"/.test(decoded);
  });
}

function unpullable(pod: V1Pod): V1Container | undefined {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => {
    const host = (c.image ?? '').split('/')[0] ?? '';
    return (c.image ?? '').includes('/') && host.split(':')[0]!.endsWith('.invalid');
  });
}

const now = () => new Date();

function terminated(c: V1Container, exitCode: number, restartCount = 0): V1ContainerStatus {
  return {
    name: c.name,
    image: c.image ?? '',
    imageID: `sim://${c.image ?? ''}`,
    ready: false,
    restartCount,
    state: {
      terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: now(), finishedAt: now() },
    },
  };
}

function running(c: V1Container, restartCount = 0): V1ContainerStatus {
  return {
    name: c.name,
    image: c.image ?? '',
    imageID: `sim://${c.image ?? ''}`,
    ready: true,
    started: true,
    restartCount,
    state: { running: { startedAt: now() } },
  };
}

async function patchPodStatus(pod: V1Pod, status: Record<string, unknown>): Promise<void> {
  await core.patchNamespacedPodStatus(
    { name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, body: { status } },
    mergePatch,
  );
}

function conditions(ready: boolean) {
  const status = ready ? 'True' : 'False';
  return ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
    type,
    status: type === 'PodScheduled' || type === 'Initialized' ? 'True' : status,
    lastTransitionTime: now(),
  }));
}

function logFileOf(pod: V1Pod): string {
  return path.join(podLogDir, `${pod.metadata!.namespace}_${pod.metadata!.name}_${pod.metadata!.uid}.log`);
}

/** Appends lines in the CRI log format that kwok serves as the pod's log (every container shares one file). */
function appendPodLog(pod: V1Pod, stream: 'stdout' | 'stderr', lines: string[]): void {
  const text = lines.map((line) => `${new Date().toISOString()} ${stream} F ${line}\n`).join('');
  fs.appendFileSync(logFileOf(pod), text);
}

/** Creates the pod's log file and the kwok Logs object that points at it, owned by the pod so it goes with it. */
async function startPodLog(pod: V1Pod, stage: string | undefined): Promise<void> {
  fs.mkdirSync(podLogDir, { recursive: true });
  appendPodLog(pod, 'stdout', [
    `[keelson-sim] ${stage ?? 'job'} started on ${pod.spec?.nodeName} (image ${pod.spec?.containers?.[0]?.image})`,
  ]);
  const { name, namespace, uid } = pod.metadata!;
  try {
    await custom.createNamespacedCustomObject({
      group: 'kwok.x-k8s.io',
      version: 'v1alpha1',
      namespace: namespace!,
      plural: 'logs',
      body: {
        apiVersion: 'kwok.x-k8s.io/v1alpha1',
        kind: 'Logs',
        metadata: { name, namespace, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name, uid }] },
        spec: { logs: [{ containers: [], logsFile: logFileOf(pod) }] },
      },
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}

async function start(pod: V1Pod): Promise<void> {
  const inits = pod.spec?.initContainers ?? [];
  const mains = pod.spec?.containers ?? [];
  const bad = unpullable(pod);
  if (bad) {
    const waiting = (reason: string): V1ContainerStatus => ({
      name: bad.name,
      image: bad.image ?? '',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason, message: `simulated: cannot pull ${bad.image}` } },
    });
    const key = inits.includes(bad) ? 'initContainerStatuses' : 'containerStatuses';
    await patchPodStatus(pod, { phase: 'Pending', [key]: [waiting('ErrImagePull')] });
    setTimeout(() => void patchPodStatus(pod, { [key]: [waiting('ImagePullBackOff')] }).catch(report), 2000);
    return;
  }
  const workload = isWorkload(pod);
  await patchPodStatus(pod, {
    phase: 'Running',
    hostIP: '127.0.0.1',
    podIP: '10.244.0.1',
    startTime: now(),
    conditions: conditions(!workload || inits.length === 0),
    initContainerStatuses: workload ? [] : inits.map((c) => terminated(c, 0)),
    containerStatuses: mains.map((c) => running(c)),
  });
  if (workload) {
    await startPodLog(pod, stageOf(pod));
    schedule(pod, 0);
  }
}

function schedule(pod: V1Pod, restarts: number): void {
  const uid = pod.metadata!.uid!;
  if (scheduled.has(uid)) return;
  scheduled.add(uid);
  const env = envOf(pod);
  setTimeout(
    () => {
      scheduled.delete(uid);
      finish(pod, restarts).catch(report);
    },
    seconds(env.get('KEELSON_SIM_SECONDS'), 1) * 1000,
  );
}

async function finish(pod: V1Pod, restarts: number): Promise<void> {
  const current = await core.readNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace! });
  if (current.metadata?.uid !== pod.metadata?.uid || current.metadata?.deletionTimestamp) return;
  const env = envOf(current);
  const stage = stageOf(current);
  const failing = (env.get('KEELSON_SIM_FAIL_STAGES') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const fails = stage !== undefined && failing.includes(stage);
  const inits = current.spec?.initContainers ?? [];
  const mains = current.spec?.containers ?? [];
  const terminal = current.spec?.restartPolicy === 'Never';
  // The failing container is the last init container (the stage check) or, without init containers, the main one.
  const failingInit = fails && inits.length > 0 ? inits.length - 1 : -1;

  if (!fails) {
    if (terminal || inits.length === 0) {
      await patchPodStatus(current, {
        phase: 'Succeeded',
        conditions: conditions(false),
        initContainerStatuses: inits.map((c) => terminated(c, 0)),
        containerStatuses: mains.map((c) => terminated(c, 0)),
      });
    } else {
      await patchPodStatus(current, {
        conditions: conditions(true),
        initContainerStatuses: inits.map((c) => terminated(c, 0, restarts)),
        containerStatuses: mains.map((c) => running(c)),
      });
    }
    appendPodLog(current, 'stdout', [`[keelson-sim] ${stage ?? 'job'} succeeded`]);
    log(`pod ${current.metadata!.namespace}/${current.metadata!.name} stage=${stage ?? '-'} succeeded`);
    if (requestsReboot(current))
      await reboot(current.spec!.nodeName!, seconds(env.get('KEELSON_SIM_REBOOT_SECONDS'), 5));
    return;
  }

  // KEELSON_SIM_LOG: extra text the failing stage prints, so tests can check what reaches node state (G3, G7).
  const extra = env.get('KEELSON_SIM_LOG');
  appendPodLog(current, 'stderr', [
    `[keelson-sim] ${stage} failed: exit code 1 (KEELSON_SIM_FAIL_STAGES=${env.get('KEELSON_SIM_FAIL_STAGES')})`,
    ...(extra ? extra.split('\n') : []),
  ]);
  log(`pod ${current.metadata!.namespace}/${current.metadata!.name} stage=${stage} failed (simulated)`);
  if (terminal) {
    await patchPodStatus(current, {
      phase: 'Failed',
      conditions: conditions(false),
      initContainerStatuses: inits.map((c, i) => terminated(c, i === failingInit ? 1 : 0)),
      containerStatuses: mains.map((c) => terminated(c, failingInit < 0 ? 1 : 0)),
    });
    return;
  }
  // OnFailure: the kubelet restarts the failed container in place, so the pod crash-loops and counts restarts.
  const failed = failingInit >= 0 ? inits[failingInit]! : mains[0]!;
  const crashLooping: V1ContainerStatus = {
    ...terminated(failed, 1, restarts + 1),
    lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: now(), finishedAt: now() } },
    state: { waiting: { reason: 'CrashLoopBackOff', message: 'simulated failure' } },
  };
  await patchPodStatus(current, {
    conditions: conditions(false),
    [failingInit >= 0 ? 'initContainerStatuses' : 'containerStatuses']: [crashLooping],
  });
  schedule(current, restarts + 1);
}

const REBOOT_REASON = 'KeelsonSimulatedReboot';
const rebooting = new Set<string>(); // nodes with a pending "Ready again" timer

async function setNodeReady(nodeName: string, ready: boolean, until?: Date, bootID?: string): Promise<void> {
  const status: Record<string, unknown> = {
    conditions: [
      {
        type: 'Ready',
        status: ready ? 'True' : 'False',
        reason: ready ? 'KubeletReady' : REBOOT_REASON,
        // The end of the NotReady spell is kept on the node, so a restarted simulator still ends it.
        message: ready ? 'simulated by kwok' : `simulated reboot until ${until!.toISOString()}`,
        lastHeartbeatTime: now(),
        lastTransitionTime: now(),
      },
    ],
  };
  if (bootID) status.nodeInfo = { bootID };
  await core.patchNodeStatus({ name: nodeName, body: { status } }, strategicPatch);
}

function readyAgainAt(nodeName: string, until: Date): void {
  if (rebooting.has(nodeName)) return;
  rebooting.add(nodeName);
  setTimeout(
    () => {
      rebooting.delete(nodeName);
      whenApiAnswers(`node ${nodeName} Ready after reboot`, () => setNodeReady(nodeName, true)).catch(report);
    },
    Math.max(0, until.getTime() - Date.now()),
  );
}

/**
 * A machine reboots whether or not the API server answers, and its kubelet reports the new boot ID once it can:
 * retried every second for up to ten minutes (a reboot lost to an API server outage left a rollout waiting for it).
 * A node deleted meanwhile ends the attempts.
 */
async function whenApiAnswers(what: string, call: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await call();
      log(what);
      return;
    } catch (err) {
      if (isNotFound(err)) return;
      if (attempt >= 600) throw err;
      if (attempt === 1) log(`${what}: not reported yet (${String(err)}); retrying every second`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

async function reboot(nodeName: string, notReadySeconds: number): Promise<void> {
  const bootID = randomUUID();
  let until = new Date();
  await whenApiAnswers(`node ${nodeName} rebooting: new boot ID ${bootID}, NotReady for ${notReadySeconds}s`, () => {
    until = new Date(Date.now() + notReadySeconds * 1000);
    return setNodeReady(nodeName, false, until, bootID);
  });
  readyAgainAt(nodeName, until);
}

/** A node left NotReady by a simulated reboot (say, across a simulator restart) becomes Ready when its time is up. */
function resumeReboot(node: V1Node): void {
  const ready = (node.status?.conditions ?? []).find((c) => c.type === 'Ready');
  if (ready?.status !== 'False' || ready.reason !== REBOOT_REASON) return;
  const until = new Date(/until (\S+)$/.exec(ready.message ?? '')?.[1] ?? 0);
  readyAgainAt(node.metadata!.name!, Number.isNaN(until.getTime()) ? new Date() : until);
}

async function finalizeDeletion(pod: V1Pod): Promise<void> {
  const uid = pod.metadata!.uid!;
  if (deleting.has(uid)) return;
  deleting.add(uid);
  try {
    // As a kubelet does: the stopped pod reports a terminal phase before it goes, so controllers that wait for
    // terminal pods (a Job with podReplacementPolicy Failed, or with finalizers) see it end.
    const phase = pod.status?.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed') {
      await patchPodStatus(pod, {
        phase: 'Failed',
        reason: 'Terminated',
        containerStatuses: (pod.spec?.containers ?? []).map((c) => terminated(c, 137)),
      }).catch(report);
    }
    await core.deleteNamespacedPod({
      name: pod.metadata!.name!,
      namespace: pod.metadata!.namespace!,
      // In the body too: client-node drops a zero query parameter, and only a zero grace period removes the pod.
      gracePeriodSeconds: 0,
      body: { gracePeriodSeconds: 0, preconditions: { uid } },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  } finally {
    deleting.delete(uid);
  }
}

function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 404;
}

function report(err: unknown): void {
  if (isNotFound(err)) return;
  log(`error: ${err instanceof Error ? err.message : String(err)}`);
}

async function onPod(pod: V1Pod): Promise<void> {
  const node = pod.spec?.nodeName;
  if (!node || !fakeNodes.has(node)) return;
  if (pod.metadata?.deletionTimestamp) return finalizeDeletion(pod);
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return;
  if (phase !== 'Running') return start(pod);
  // After a simulator restart, pick up workload pods whose run was in flight.
  const done = (pod.status?.initContainerStatuses ?? []).some((s) => s.state?.terminated || s.state?.waiting);
  if (isWorkload(pod) && !done && (pod.status?.containerStatuses ?? []).every((s) => s.state?.running))
    schedule(pod, 0);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- watch events carry untyped JSON objects
function watchForever(path: string, onObject: (type: string, obj: any) => void): void {
  const watch = new Watch(kc);
  const again = (reason: unknown) => {
    if (reason) log(`watch ${path} ended: ${reason instanceof Error ? reason.message : String(reason)}; restarting`);
    setTimeout(() => watchForever(path, onObject), 1000);
  };
  watch.watch(path, {}, onObject, again).catch(again);
}

async function main(): Promise<void> {
  watchForever('/api/v1/nodes', (type: string, node: V1Node) => {
    const name = node.metadata?.name;
    if (!name) return;
    if (type === 'DELETED' || node.metadata?.annotations?.['kwok.x-k8s.io/node'] !== 'fake') fakeNodes.delete(name);
    else {
      fakeNodes.add(name);
      resumeReboot(node);
    }
  });
  // Let the node watch fill the set before pods are judged against it.
  const nodes = await core.listNode();
  for (const n of nodes.items)
    if (n.metadata?.annotations?.['kwok.x-k8s.io/node'] === 'fake') fakeNodes.add(n.metadata.name!);
  watchForever('/api/v1/pods', (type: string, pod: V1Pod) => {
    if (type === 'ADDED' || type === 'MODIFIED') onPod(pod).catch(report);
  });
  log('simulator running');
}

main().catch((err: unknown) => {
  report(err);
  process.exit(1);
});
