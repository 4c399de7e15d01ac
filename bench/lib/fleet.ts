import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { BatchV1Api, CoreV1Api, KubeConfig, Watch, type V1Job, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { KeelsonClient } from '../../client';
import { ClientSettingsSchema } from '../../client/settings';
import { nodeMetadataKeys, type RolloutSpec } from '../../model';
import { parsedRollouts } from '../../harness/manifests';
import { ensurePki } from '../../deploy/dev/pki';
import { kubeconfigPath, stateDir } from '../../deploy/dev/paths';
import { apiserverUrl, ports } from '../../deploy/dev/cluster';
import { temporalAddress } from '../../deploy/dev/temporal';
import { buildWorkflowBundle } from '../../deploy/dev/workflow-bundle';
import { createFakeNodes } from '../../harness/fake-nodes';
import { eventually, sleep } from '../../harness/wait';
import { freePort, WorkerProcess } from '../../harness/worker-process';
import { keelsonNames, workerSettings } from '../../harness/worker-settings';
import { processRssKb } from './machine';
import type { WorkerContainer } from './container-env';
import { MemoryCgroup } from './memory-cgroup';
import { quantile } from './quantile';
import { stageHops, type StageHop } from './stage-hops';
import { STAGE_ACTIVITIES, stageStartTasks } from './stage-start-tasks';

// What the bench and the fault tests share: a Keelson worker process of their own (its own cluster name, task
// queue and namespace) that can be SIGKILLed and started again, its RSS and its own Kubernetes API request counts
// (bench/lib/count-requests.cjs), the apiserver's request counters, and recorders of Jobs and Node state.

export const BENCH_LABEL = 'keelson.dev/bench';
const countRequests = path.join(__dirname, 'count-requests.cjs');

export { sleep };

export { freePort };

export interface FleetOptions {
  /** Short name: the cluster name, task queue and namespace derive from it. */
  id: string;
  temporalAddress?: string;
  /** Each worker process runs in a memory cgroup of this limit with these settings, as in a container. */
  container?: WorkerContainer;
  /**
   * Run the worker from compiled JavaScript with a prebuilt workflow bundle, as the image does (bench/lib/build.ts).
   * Without it the worker runs from the TypeScript source under tsx and the fleet builds its own bundle (the fault
   * tests, which follow the working tree as it is edited).
   */
  compiledWorker?: CompiledWorker;
  /** Worker processes on the one task queue (default 1): they share the workflows and activities, as replicas do. */
  workers?: number;
}

/** A worker built once per bench invocation: `node <script>` with KEELSON_WORKFLOW_BUNDLE=<workflowBundle>. */
export interface CompiledWorker {
  script: string;
  workflowBundle: string;
}

/** A worker slot's record over a run (bench/lib/scenario.ts reports it). */
export interface WorkerSlot {
  starts: number;
  running: boolean;
  requests: number;
  /** Workflow and activity tasks its workers started, as the histories record them. */
  tasks: number;
}

/** One Keelson under test: worker process(es), a Temporal client and Kubernetes clients. */
export class Fleet {
  readonly cluster: string;
  readonly taskQueue: string;
  readonly namespace: string;
  readonly temporalAddress: string;
  readonly kc = new KubeConfig();
  readonly core: CoreV1Api;
  readonly batch: BatchV1Api;
  readonly dir: string;
  keelson?: KeelsonClient;
  temporal?: Client;
  /** The worker processes, one per slot; a slot's process is replaced when it is killed and started again. */
  private readonly workers: WorkerProcess[] = [];
  /** Per slot, the memory cgroup of `opts.container`: a restarted worker goes back into its slot's. */
  private readonly cgroups: MemoryCgroup[] = [];
  private workerStarts = 0;
  /** Per slot, the numbers of the starts made in it (a start's number names its request-count file). */
  private readonly startsBySlot: number[][] = [];
  /** The process ID of each start: a worker's Temporal identity is `<pid>@<host>`. */
  private readonly pidOfStart: number[] = [];
  private workflowBundle?: string;
  private peakRssKb = 0;
  private peakRssSumKb = 0;
  readonly ownNodes: string[] = [];
  private rssTimer?: NodeJS.Timeout;

  constructor(readonly opts: FleetOptions) {
    ({ cluster: this.cluster, taskQueue: this.taskQueue, namespace: this.namespace } = keelsonNames(opts.id));
    this.temporalAddress = opts.temporalAddress ?? temporalAddress;
    this.kc.loadFromFile(kubeconfigPath);
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.batch = this.kc.makeApiClient(BatchV1Api);
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `keelson-${opts.id}-`));
  }

  async start(): Promise<void> {
    // Built once (per bench invocation, or per fleet): every worker (re)start then skips the webpack build.
    this.workflowBundle =
      this.opts.compiledWorker?.workflowBundle ??
      (await buildWorkflowBundle(path.join(this.dir, 'workflow-bundle.js')));
    await this.core.createNamespace({
      body: { metadata: { name: this.namespace, labels: { 'keelson.dev/test': 'bench' } } },
    });
    for (let slot = 0; slot < (this.opts.workers ?? 1); slot++) await this.startWorker(slot);
    await this.connect();
  }

  async connect(): Promise<void> {
    const settings = ClientSettingsSchema.parse({
      TEMPORAL_ADDRESS: this.temporalAddress,
      KEELSON_CLUSTER: this.cluster,
      KEELSON_TASK_QUEUE: this.taskQueue,
    });
    this.keelson = await KeelsonClient.connect(settings);
    this.temporal = new Client({ connection: await Connection.connect({ address: this.temporalAddress }) });
  }

  private cgroupOf(slot: number): MemoryCgroup | undefined {
    const container = this.opts.container;
    if (!container) return undefined;
    return (this.cgroups[slot] ??= MemoryCgroup.create(`keelson-bench-${this.opts.id}-${slot}`, container.limitBytes));
  }

  /** The real worker entry point as a child process in a slot, with the request counter preloaded. */
  async startWorker(slot = 0): Promise<number> {
    const n = this.workerStarts++;
    (this.startsBySlot[slot] ??= []).push(n);
    const place = {
      temporalAddress: this.temporalAddress,
      kubeconfig: kubeconfigPath,
      metricsAddress: `127.0.0.1:${await freePort()}`,
      workflowBundle: this.workflowBundle,
    };
    const worker = WorkerProcess.start({
      env: {
        ...workerSettings(this, place),
        KEELSON_JOB_RETENTION_SECONDS: '3600',
        KEELSON_BENCH_REQUESTS_FILE: path.join(this.dir, `requests-${n}.json`),
        KEELSON_BENCH_APISERVER_PORT: String(ports.apiserver),
        ...this.opts.container?.env,
      },
      logFile: this.workerLog,
      nodeArgs: ['--require', countRequests],
      compiledScript: this.opts.compiledWorker?.script,
      cgroupProcsFile: this.cgroupOf(slot)?.procsFile,
    });
    this.workers[slot] = worker;
    this.pidOfStart[n] = worker.process.pid!;
    // A worker that ends unasked (over its cgroup's limit, or unable to join it) leaves the run to stall: say why.
    void worker.exit.then(() => {
      if (worker.endedOnRequest) return;
      const { exitCode, signalCode } = worker.process;
      const cgroup = this.cgroups[slot];
      process.stderr.write(
        `fleet: worker ${slot} ended on its own (exit code ${exitCode}, signal ${signalCode})` +
          (cgroup ? `; OOM kills in its memory cgroup: ${cgroup.oomKills()}` : '') +
          `; its log: ${this.workerLog}\n`,
      );
    });
    if (!this.rssTimer) {
      this.rssTimer = setInterval(() => {
        const each = this.workerRssKb();
        this.peakRssKb = Math.max(this.peakRssKb, ...each);
        this.peakRssSumKb = Math.max(
          this.peakRssSumKb,
          each.reduce((a, b) => a + b, 0),
        );
      }, 500);
      this.rssTimer.unref();
    }
    return worker.process.pid!;
  }

  /** VmRSS of each worker process running now, in KiB. */
  private workerRssKb(): number[] {
    return this.workerPids().map((pid) => processRssKb(pid));
  }

  /** The worker processes running now (a killed slot's process until it is started again is not). */
  workerPids(): number[] {
    return this.workers.filter((w) => w.running).map((w) => w.process.pid!);
  }

  /** Waits until every worker process started has created its Worker (the log shows one start line per start). */
  async untilWorkerStarted(timeoutMs = 120_000): Promise<void> {
    await eventually(
      'the worker started',
      () => {
        const text = fs.existsSync(this.workerLog) ? fs.readFileSync(this.workerLog, 'utf8') : '';
        const starts = (text.match(/keelson worker: task queue/g) ?? []).length;
        if (starts < this.workerStarts) throw new Error(`${starts} of ${this.workerStarts} starts logged`);
      },
      timeoutMs,
      250,
    ).catch(() => undefined); // pacing only: a worker slow to start is killed after the period all the same
  }

  /** SIGKILL of a slot's process: no shutdown, no activity cancellation, as when a pod is OOM-killed. */
  async killWorker(slot = 0): Promise<void> {
    await this.workers[slot]?.kill();
  }

  /** VmRSS of the largest worker process running, in KiB (0 if none is): the footprint one replica must fit in. */
  rssKb(): number {
    return Math.max(0, ...this.workerRssKb());
  }

  get peakRss(): number {
    return Math.max(this.peakRssKb, this.rssKb());
  }

  /** The peak of all worker processes' VmRSS together, in KiB (what the replicas cost between them). */
  get peakRssSum(): number {
    return Math.max(
      this.peakRssSumKb,
      this.workerRssKb().reduce((sum, kb) => sum + kb, 0),
    );
  }

  /**
   * Per slot: how often a worker was started in it, whether one runs now, its processes' own requests, and the
   * workflow and activity tasks its processes started (`tasksByIdentity`, read from the histories).
   */
  workerSlots(tasksByIdentity: Record<string, number>): WorkerSlot[] {
    return this.startsBySlot.map((starts, slot) => ({
      starts: starts.length,
      running: this.workers[slot]?.running ?? false,
      requests: starts.reduce((sum, n) => sum + total(this.requestsOfStart(n)), 0),
      tasks: Object.entries(tasksByIdentity)
        .filter(([identity]) => starts.some((n) => identity.startsWith(`${this.pidOfStart[n]}@`)))
        .reduce((sum, [, count]) => sum + count, 0),
    }));
  }

  private requestsOfStart(n: number): Record<string, number> {
    const file = path.join(this.dir, `requests-${n}.json`);
    return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, number>) : {};
  }

  get workerLog(): string {
    return path.join(this.dir, 'worker.log');
  }

  /** The worker processes' own Kubernetes API requests, summed over every process this fleet started. */
  workerRequests(): Record<string, number> {
    const sum: Record<string, number> = {};
    for (let n = 0; n < this.workerStarts; n++) {
      for (const [k, v] of Object.entries(this.requestsOfStart(n))) sum[k] = (sum[k] ?? 0) + v;
    }
    return sum;
  }

  /** Fake kwok nodes of this fleet alone (`<cluster>-NNN`), labelled for its selector, Ready before it returns. */
  async createNodes(count: number, timeoutMs = 180_000): Promise<string[]> {
    const defs = Array.from({ length: count }, (_, i) => ({
      name: `${this.cluster}-${String(i).padStart(3, '0')}`,
      labels: { 'kubernetes.io/arch': 'amd64', [BENCH_LABEL]: this.cluster },
    }));
    this.ownNodes.push(...defs.map((d) => d.name));
    return createFakeNodes(this.core, defs, `${BENCH_LABEL}=${this.cluster}`, timeoutMs, 500);
  }

  /** Labels the given nodes so that a rollout's selector picks exactly them. */
  async labelNodes(names: string[]): Promise<void> {
    for (const name of names) {
      await this.core.patchNode(
        {
          name,
          body: [{ op: 'add', path: `/metadata/labels/${BENCH_LABEL.replace('/', '~1')}`, value: this.cluster }],
        },
        undefined,
      );
    }
  }

  async unlabelNodes(names: string[]): Promise<void> {
    for (const name of names) {
      await this.core
        .patchNode({ name, body: [{ op: 'remove', path: `/metadata/labels/${BENCH_LABEL.replace('/', '~1')}` }] })
        .catch(() => undefined);
    }
  }

  async startRollout(manifest: Record<string, unknown>): Promise<RolloutSpec> {
    const rollouts = parsedRollouts([manifest]);
    if (rollouts.length !== 1) throw new Error(`the bench manifest must give one rollout, it gives ${rollouts.length}`);
    await this.keelson!.startRollout(rollouts[0]!);
    return rollouts[0]!;
  }

  /**
   * After the clock has stopped (the nodes seen complete), checks that the rollout's own status says complete too,
   * asking once a second (a status query that fails, worker down, is retried); resolves with the local time it did.
   * Not part of the makespan: it proves the rollout workflow agrees with what its nodes show.
   */
  async untilStatusComplete(name: string, timeoutMs: number): Promise<number> {
    return eventually(
      `rollout ${name}: its status complete as its nodes are`,
      async () => {
        const s = await this.keelson!.rolloutStatus(name);
        if (s.status !== 'complete') throw new Error(`${s.status} ${s.completeNodes}`);
        return Date.now();
      },
      timeoutMs,
      1000,
    );
  }

  /** History length of every workflow on this fleet's task queue. */
  async histories(): Promise<{ workflows: number; events: number; byType: Record<string, number> }> {
    let workflows = 0;
    let events = 0;
    const byType: Record<string, number> = {};
    for await (const w of this.temporal!.workflow.list({ query: `TaskQueue="${this.taskQueue}"` })) {
      const d = await this.temporal!.workflow.getHandle(w.workflowId, w.runId).describe();
      workflows++;
      events += d.historyLength;
      byType[w.type] = (byType[w.type] ?? 0) + d.historyLength;
    }
    return { workflows, events, byType };
  }

  /**
   * Replays the history of every workflow run on this fleet's task queue (closed runs too) against the workflow code
   * the worker ran, and writes each history to `<dir>/histories/` (the replay fixture format). A nondeterminism is
   * returned with its workflow ID and message, so a run that stalls on one fails with its cause. With them, the node
   * workflows' tasks that started a stage (stageStartTasks): the first of each run, the later ones, and per node
   * their sum; and their direct hops from one stage to the next (stageHops).
   */
  async replayHistories(): Promise<{
    workflows: number;
    failures: string[];
    dir: string;
    tasksByIdentity: Record<string, number>;
    stageStarts: { firstMs: number[]; laterMs: number[]; perNodeMs: number[] };
    hops: StageHop[];
  }> {
    const dir = path.join(this.dir, 'histories');
    fs.mkdirSync(dir, { recursive: true });
    const histories = [];
    const tasksByIdentity: Record<string, number> = {};
    const stageStarts = { firstMs: [] as number[], laterMs: [] as number[] };
    const perNode = new Map<string, number>();
    const hops: StageHop[] = [];
    for await (const w of this.temporal!.workflow.list({ query: `TaskQueue="${this.taskQueue}"` })) {
      const history = await this.temporal!.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
      const file = path.join(dir, `${w.workflowId.replace(/[^A-Za-z0-9-]+/g, '_')}-${w.runId}.json`);
      fs.writeFileSync(file, `{"workflowId":${JSON.stringify(w.workflowId)},"history":${historyToJSON(history)}}\n`);
      histories.push({ workflowId: w.workflowId, history });
      for (const e of history.events ?? []) {
        const identity =
          e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
        if (identity) tasksByIdentity[identity] = (tasksByIdentity[identity] ?? 0) + 1;
      }
      if (w.type === 'nodeWorkflow') {
        const tasks = stageStartTasks(history.events ?? []);
        if (tasks.firstMs !== undefined) stageStarts.firstMs.push(tasks.firstMs);
        stageStarts.laterMs.push(...tasks.laterMs);
        const sum = (tasks.firstMs ?? 0) + tasks.laterMs.reduce((a, b) => a + b, 0);
        perNode.set(w.workflowId, (perNode.get(w.workflowId) ?? 0) + sum);
        hops.push(...stageHops(history.events ?? [], STAGE_ACTIVITIES));
      }
    }
    const failures: string[] = [];
    const code = this.workflowBundle ? { workflowBundle: { codePath: this.workflowBundle } } : {};
    for await (const r of Worker.runReplayHistories(code, histories)) {
      if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
    }
    return {
      workflows: histories.length,
      failures,
      dir,
      tasksByIdentity,
      stageStarts: {
        firstMs: stageStarts.firstMs.sort((a, b) => a - b),
        laterMs: stageStarts.laterMs.sort((a, b) => a - b),
        perNodeMs: [...perNode.values()].sort((a, b) => a - b),
      },
      hops,
    };
  }

  async stop(opts: { deleteNamespace?: boolean } = {}): Promise<void> {
    if (this.keelson) {
      for (const r of await this.keelson.listRollouts().catch(() => []))
        await this.keelson.deleteRollout(r.name).catch(() => undefined);
    }
    await sleep(1000);
    await Promise.all(this.workers.map((w) => w.stop()));
    for (const cgroup of this.cgroups) cgroup.remove();
    if (this.rssTimer) clearInterval(this.rssTimer);
    await this.keelson?.close().catch(() => undefined);
    await this.temporal?.connection.close().catch(() => undefined);
    if (opts.deleteNamespace !== false) {
      await this.core.deleteNamespace({ name: this.namespace }).catch(() => undefined);
      for (const n of this.ownNodes) await this.core.deleteNode({ name: n }).catch(() => undefined);
    }
  }
}

