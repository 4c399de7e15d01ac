import { runningPid } from '../../deploy/dev/processes';
import { skyhook } from '../../harness/manifests';
import { nodeMetadataKeys } from '../../model';
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
  overheads,
  recordJobs,
  recordNodeStates,
  nodeSpans,
  runBeyondSim,
  jobToPod,
  podToRunning,
  runningBeyondSim,
  sleep,
  total,
  type FleetOptions,
  type WorkerSlot,
} from './fleet';
import { quantile } from './quantile';
import { hopSummary } from './stage-hops';
import { sampleBudget, watchRunNodes, type BudgetUse } from './run-nodes';
import { freshTemporal, type TemporalServer } from './temporal-server';

// One measured rollout: N fake nodes, three packages chained by dependsOn (the middle one reboots), budget B,
// stage pods of a fixed simulated time; optionally a fault while it runs.

export interface ScenarioOptions {
  nodes: number;
  budget: number;
  simSeconds: number;
  rebootSeconds?: number;
  /** SIGKILL a worker every this many seconds (and start it again at once); with several, always the first. */
  killEverySeconds?: number;
  /** Called once the rollout is under way, e.g. to inject a fault; awaited before waiting for completion ends. */
  duringRollout?: (fleet: Fleet, jobsCreated: () => number) => Promise<void>;
  fleet?: Partial<FleetOptions>;
  /** A Temporal dev server of the run's own, started for it and removed after (the bench); default the shared one. */
  freshTemporal?: boolean;
  /** A Temporal server the caller runs for this run (the Temporal fault), so its CPU time can be read. */
  temporalServer?: TemporalServer;
  timeoutMs?: number;
  log?: (line: string) => void;
  /** Keep the namespace (and so the Jobs) for inspection. */
  keep?: boolean;
}

/** What both tools' runs measure alike (bench/skyhook.ts sets them side by side). */
export interface RolloutFigures {
  label: string;
  nodes: number;
  budget: number;
  stagesPerNode: number;
  nodeStages: number;
  makespanSeconds: number;
  idealSeconds: number;
  ratio: number;
  overheadMs: { count: number; p50: number; p95: number; p99: number; max: number };
  stageToStageMs: { count: number; p50: number; p95: number; p99: number };
  runBeyondSimMs: { p50: number; p95: number };
  /** The Job controller's part of it: a stage Job seen created to its pod seen (Keelson; the operator has no Job). */
  jobToPodMs?: { p50: number; p95: number };
  /** The pod simulator's parts: the pod seen to seen Running, and Running to done less the simulated seconds. */
  podToRunningMs: { p50: number; p95: number };
  runningBeyondSimMs: { p50: number; p95: number };
  /** The apiserver's mean time per request over the run (ms, watches apart), from its own histogram. */
  apiserverMeanMs: number;
  /** The kinds of request (verb and resource) that took the apiserver longest in all, the largest first. */
  apiserverLatency: { request: string; count: number; meanMs: number; seconds: number }[];
  /** The machine's CPU busy share over the makespan, everything on it included (/proc/stat; cpu.ts, busyShare). */
  machineBusy: number;
  /** One node's first stage created to its last done, s (the ideal is the sum of its stages plus the reboot). */
  nodeSpanSeconds: { p50: number; max: number };
  apiserverRequests: { total: number; perNodeStage: number; byVerbResource: Record<string, number> };
  /** Nodes with stage work in flight and nodes cordoned, sampled every 2 s from the create call to completion. */
  budgetUse: BudgetUse;
  /** CPU seconds from the create call to completion, per process (the tool's own, kube-apiserver, ...). */
  cpuSeconds: Record<string, number>;
  cpuPerNodeStage: Record<string, number>;
  /** The rollout's own status seen complete this many seconds after its nodes were (not part of the makespan). */
  statusCompleteLagSeconds: number;
}

