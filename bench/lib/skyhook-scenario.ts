import path from 'node:path';
import { CustomObjectsApi, Watch, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { API_GROUPS, API_VERSION, DEFAULT_KEY_PREFIX, RESOURCE_PLURALS } from '../../model/wire';
import { CpuMeter, perNodeStage, stackRoles } from './cpu';
import {
  BENCH_LABEL,
  Fleet,
  apiserverLatency,
  apiserverMeanMs,
  apiserverSample,
  diffCounts,
  duplicateJobs,
  inFlightNodes,
  keepWatching,
  overheads,
  nodeSpans,
  podToRunning,
  runBeyondSim,
  runningBeyondSim,
  recordNodeStates,
  sleep,
  total,
  type JobRecord,
} from './fleet';
import { quantile } from './quantile';
import { sampleBudget, watchRunNodes, type BudgetUse } from './run-nodes';
import { INTERRUPTING, benchManifest, defaultTimeoutMs, type RolloutFigures } from './scenario';
import { SkyhookOperator } from './skyhook-operator';

// The bench rollout (bench/lib/scenario.ts benchManifest, unchanged) run by NVIDIA Skyhook's operator on fake nodes
// of its own, measured with the Keelson bench's definitions: a Skyhook stage pod plays the part of a stage Job.

export interface SkyhookScenarioOptions {
  nodes: number;
  budget: number;
  simSeconds: number;
  rebootSeconds?: number;
  /** Directory of the built operator (installSkyhook). */
  operatorDir: string;
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface SkyhookScenarioResult extends RolloutFigures {
  operatorRequests: { total: number; perNodeStage: number; byMethod: Record<string, number> };
  operatorPeakRssMiB: number;
  checks: {
    duplicatePods: string[];
    backwards: string[];
    leftCordoned: string[];
    /** Stage pods started on a node still NotReady after a simulated reboot, and the seconds gained by that. */
    startedWhileNotReady: { count: number; seconds: number };
  };
}

const SKYHOOK = { group: API_GROUPS.Skyhook, version: API_VERSION, plural: RESOURCE_PLURALS.Skyhook };
const PACKAGE_ANNOTATION = `${DEFAULT_KEY_PREFIX}package`;

/** Skyhook reads a stage's end from its init containers: all terminated with exit code 0 (the pause keeps running). */
function initsSucceeded(pod: V1Pod): boolean {
  const inits = pod.status?.initContainerStatuses ?? [];
  return inits.length > 0 && inits.every((s) => s.state?.terminated?.exitCode === 0);
}

/** Records every Skyhook stage pod in the namespace, as recordJobs does for Keelson's Jobs. */
async function recordPods(kc: KubeConfig, namespace: string) {
  const pods = new Map<string, JobRecord>();
  const stop = await keepWatching<V1Pod>(kc, `/api/v1/namespaces/${namespace}/pods`, {}, (type, pod) => {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    let r = pods.get(uid);
    if (!r) {
      const pkg = JSON.parse(pod.metadata?.annotations?.[PACKAGE_ANNOTATION] ?? '{}') as {
        name?: string;
        version?: string;
        stage?: string;
      };
      const env = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].flatMap((c) => c.env ?? []);
      const sim = env.find((e) => e.name === 'KEELSON_SIM_SECONDS')?.value;
      r = {
        uid,
        name: pod.metadata?.name ?? '',
        node: pod.spec?.nodeName ?? '',
        package: pkg.name ?? '',
        version: pkg.version ?? '',
        stage: pkg.stage ?? '',
        // As in recordJobs: the simulator's default when the pod does not set it (Skyhook's interrupt pod).
        simSeconds: sim === undefined ? 1 : Number(sim),
        seenCreated: Date.now(),
      };
      pods.set(uid, r);
    }
    if (pod.status?.phase === 'Running') r.seenRunning ??= Date.now();
    if (r.seenComplete === undefined && initsSucceeded(pod)) r.seenComplete = Date.now();
    // A pod deleted unfinished is no longer work in flight (the budget sampler's reading).
    if (type === 'DELETED') r.seenGone ??= Date.now();
  });
  return { pods, stop };
}

/** Local times each node was seen NotReady and Ready again (the simulator's reboots), from one watch. */
async function recordNotReady(kc: KubeConfig, selector: string) {
  const spells = new Map<string, { from: number; to?: number }[]>();
  const watch = await new Watch(kc).watch(
    '/api/v1/nodes',
    { labelSelector: selector },
    (_type: string, node: V1Node) => {
      const name = node.metadata?.name ?? '';
      const ready = (node.status?.conditions ?? []).find((c) => c.type === 'Ready')?.status === 'True';
      const list = spells.get(name) ?? [];
      const open = list.length > 0 && list[list.length - 1]!.to === undefined;
      if (!ready && !open) list.push({ from: Date.now() });
      if (ready && open) list[list.length - 1]!.to = Date.now();
      spells.set(name, list);
    },
    () => undefined,
  );
  return { spells, stop: () => watch.abort() };
}

/**
 * Stage pods seen created while their node was NotReady, and the seconds from then to Ready again. A kubelet that is
 * rebooting starts no pod; the dev simulator does, so this is time Skyhook gains here that a real node would not give.
 */
function startedWhileNotReady(pods: JobRecord[], spells: Map<string, { from: number; to?: number }[]>) {
  let count = 0;
  let seconds = 0;
  for (const p of pods) {
    const spell = (spells.get(p.node) ?? []).find((w) => w.from <= p.seenCreated && p.seenCreated < (w.to ?? Infinity));
    if (!spell) continue;
    count++;
    seconds += ((spell.to ?? p.seenCreated) - p.seenCreated) / 1000;
  }
  return { count, seconds: Math.round(seconds * 10) / 10 };
}

/**
 * The local time the Skyhook's own status is first seen `complete` (one watch). Not the makespan's detector (that is
 * the run's node watch, as for Keelson): read after it, to show the operator's own view agrees, and how much later.
 */
function statusComplete(kc: KubeConfig, name: string): { seen: Promise<number>; cancel(): void } {
  let resolveSeen!: (t: number) => void;
  const seen = new Promise<number>((resolve) => (resolveSeen = resolve));
  const stopping = keepWatching<{ status?: { status?: string } }>(
    kc,
    `/apis/${SKYHOOK.group}/${SKYHOOK.version}/${SKYHOOK.plural}`,
    { fieldSelector: `metadata.name=${name}` },
    (_type, obj) => {
      if (obj.status?.status === 'complete') resolveSeen(Date.now());
    },
  );
  return { seen, cancel: () => void stopping.then((stop) => stop()) };
}

export async function runSkyhookScenario(label: string, o: SkyhookScenarioOptions): Promise<SkyhookScenarioResult> {
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rebootSeconds = o.rebootSeconds ?? 5;
  const id = `${label}-${Date.now().toString(36)}`.slice(0, 40);
  // Only its nodes and namespace: no Keelson worker is started for this fleet.
  const fleet = new Fleet({ id });
  const custom = fleet.kc.makeApiClient(CustomObjectsApi);
  await fleet.core.createNamespace({
    body: { metadata: { name: fleet.namespace, labels: { 'keelson.dev/test': 'bench' } } },
  });
  const operator = new SkyhookOperator(o.operatorDir, fleet.namespace, path.join(fleet.dir, 'operator.log'));
  // No Temporal here: the operator's own process and the shared stack's.
  const cpu = new CpuMeter({ operator: () => operator.pid, ...stackRoles() });
  let created = false;
  try {
    const names = await fleet.createNodes(o.nodes);
    const selector = `${BENCH_LABEL}=${fleet.cluster}`;
    const podRec = await recordPods(fleet.kc, fleet.namespace);
    const nodeRec = await recordNodeStates(fleet.kc, selector, id);
    const readyRec = await recordNotReady(fleet.kc, selector);
    const runNodes = await watchRunNodes(fleet.kc, selector, id);
    const crStatus = statusComplete(fleet.kc, id);
    let sampler: { stop(): BudgetUse } | undefined;
    try {
      await operator.start();
      // As for the Keelson worker: let it settle (informers synced) before the clock starts.
      await sleep(3000);
      const manifest = benchManifest(id, { [BENCH_LABEL]: fleet.cluster }, o.budget, o.simSeconds, rebootSeconds);
      const before = await apiserverSample();
      cpu.start();
      const t0 = Date.now();
      await custom.createClusterCustomObject({ ...SKYHOOK, body: manifest });
      created = true;
      sampler = sampleBudget(
        { budget: o.budget, t0, inFlightNodes: () => inFlightNodes(podRec.pods.values()), runNodes },
        () => cpu.sample(),
      );
      log(`${label}: skyhook ${id} created on ${o.nodes} nodes, budget ${o.budget} (operator log ${operator.logFile})`);
      const progress = setInterval(() => {
        const done = [...podRec.pods.values()].filter((p) => p.seenComplete !== undefined).length;
        log(
          `${label}: ${((Date.now() - t0) / 1000).toFixed(0)}s, ${done} stage pods complete, ` +
            `${runNodes.completeCount()} nodes complete`,
        );
      }, 15_000);
      // The same detector as the Keelson run's: the watch event that shows the last node complete and schedulable.
      const t1 = await runNodes
        .untilComplete(o.nodes, o.timeoutMs ?? defaultTimeoutMs(o.nodes))
        .finally(() => clearInterval(progress));
      const cpuSeconds = cpu.stop();
      const budgetUse = sampler.stop();
      const after = await apiserverSample();
      const crAt = await Promise.race([crStatus.seen, sleep(120_000).then(() => NaN)]);
      if (Number.isNaN(crAt)) throw new Error(`skyhook ${id}: nodes complete, its status not after 120s`);
      // Late watch events and the operator's last requests of the pass that saw completion.
      await sleep(1500);
      const own = await operator.requests();
      const pods = [...podRec.pods.values()];
      const perNode = pods.filter((p) => p.node === names[0]);
      const nodeStages = pods.length;
      const idealSeconds =
        Math.ceil(o.nodes / o.budget) * (perNode.reduce((s, p) => s + p.simSeconds, 0) + rebootSeconds);
      const makespanSeconds = (t1 - t0) / 1000;
      const gaps = overheads(pods, rebootSeconds, INTERRUPTING);
      const ov = gaps.plain;
      const api = diffCounts(after.requests, before.requests);
      const r2 = (x: number) => Math.round(x * 100) / 100;
      const nodes = await fleet.core.listNode({ labelSelector: selector });
      return {
        label,
        nodes: o.nodes,
        budget: o.budget,
        nodeStages,
        stagesPerNode: perNode.length,
        makespanSeconds: r2(makespanSeconds),
        idealSeconds,
        ratio: r2(makespanSeconds / idealSeconds),
        overheadMs: {
          count: ov.length,
          p50: quantile(ov, 0.5),
          p95: quantile(ov, 0.95),
          p99: quantile(ov, 0.99),
          max: ov[ov.length - 1] ?? NaN,
        },
        stageToStageMs: {
          count: gaps.stageToStage.length,
          p50: quantile(gaps.stageToStage, 0.5),
          p95: quantile(gaps.stageToStage, 0.95),
          p99: quantile(gaps.stageToStage, 0.99),
        },
        runBeyondSimMs: runBeyondSim(pods),
        podToRunningMs: podToRunning(pods),
        runningBeyondSimMs: runningBeyondSim(pods),
        apiserverMeanMs: apiserverMeanMs(after, before),
        apiserverLatency: apiserverLatency(after, before).slice(0, 12),
        machineBusy: cpu.machineBusy,
        nodeSpanSeconds: { p50: quantile(nodeSpans(pods), 0.5), max: Math.max(...nodeSpans(pods)) },
        apiserverRequests: { total: total(api), perNodeStage: r2(total(api) / nodeStages), byVerbResource: api },
        operatorRequests: { total: total(own), perNodeStage: r2(total(own) / nodeStages), byMethod: own },
        operatorPeakRssMiB: operator.peakRssMiB,
        budgetUse,
        cpuSeconds,
        cpuPerNodeStage: perNodeStage(cpuSeconds, nodeStages),
        statusCompleteLagSeconds: r2((crAt - t1) / 1000),
        checks: {
          duplicatePods: duplicateJobs(pods),
          backwards: nodeRec.backwards,
          leftCordoned: nodes.items.filter((n) => n.spec?.unschedulable === true).map((n) => n.metadata!.name!),
          startedWhileNotReady: startedWhileNotReady(pods, readyRec.spells),
        },
      };
    } finally {
      sampler?.stop();
      crStatus.cancel();
      runNodes.stop();
      podRec.stop();
      nodeRec.stop();
      readyRec.stop();
    }
  } finally {
    // The Skyhook's finalizer needs the operator: delete it first, then stop the operator, then nodes and namespace.
    if (created) await deleteSkyhook(custom, id);
    await operator.stop();
    await fleet.stop();
  }
}

async function deleteSkyhook(custom: CustomObjectsApi, name: string): Promise<void> {
  await custom.deleteClusterCustomObject({ ...SKYHOOK, name }).catch(() => undefined);
  for (let i = 0; i < 60; i++) {
    try {
      await custom.getClusterCustomObject({ ...SKYHOOK, name });
    } catch {
      return;
    }
    await sleep(500);
  }
}