/**
 * The apiserver's own counters: requests (apiserver_request_total) and the sum and count of its request-duration
 * histogram, each by verb and resource, and when its process started (a restart between two samples resets them).
 */
export interface ApiserverSample {
  requests: Record<string, number>;
  durationSeconds: Record<string, number>;
  durationCount: Record<string, number>;
  startTime: number;
}

export async function apiserverSample(): Promise<ApiserverSample> {
  const pki = ensurePki(path.join(stateDir, 'pki'));
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.get(
      `${apiserverUrl}/metrics`,
      {
        ca: fs.readFileSync(pki.caCert),
        cert: fs.readFileSync(pki.adminCert),
        key: fs.readFileSync(pki.adminKey),
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('apiserver /metrics timed out')));
  });
  return parseApiserverMetrics(text);
}

export function parseApiserverMetrics(text: string): ApiserverSample {
  const sample: ApiserverSample = { requests: {}, durationSeconds: {}, durationCount: {}, startTime: NaN };
  const series: [string, Record<string, number>][] = [
    ['apiserver_request_total{', sample.requests],
    ['apiserver_request_duration_seconds_sum{', sample.durationSeconds],
    ['apiserver_request_duration_seconds_count{', sample.durationCount],
  ];
  for (const line of text.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('process_start_time_seconds ')) sample.startTime = value;
    const into = series.find(([prefix]) => line.startsWith(prefix))?.[1];
    if (!into) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const key = `${labels.verb} ${labels.resource || '-'}${labels.subresource ? `/${labels.subresource}` : ''}`;
    into[key] = (into[key] ?? 0) + value;
  }
  return sample;
}