export interface ScenarioResult extends RolloutFigures {
  packages: number;
  simSeconds: number;
  rebootSeconds: number;
  afterRebootMs: { count: number; p50: number; p95: number; max: number };
  workerRequests: { total: number; perNodeStage: number; byVerbResource: Record<string, number> };
  /** The largest worker process's peak VmRSS, and the peak of all worker processes together. */
  workerPeakRssMiB: number;
  workersPeakRssMiB: number;
  workerRestarts: number;
  /**
   * The node workflows' tasks that started a stage, scheduled to completed (bench/lib/stage-start-tasks.ts): the
   * first of each run (a node's first stage after its admission), the later ones, and their sum per node.
   */
  stageStartTaskMs: {
    first: { p50: number; p95: number };
    later: { p50: number; p95: number };
    perNode: { p50: number; max: number };
  };
  /**
   * The node workflows' direct hops from a stage's end to the next stage's start (bench/lib/stage-hops.ts): their
   * count, and p50 and p90 of the whole hop, the workflow task's wait, its start to its last local activity's end
   * (the node-state write) and the rest of the task. `npm run bench:sdk-floor` measures the same hops with nothing
   * of Keelson's in them.
   */
  stageHopMs: ReturnType<typeof hopSummary>;
  /** Per worker slot: its starts, whether its worker ran at completion, its processes' requests and tasks. */
  workerSlots: WorkerSlot[];
  history: { workflows: number; events: number; perNodeStage: number; byType: Record<string, number> };
  /** Every workflow run's history replayed against the code that ran it: runs replayed, nondeterminism failures. */
  replay: { workflows: number; failures: string[]; dir: string };
  /** How the run was set up: the worker compiled or under tsx, how many, Temporal fresh for the run or shared. */
  setup: { worker: 'compiled' | 'tsx'; workers: number; temporal: 'fresh' | 'own' | 'shared' };
  checks: { duplicateJobs: string[]; backwards: string[]; leftCordoned: string[]; nodeStateUpdates: number };
}

/** How long a run may take before it is reported as not complete: 30 minutes, or 8 s a node on large fleets. */
export function defaultTimeoutMs(nodes: number): number {
  return Math.max(1_800_000, nodes * 8_000);
}

export const PACKAGES = ['tools', 'driver', 'tuning'] as const;
/** The package that reboots: a node needs a permit, cordon and drain before its first stage. */
export const INTERRUPTING = ['driver'];

/** The bench rollout as a Skyhook manifest: also what the side-by-side applies, unchanged, to the Skyhook operator. */
export function benchManifest(
  name: string,
  matchLabels: Record<string, string>,
  budget: number,
  simSeconds: number,
  rebootSeconds: number,
): Record<string, unknown> {
  const env = { KEELSON_SIM_REBOOT_SECONDS: String(rebootSeconds) };
  return skyhook({
    name,
    selector: { matchLabels },
    budget: { count: budget },
    packages: {
      tools: { version: '1.0.0', simSeconds, env },
      driver: {
        version: '2.0.0',
        simSeconds,
        env,
        interrupt: { type: 'reboot' },
        dependsOn: { tools: '1.0.0' },
      },
      tuning: { version: '3.0.0', simSeconds, env, dependsOn: { driver: '2.0.0' } },
    },
  });
}