/** Verbs whose duration is how long the request was open, not how long it took to serve. */
const LONG_RUNNING_VERBS = new Set(['WATCH', 'WATCHLIST', 'CONNECT']);

/** Per kind of request (verb and resource; watches apart), the count and seconds between two samples. */
function latencyKinds(after: ApiserverSample, before: ApiserverSample) {
  // Object.is: a scrape without the start time (NaN both times) is no restart.
  if (!Object.is(after.startTime, before.startTime)) return [];
  return Object.keys(after.durationCount)
    .filter((key) => !LONG_RUNNING_VERBS.has(key.split(' ')[0]!))
    .map((request) => ({
      request,
      count: after.durationCount[request]! - (before.durationCount[request] ?? 0),
      seconds: after.durationSeconds[request]! - (before.durationSeconds[request] ?? 0),
    }))
    .filter((k) => k.count > 0);
}

/**
 * Per kind of request (verb and resource; watches apart), how many the apiserver served between two samples, their
 * mean time (ms) and their total (s), the largest total first. None across a restart of the apiserver: its counters
 * started again from zero.
 */
export function apiserverLatency(after: ApiserverSample, before: ApiserverSample) {
  return latencyKinds(after, before)
    .sort((a, b) => b.seconds - a.seconds)
    .map((k) => ({
      request: k.request,
      count: k.count,
      meanMs: Math.round((k.seconds / k.count) * 1000),
      seconds: Math.round(k.seconds * 100) / 100,
    }));
}

/**
 * The mean time the apiserver took per request between two samples (ms; watches apart). With every client issuing
 * requests at once it is the time each waited: by Little's law, requests in flight = rate × this mean. NaN across a
 * restart of the apiserver.
 */
export function apiserverMeanMs(after: ApiserverSample, before: ApiserverSample): number {
  const kinds = latencyKinds(after, before);
  const count = kinds.reduce((n, k) => n + k.count, 0);
  const seconds = kinds.reduce((n, k) => n + k.seconds, 0);
  return count > 0 ? Math.round((seconds / count) * 1000) : NaN;
}

export function diffCounts(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}

export function total(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

// ---- recorders ------------------------------------------------------------------------------------------------

export interface JobRecord {
  uid: string;
  name: string;
  node: string;
  package: string;
  version: string;
  stage: string;
  simSeconds: number;
  /** Local clock (ms) when the watch first showed the Job, and when it first showed it done: Complete, or its pod
   * Succeeded (a stage Job runs one pod; Keelson goes on from the pod, the Job controller says Complete later). */
  seenCreated: number;
  /** Local clock (ms) when the watch first showed a pod of the Job. */
  seenPod?: number;
  /** Local clock (ms) when the watch first showed that pod Running: the pod simulator's first status write landed. */
  seenRunning?: number;
  seenComplete?: number;
  /** Local clock (ms) when the watch showed it deleted (done or not). */
  seenGone?: number;
  /** The apiserver's own (second-resolution) timestamps. */
  creationTimestamp?: string;
  completionTime?: string;
}

function complete(job: V1Job): boolean {
  return (job.status?.conditions ?? []).some((c) => c.type === 'Complete' && c.status === 'True');
}

/** A watch that re-establishes itself until stopped (a stopped apiserver only delays it). */
export async function keepWatching<T>(
  kc: KubeConfig,
  pathName: string,
  query: Record<string, string>,
  on: (type: string, obj: T) => void,
) {
  let stopped = false;
  let req: { abort(): void } | undefined;
  const go = async (): Promise<void> => {
    if (stopped) return;
    try {
      req = await new Watch(kc).watch(pathName, query, on, () => void setTimeout(() => void go(), 250));
    } catch {
      setTimeout(() => void go(), 500);
    }
  };
  await go();
  return () => {
    stopped = true;
    req?.abort();
  };
}

/** Records every Job in a namespace (by UID) with the local times it was first seen and first seen done. */
export async function recordJobs(kc: KubeConfig, namespace: string) {
  const jobs = new Map<string, JobRecord>();
  /** What the pod watch saw of a Job before the Job watch showed it (by the Job's UID). */
  const early = new Map<string, Pick<JobRecord, 'seenPod' | 'seenRunning' | 'seenComplete'>>();
  const stopPods = await keepWatching<V1Pod>(kc, `/api/v1/namespaces/${namespace}/pods`, {}, (_type, pod) => {
    const uid = pod.metadata?.labels?.['batch.kubernetes.io/controller-uid'];
    if (!uid) return;
    const r = jobs.get(uid) ?? early.get(uid) ?? early.set(uid, {}).get(uid)!;
    r.seenPod ??= Date.now();
    if (pod.status?.phase === 'Running') r.seenRunning ??= Date.now();
    if (pod.status?.phase === 'Succeeded') r.seenComplete ??= Date.now();
  });
  const stop = await keepWatching<V1Job>(kc, `/apis/batch/v1/namespaces/${namespace}/jobs`, {}, (type, job) => {
    const uid = job.metadata?.uid;
    if (!uid) return;
    const now = Date.now();
    let r = jobs.get(uid);
    if (!r) {
      const l = job.metadata?.labels ?? {};
      const env = job.spec?.template?.spec?.containers?.flatMap((c) => c.env ?? []) ?? [];
      const sim = env.find((e) => e.name === 'KEELSON_SIM_SECONDS')?.value;
      r = {
        uid,
        name: job.metadata?.name ?? '',
        node: job.spec?.template?.spec?.nodeName ?? l['keelson.dev/node'] ?? '',
        package: l['keelson.dev/package'] ?? '',
        version: l['keelson.dev/version'] ?? '',
        stage: l['keelson.dev/stage'] ?? '',
        simSeconds: sim === undefined ? 1 : Number(sim),
        seenCreated: now,
        creationTimestamp: job.metadata?.creationTimestamp
          ? new Date(job.metadata.creationTimestamp).toISOString()
          : undefined,
      };
      Object.assign(r, early.get(uid));
      early.delete(uid);
      jobs.set(uid, r);
    }
    if (r.seenComplete === undefined && complete(job)) {
      r.seenComplete = now;
      r.completionTime = job.status?.completionTime ? new Date(job.status.completionTime).toISOString() : undefined;
    }
    if (type === 'DELETED') r.seenGone ??= now;
  });
  return {
    jobs,
    stop: () => {
      stop();
      stopPods();
    },
  };
}

const STAGE_RANK: Record<string, number> = {
  uninstall: 0,
  upgrade: 1,
  apply: 1,
  config: 2,
  interrupt: 3,
  'post-interrupt': 4,
};
const STATE_RANK: Record<string, number> = { unknown: 0, in_progress: 1, erroring: 1, complete: 2, skipped: 2 };

export interface NodeStateEntry {
  name: string;
  version: string;
  stage: string;
  state: string;
}

/**
 * The G1 recorder: watches Nodes and checks that no entry of a rollout's nodeState annotation ever moves backwards
 * (lower stage, or the same stage in an earlier state) or disappears; also records Keelson's cordons.
 */
export async function recordNodeStates(kc: KubeConfig, selector: string, rollout: string) {
  const last = new Map<string, Map<string, number>>();
  const backwards: string[] = [];
  const cordoned = new Map<string, boolean>();
  let updates = 0;
  const key = nodeMetadataKeys(rollout).nodeState;
  const stop = await keepWatching<V1Node>(kc, '/api/v1/nodes', { labelSelector: selector }, (_type, node) => {
    const name = node.metadata?.name ?? '';
    cordoned.set(
      name,
      node.spec?.unschedulable === true && node.metadata?.annotations?.[nodeMetadataKeys(rollout).cordon] === 'true',
    );
    const raw = node.metadata?.annotations?.[key];
    if (raw === undefined) return;
    updates++;
    const state = JSON.parse(raw) as Record<string, NodeStateEntry>;
    const before = last.get(name) ?? new Map<string, number>();
    const now = new Map<string, number>();
    for (const [k, e] of Object.entries(state)) {
      const rank = (STAGE_RANK[e.stage] ?? -1) * 10 + (STATE_RANK[e.state] ?? -1);
      now.set(k, rank);
      const prev = before.get(k);
      if (prev !== undefined && rank < prev) backwards.push(`${name} ${k}: ${prev} -> ${rank} (${e.stage}/${e.state})`);
    }
    for (const k of before.keys()) if (!now.has(k)) backwards.push(`${name} ${k}: entry removed`);
    last.set(name, now);
  });
  return {
    backwards,
    cordoned,
    get updates() {
      return updates;
    },
    stop,
  };
}

/**
 * Nodes with stage work in flight now: a stage Job (or Skyhook stage pod) that exists and is not done. What the
 * interruption budget bounds, read from a recorder's watch cache.
 */
export function inFlightNodes(records: Iterable<JobRecord>): Set<string> {
  const out = new Set<string>();
  for (const r of records) if (r.seenComplete === undefined && r.seenGone === undefined) out.add(r.node);
  return out;
}

/** Jobs created more than once for the same node, package, version and stage. */
export function duplicateJobs(jobs: Iterable<JobRecord>): string[] {
  const seen = new Map<string, number>();
  for (const j of jobs) {
    const k = `${j.node}/${j.package}@${j.version}:${j.stage}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([k, n]) => `${k} x${n}`);
}

/**
 * Orchestration overhead per node-stage: from a Job seen Complete to the next Job on the same node seen created.
 * Gaps after an interrupt (reboot) Job include the simulated reboot and are reported apart.
 */
/** The p50 and p95 (ms) of a gap between two of each stage's recorded times; interrupts apart (they reboot). */
function stageGaps(jobs: Iterable<JobRecord>, gap: (j: JobRecord) => number) {
  const gaps = [...jobs]
    .filter((j) => j.stage !== 'interrupt')
    .map(gap)
    .filter((g) => Number.isFinite(g))
    .sort((a, b) => a - b);
  return { p50: quantile(gaps, 0.5), p95: quantile(gaps, 0.95) };
}

/** An undefined time as NaN, so a gap that needs it drops out. */
const at = (t: number | undefined) => t ?? NaN;

/**
 * How much longer than its simulated time each stage ran, seen created to seen complete (ms): the time the Job
 * controller, kwok and the pod simulator add, which is neither tool's own. The three below split it.
 */
export const runBeyondSim = (jobs: Iterable<JobRecord>) =>
  stageGaps(jobs, (j) => at(j.seenComplete) - j.seenCreated - j.simSeconds * 1000);

/** A stage Job seen created to its first pod seen: the Job controller's part (the operator creates its pods itself). */
export const jobToPod = (jobs: Iterable<JobRecord>) => stageGaps(jobs, (j) => at(j.seenPod) - j.seenCreated);

/** The stage's pod seen to seen Running: the pod simulator's start, one status write through the apiserver. */
export const podToRunning = (jobs: Iterable<JobRecord>) =>
  stageGaps(jobs, (j) => at(j.seenRunning) - (j.seenPod ?? j.seenCreated));

/** Seen Running to seen done, less the simulated seconds: the simulator's finish (a read and a status write). */
export const runningBeyondSim = (jobs: Iterable<JobRecord>) =>
  stageGaps(jobs, (j) => at(j.seenComplete) - at(j.seenRunning) - j.simSeconds * 1000);

/** Per node, its first stage Job seen created to its last seen done (s, ascending): the time one batch member takes. */
export function nodeSpans(jobs: Iterable<JobRecord>): number[] {
  const spans = new Map<string, { from: number; to: number }>();
  for (const j of jobs) {
    const s = spans.get(j.node) ?? { from: j.seenCreated, to: j.seenComplete ?? j.seenCreated };
    spans.set(j.node, { from: Math.min(s.from, j.seenCreated), to: Math.max(s.to, j.seenComplete ?? j.seenCreated) });
  }
  return [...spans.values()].map((s) => (s.to - s.from) / 1000).sort((a, b) => a - b);
}

/**
 * Gaps between a stage's end and the next stage's Job on the same node (ms, ascending): `plain` all of them but
 * those after the reboot interrupt (reported apart, less the simulated reboot); `stageToStage` the plain ones that are
 * not into the first stage of an interrupting package, i.e. with no permit, cordon and drain in between.
 */
export function overheads(jobs: Iterable<JobRecord>, rebootSeconds: number, interrupting: readonly string[] = []) {
  const byNode = new Map<string, JobRecord[]>();
  for (const j of jobs) byNode.set(j.node, [...(byNode.get(j.node) ?? []), j]);
  const plain: number[] = [];
  const stageToStage: number[] = [];
  const afterReboot: number[] = [];
  for (const list of byNode.values()) {
    list.sort((a, b) => a.seenCreated - b.seenCreated);
    for (let i = 1; i < list.length; i++) {
      const [prev, next] = [list[i - 1]!, list[i]!];
      if (prev.seenComplete === undefined) continue;
      const gap = next.seenCreated - prev.seenComplete;
      if (prev.stage === 'interrupt') {
        afterReboot.push(gap - rebootSeconds * 1000);
        continue;
      }
      plain.push(gap);
      if (!(interrupting.includes(next.package) && next.package !== prev.package)) stageToStage.push(gap);
    }
  }
  const up = (a: number, b: number) => a - b;
  return { plain: plain.sort(up), stageToStage: stageToStage.sort(up), afterReboot: afterReboot.sort(up) };
}