export async function runScenario(label: string, o: ScenarioOptions): Promise<ScenarioResult> {
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rebootSeconds = o.rebootSeconds ?? 5;
  const id = `${label}-${Date.now().toString(36)}`.slice(0, 40);
  // A fresh Temporal per run: an empty database, so no earlier run's history weighs on this one.
  const fresh = o.freshTemporal ? await freshTemporal() : undefined;
  const server = fresh?.server ?? o.temporalServer;
  const fleet = new Fleet({ id, ...o.fleet, ...(server && { temporalAddress: server.address }) });
  const shared = !server && o.fleet?.temporalAddress === undefined;
  const cpu = new CpuMeter({
    worker: () => fleet.workerPids(),
    // The shared dev server also serves every other user of the stack: its figure is an upper bound then.
    temporal: () => server?.pid ?? (shared ? runningPid('temporal') : undefined),
    ...stackRoles(),
  });
  let restarts = 0;
  let killing = false;
  let killer: Promise<void> | undefined;
  let stopRecorders = () => undefined as void;
  let sampler: { stop(): BudgetUse } | undefined;
  try {
    await fleet.start();
    const names = await fleet.createNodes(o.nodes);
    const selector = `${BENCH_LABEL}=${fleet.cluster}`;
    const jobRec = await recordJobs(fleet.kc, fleet.namespace);
    const nodeRec = await recordNodeStates(fleet.kc, selector, id);
    const runNodes = await watchRunNodes(fleet.kc, selector, id);
    stopRecorders = () => {
      jobRec.stop();
      nodeRec.stop();
      runNodes.stop();
    };
    const manifest = benchManifest(id, { [BENCH_LABEL]: fleet.cluster }, o.budget, o.simSeconds, rebootSeconds);
    // Let the worker start and poll before the clock starts.
    await sleep(3000);
    const before = await apiserverSample();
    cpu.start();
    const t0 = Date.now();
    await fleet.startRollout(manifest);
    sampler = sampleBudget(
      { budget: o.budget, t0, inFlightNodes: () => inFlightNodes(jobRec.jobs.values()), runNodes },
      () => cpu.sample(),
    );
    log(`${label}: rollout ${id} started on ${o.nodes} nodes, budget ${o.budget}`);
    // Grows with every stage Job seen created or done and every node seen complete.
    const progressMark = () =>
      jobRec.jobs.size + [...jobRec.jobs.values()].filter((j) => j.seenComplete).length + runNodes.completeCount();
    if (o.killEverySeconds) {
      killing = true;
      killer = (async () => {
        while (killing) {
          // Every few seconds of *running* time, and only once the rollout moved since the worker started: on a
          // loaded 2-core machine a worker can need longer than the kill period to bundle, connect and replay, and
          // one killed every time before it moves anything never finishes at all.
          await fleet.untilWorkerStarted();
          const moved = progressMark();
          await sleep(o.killEverySeconds! * 1000);
          while (killing && progressMark() === moved) await sleep(250);
          if (!killing) break;
          cpu.sample(); // what the worker about to be killed has spent since the last sample
          await fleet.killWorker();
          await fleet.startWorker();
          restarts++;
        }
      })();
    }
    // Completed Jobs are deleted by Keelson, so progress is counted from the recorder, not by listing Jobs.
    const fault = o.duringRollout?.(fleet, () => jobRec.jobs.size);
    fault?.catch(() => undefined); // awaited (and so reported) below
    const progress = setInterval(() => {
      const done = [...jobRec.jobs.values()].filter((j) => j.seenComplete).length;
      log(
        `${label}: ${((Date.now() - t0) / 1000).toFixed(0)}s, ${done} stage Jobs complete, ` +
          `${runNodes.completeCount()} nodes complete, worker rss ${(fleet.rssKb() / 1024).toFixed(0)} MiB`,
      );
    }, 15_000);
    // The clock stops at the watch event that shows the last node complete (the same detector as the Skyhook run's).
    const t1 = await runNodes
      .untilComplete(o.nodes, o.timeoutMs ?? defaultTimeoutMs(o.nodes))
      .catch(async (err: unknown) => {
        // A rollout that stalls on a nondeterminism would otherwise only say "not complete": name the cause.
        const replay = await fleet.replayHistories().catch((e: unknown) => ({ failures: [String(e)] }));
        throw new Error(
          `${err instanceof Error ? err.message : String(err)}; replay: ${replay.failures.join('; ') || 'clean'}`,
        );
      })
      .finally(() => clearInterval(progress));
    const cpuSeconds = cpu.stop();
    const budgetUse = sampler.stop();
    const after = await apiserverSample();
    killing = false;
    await killer;
    await fault;
    const statusAt = await fleet.untilStatusComplete(id, 120_000);
    // Late watch events and the last request-count flush.
    await sleep(1500);
    const jobs = [...jobRec.jobs.values()];
    const perNode = jobs.filter((j) => j.node === names[0]);
    const stagesPerNode = perNode.length;
    const nodeStages = jobs.length;
    const stageSeconds = perNode.reduce((s, j) => s + j.simSeconds, 0);
    const idealSeconds = Math.ceil(o.nodes / o.budget) * (stageSeconds + rebootSeconds);
    const makespanSeconds = (t1 - t0) / 1000;
    const ov = overheads(jobs, rebootSeconds, INTERRUPTING);
    const api = diffCounts(after.requests, before.requests);
    const workerReq = fleet.workerRequests();

    const hist = await fleet.histories();
    const { tasksByIdentity, stageStarts, hops, ...replay } = await fleet.replayHistories();
    const workerSlots = fleet.workerSlots(tasksByIdentity);
    const nodes = await fleet.core.listNode({ labelSelector: selector });
    const leftCordoned = nodes.items
      .filter(
        (n) => n.spec?.unschedulable === true && n.metadata?.annotations?.[nodeMetadataKeys(id).cordon] === 'true',
      )
      .map((n) => n.metadata!.name!);
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return {
      label,
      nodes: o.nodes,
      packages: PACKAGES.length,
      budget: o.budget,
      simSeconds: o.simSeconds,
      rebootSeconds,
      stagesPerNode,
      nodeStages,
      makespanSeconds: r2(makespanSeconds),
      idealSeconds,
      ratio: r2(makespanSeconds / idealSeconds),
      overheadMs: {
        count: ov.plain.length,
        p50: quantile(ov.plain, 0.5),
        p95: quantile(ov.plain, 0.95),
        p99: quantile(ov.plain, 0.99),
        max: ov.plain[ov.plain.length - 1] ?? NaN,
      },
      stageToStageMs: {
        count: ov.stageToStage.length,
        p50: quantile(ov.stageToStage, 0.5),
        p95: quantile(ov.stageToStage, 0.95),
        p99: quantile(ov.stageToStage, 0.99),
      },
      afterRebootMs: {
        count: ov.afterReboot.length,
        p50: quantile(ov.afterReboot, 0.5),
        p95: quantile(ov.afterReboot, 0.95),
        max: ov.afterReboot[ov.afterReboot.length - 1] ?? NaN,
      },
      runBeyondSimMs: runBeyondSim(jobs),
      jobToPodMs: jobToPod(jobs),
      podToRunningMs: podToRunning(jobs),
      runningBeyondSimMs: runningBeyondSim(jobs),
      apiserverMeanMs: apiserverMeanMs(after, before),
      apiserverLatency: apiserverLatency(after, before).slice(0, 12),
      machineBusy: cpu.machineBusy,
      nodeSpanSeconds: { p50: quantile(nodeSpans(jobs), 0.5), max: Math.max(...nodeSpans(jobs)) },
      stageStartTaskMs: {
        first: { p50: quantile(stageStarts.firstMs, 0.5), p95: quantile(stageStarts.firstMs, 0.95) },
        later: { p50: quantile(stageStarts.laterMs, 0.5), p95: quantile(stageStarts.laterMs, 0.95) },
        perNode: { p50: quantile(stageStarts.perNodeMs, 0.5), max: Math.max(...stageStarts.perNodeMs) },
      },
      stageHopMs: hopSummary(hops),
      apiserverRequests: { total: total(api), perNodeStage: r2(total(api) / nodeStages), byVerbResource: api },
      workerRequests: {
        total: total(workerReq),
        perNodeStage: r2(total(workerReq) / nodeStages),
        byVerbResource: workerReq,
      },
      workerPeakRssMiB: Math.round(fleet.peakRss / 1024),
      workersPeakRssMiB: Math.round(fleet.peakRssSum / 1024),
      workerRestarts: restarts,
      workerSlots,
      history: { ...hist, perNodeStage: r2(hist.events / nodeStages) },
      replay,
      budgetUse,
      cpuSeconds,
      cpuPerNodeStage: perNodeStage(cpuSeconds, nodeStages),
      setup: {
        worker: o.fleet?.compiledWorker ? 'compiled' : 'tsx',
        workers: o.fleet?.workers ?? 1,
        temporal: fresh ? 'fresh' : shared ? 'shared' : 'own',
      },
      statusCompleteLagSeconds: r2((statusAt - t1) / 1000),
      checks: {
        duplicateJobs: duplicateJobs(jobs),
        backwards: nodeRec.backwards,
        leftCordoned,
        nodeStateUpdates: nodeRec.updates,
      },
    };
  } finally {
    killing = false;
    await killer?.catch(() => undefined);
    sampler?.stop(); // a run that failed half-way: stop sampling (a finished run's second stop is harmless)
    stopRecorders();
    await fleet.stop({ deleteNamespace: !o.keep });
    await fresh?.dispose();
  }
}
