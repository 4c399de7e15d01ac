import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, KubeConfig, Watch, type V1Job, type V1Node, type V1Pod } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { clusterAccess } from '../../api/cluster';
import { ApiSettingsSchema } from '../../api/settings';
import { KeelsonClient } from '../../client';
import { unnamedToken } from '../../model/access';
import { stackEnv } from '../../deploy/dev/stack';
import { createFakeNodes } from '../../harness/fake-nodes';
import { serveTestApi } from '../../harness/test-api';
import { freePort, WorkerProcess } from '../../harness/worker-process';
import { keelsonNames, testWorkerSettings, type KeelsonNames } from '../../harness/worker-settings';

// One e2e test file's own Keelson, driven only the way a user drives it: the real worker entry point
// (workers/worker.ts) as a child process that a test may SIGKILL and start again, the real API on a free port, and
// the `keelson` CLI spawned as a process. Each file gets fake kwok nodes of its own (created here, deleted at the
// end, which also removes every annotation, label and taint Keelson wrote), a namespace and a task queue of its own.

const root = join(__dirname, '..', '..');
export const TOKEN = 'e2e-token-0123456789abcdef';
export const PREFIX = 'skyhook.nvidia.com/';
export const RUNTIME_TAINT = { key: 'skyhook.nvidia.com', value: 'runtime-required', effect: 'NoSchedule' };

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export { skyhook, type PackageDef, type SkyhookDef } from '../../harness/manifests';

export interface PackageEntry {
  name: string;
  version: string;
  image: string;
  stage: string;
  state: string;
  restarts?: number;
}
export type NodeStateJson = Record<string, PackageEntry>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- `rollout status --json` is read field by field
export type StatusJson = Record<string, any>;

export { eventually, eventuallyRead, sleep } from '../../harness/wait';
import { eventuallyRead } from '../../harness/wait';

export class E2E {
  readonly cluster: string;
  readonly taskQueue: string;
  readonly namespace: string;
  readonly nodes: string[] = [];
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly batch: BatchV1Api;
  url = '';
  private app?: FastifyInstance;
  private keelson?: KeelsonClient;
  private readonly names: KeelsonNames;
  private worker?: WorkerProcess;
  /** Every worker process started, with its metrics address; `stop` ends those still running. */
  private readonly started: { worker: WorkerProcess; metrics: string }[] = [];
  private readonly dir: string;
  private readonly env = stackEnv();
  /** Every Job and Pod of this file's namespace, recorded from its start (useE2E). */
  workloads!: WorkloadRecorder;

  /** `workerSettings`: worker environment variables (docs/settings.md) over the e2e defaults, for every start. */
  constructor(
    readonly prefix: string,
    readonly workerSettings: Record<string, string> = {},
  ) {
    const suffix = Date.now().toString(36).slice(-5);
    this.names = keelsonNames(`e2e-${prefix}-${suffix}`);
    ({ cluster: this.cluster, taskQueue: this.taskQueue, namespace: this.namespace } = this.names);
    this.kc = new KubeConfig();
    this.kc.loadFromFile(this.env.KUBECONFIG!);
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.batch = this.kc.makeApiClient(BatchV1Api);
    this.dir = mkdtempSync(join(tmpdir(), `keelson-e2e-${prefix}-`));
  }

  /** Fake nodes of this file (`<prefix>-<suffix>-<i>`), with extra labels per node; Ready before it returns. */
  async addNodes(count: number, labels: (i: number) => Record<string, string> = () => ({})): Promise<string[]> {
    const defs = Array.from({ length: count }, (_, i) => ({
      name: `${this.cluster}-n${this.nodes.length + i}`,
      // Only this file's labels: other rollouts on the shared cluster select by pool, zone or role.
      labels: { 'keelson.dev/e2e': this.cluster, ...labels(i) },
    }));
    this.nodes.push(...defs.map((d) => d.name));
    return createFakeNodes(this.core, defs, `keelson.dev/e2e=${this.cluster}`);
  }

  async start(opts: { nodes?: number; labels?: (i: number) => Record<string, string> } = {}): Promise<this> {
    await this.core.createNamespace({
      // The Jobs namespace of this file's worker: privileged stage pods allowed, as the chart labels its own.
      body: {
        metadata: {
          name: this.namespace,
          labels: { 'keelson.dev/test': 'e2e', 'pod-security.kubernetes.io/enforce': 'privileged' },
        },
      },
    });
    if (opts.nodes) await this.addNodes(opts.nodes, opts.labels);
    await this.startWorker();
    const settings = ApiSettingsSchema.parse({
      TEMPORAL_ADDRESS: this.env.TEMPORAL_ADDRESS,
      KEELSON_CLUSTER: this.cluster,
      KEELSON_TASK_QUEUE: this.taskQueue,
      KEELSON_API_TOKEN: TOKEN,
    });
    this.keelson = await KeelsonClient.connect(settings);
    ({ app: this.app, url: this.url } = await serveTestApi({
      keelson: this.keelson,
      cluster: clusterAccess(this.kc, this.namespace),
      tokens: [unnamedToken(TOKEN)],
      bodyLimitBytes: 256 * 1024,
    }));
    return this;
  }

  /**
   * Starts the real worker process (workers/worker.ts) for this file's cluster, task queue and namespace, with
   * `settings` over the file's; returns it and its metrics address. The worker started last is the one `stop` ends.
   */
  async startWorker(settings: Record<string, string> = {}): Promise<{ process: ChildProcess; metrics: string }> {
    const metrics = `127.0.0.1:${await freePort()}`;
    const worker = WorkerProcess.start({
      env: { ...testWorkerSettings(this.names, metrics), ...this.workerSettings, ...settings },
      logFile: this.workerLog,
    });
    this.worker = worker;
    this.started.push({ worker, metrics });
    return { process: worker.process, metrics };
  }

  /** Every worker started, oldest first, with its metrics address. */
  get workers(): { process: ChildProcess; metrics: string }[] {
    return this.started.map((w) => ({ process: w.worker.process, metrics: w.metrics }));
  }

  /** SIGKILL: no shutdown, no activity cancellation, as when a pod is OOM-killed or a machine dies. */
  async killWorker(): Promise<void> {
    await this.worker?.kill();
    this.worker = undefined;
  }

  get workerLog(): string {
    return join(this.dir, 'worker.log');
  }

  file(name: string, docs: Record<string, unknown>[]): string {
    const p = join(this.dir, name);
    writeFileSync(p, docs.map((d) => JSON.stringify(d, null, 2)).join('\n---\n'));
    return p;
  }

  /** `keelson ARGS` as a user runs it, against this file's API. */
  cli(args: string[], timeoutMs = 240_000): Promise<CliResult> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [join(root, 'bin', 'keelson.js'), ...args],
        {
          cwd: root,
          env: { PATH: process.env.PATH, KEELSON_API_URL: this.url, KEELSON_API_TOKEN: TOKEN },
          timeout: timeoutMs,
          maxBuffer: 16 * 1024 * 1024,
        },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });
  }

  async cliOk(args: string[], timeoutMs?: number): Promise<string> {
    const r = await this.cli(args, timeoutMs);
    if (r.code !== 0) throw new Error(`keelson ${args.join(' ')} exited ${r.code}: ${r.stderr}\n${r.stdout}`);
    return r.stdout;
  }

  /** `keelson rollout start -f FILE --wait`, expecting exit 0 (complete). */
  async startAndWait(name: string, docs: Record<string, unknown>[], timeoutSeconds = 180): Promise<string> {
    return this.cliOk(
      ['rollout', 'start', '-f', this.file(`${name}.yaml`, docs), '--wait', '--timeout', String(timeoutSeconds)],
      (timeoutSeconds + 30) * 1000,
    );
  }

  async start_(name: string, docs: Record<string, unknown>[]): Promise<string> {
    return this.cliOk(['rollout', 'start', '-f', this.file(`${name}.yaml`, docs)]);
  }

  async apply(name: string, docs: Record<string, unknown>[]): Promise<string> {
    return this.cliOk(['rollout', 'apply', '-f', this.file(`${name}-${Date.now()}.yaml`, docs)]);
  }

  async status(name: string): Promise<StatusJson> {
    return JSON.parse(await this.cliOk(['rollout', 'status', name, '--json'])) as StatusJson;
  }

  /**
   * What `rollout status NAME --json` prints, read from the API it calls: polling through the CLI started a Node
   * process per poll, and those kept a core of the 2-core CI machine busy.
   */
  async apiStatus(name: string): Promise<StatusJson> {
    const path = `/v1/rollouts/${encodeURIComponent(name)}`;
    const res = await fetch(`${this.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as StatusJson;
  }

  /** Polls the rollout's status (as `rollout status --json` prints it) until `check` holds (throwing means not yet). */
  async statusUntil(name: string, what: string, check: (s: StatusJson) => void, timeoutMs = 120_000) {
    return eventuallyRead(`${name}: ${what}`, () => this.apiStatus(name), check, timeoutMs);
  }

  async waitComplete(name: string, timeoutMs = 150_000): Promise<StatusJson> {
    return this.statusUntil(
      name,
      'complete',
      (s) => {
        if (s.status !== 'complete') throw new Error(`status ${s.status}`);
      },
      timeoutMs,
    );
  }

  async node(name: string): Promise<V1Node> {
    return this.core.readNode({ name });
  }

  async nodeState(node: string, rollout: string): Promise<NodeStateJson | undefined> {
    const raw = (await this.node(node)).metadata?.annotations?.[`${PREFIX}nodeState_${rollout}`];
    return raw === undefined ? undefined : (JSON.parse(raw) as NodeStateJson);
  }

  async jobs(labelSelector?: string): Promise<V1Job[]> {
    return (await this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector })).items;
  }

  /** Jobs of this file on one node, as `<package>@<version>:<stage>` (from the Keelson labels). */
  async jobKeys(node: string): Promise<string[]> {
    return (await this.jobs())
      .filter((j) => j.metadata?.labels?.['keelson.dev/node'] === node || jobNodeName(j) === node)
      .map(stageKey)
      .sort();
  }

  /** Watches Nodes of this file: calls `onNode` for every value, until the returned stop is called. */
  async watchNodes(onNode: (node: V1Node) => void): Promise<() => void> {
    const watch = new Watch(this.kc);
    let stopped = false;
    let req: { abort(): void } | undefined;
    const go = async () => {
      if (stopped) return;
      req = await watch.watch(
        '/api/v1/nodes',
        { labelSelector: `keelson.dev/e2e=${this.cluster}` },
        (_type: string, obj: V1Node) => onNode(obj),
        () => void setTimeout(() => void go(), 200),
      );
    };
    await go();
    return () => {
      stopped = true;
      req?.abort();
    };
  }

  /**
   * Records every Job and Pod created in this file's namespace (Keelson deletes a succeeded Job once its outcome is
   * recorded, so a list at the end would miss them): distinct objects by UID, with the last value seen.
   */
  async recordWorkloads(): Promise<WorkloadRecorder> {
    const rec = new WorkloadRecorder();
    const aborts: { abort(): void }[] = [];
    const one = async (kind: 'job' | 'pod', path: string) => {
      if (rec.stopped) return;
      const watch = new Watch(this.kc);
      aborts.push(
        await watch.watch(
          path,
          {},
          (_t: string, obj: V1Job | V1Pod) => rec.see(kind, obj),
          () => void setTimeout(() => void one(kind, path), 200),
        ),
      );
    };
    await one('job', `/apis/batch/v1/namespaces/${this.namespace}/jobs`);
    await one('pod', `/api/v1/namespaces/${this.namespace}/pods`);
    rec.onStop = () => aborts.forEach((a) => a.abort());
    return rec;
  }

  /** Deletes this file's rollouts (CLI), stops the worker and API, and deletes its nodes and namespace. */
  async stop(): Promise<void> {
    if (this.url) {
      const list = await this.cli(['rollout', 'list', '--json']);
      if (list.code === 0)
        for (const r of (JSON.parse(list.stdout) as { rollouts: { name: string }[] }).rollouts)
          await this.cli(['rollout', 'delete', r.name, '--yes']);
    }
    await this.app?.close();
    await this.keelson?.close().catch(() => undefined);
    for (const { worker } of this.started) await worker.stop();
    for (const n of this.nodes) await this.core.deleteNode({ name: n }).catch(() => undefined);
    await this.core.deleteNamespace({ name: this.namespace }).catch(() => undefined);
  }
}

export interface E2ESuiteOptions {
  /** Fake nodes of the file, created Ready before the tests. */
  nodes?: number;
  labels?: (i: number) => Record<string, string>;
  /** Worker environment variables over the e2e defaults (docs/settings.md). */
  workerSettings?: Record<string, string>;
  /** How long the teardown may take: it deletes each rollout with one CLI call, most of a minute under load. */
  stopTimeoutMs?: number;
}

/**
 * The stack of one e2e file, as every file uses it: its nodes, worker and API started before the tests with a
 * recorder of its Jobs and Pods (`e2e.workloads`), and everything deleted after them.
 */
export function useE2E(prefix: string, options: E2ESuiteOptions = {}): E2E {
  const e2e = new E2E(prefix, options.workerSettings);
  beforeAll(async () => {
    await e2e.start({
      ...(options.nodes && { nodes: options.nodes }),
      ...(options.labels && { labels: options.labels }),
    });
    e2e.workloads = await e2e.recordWorkloads();
  }, 120_000);
  afterAll(async () => {
    e2e.workloads?.stop();
    await e2e.stop();
  }, options.stopTimeoutMs ?? 120_000);
  return e2e;
}

export function jobNodeName(j: V1Job): string | undefined {
  const aff = j.spec?.template?.spec?.nodeName;
  return aff ?? j.metadata?.labels?.['keelson.dev/node'];
}

export function stageKey(j: V1Job | V1Pod): string {
  const l = j.metadata?.labels ?? {};
  return `${l['keelson.dev/package']}@${l['keelson.dev/version']}:${l['keelson.dev/stage']}`;
}

export function entry(state: NodeStateJson | undefined, pkg: string): PackageEntry | undefined {
  return Object.values(state ?? {}).find((e) => e.name === pkg);
}

export function isCordoned(node: V1Node, rollout: string): boolean {
  return node.spec?.unschedulable === true && node.metadata?.annotations?.[`${PREFIX}cordon_${rollout}`] === 'true';
}

export function hasTaint(node: V1Node, key: string): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === key);
}

export class WorkloadRecorder {
  readonly jobs = new Map<string, V1Job>();
  readonly pods = new Map<string, V1Pod>();
  stopped = false;
  onStop?: () => void;

  see(kind: 'job' | 'pod', obj: V1Job | V1Pod): void {
    const uid = obj.metadata?.uid;
    if (!uid) return;
    if (kind === 'job') this.jobs.set(uid, obj as V1Job);
    else this.pods.set(uid, obj as V1Pod);
  }

  /** `<package>@<version>:<stage>` of every Job created on the node, sorted (a key twice means two executors). */
  jobKeys(node: string): string[] {
    return [...this.jobs.values()]
      .filter((j) => jobNodeName(j) === node)
      .map(stageKey)
      .sort();
  }

  podKeys(node: string): string[] {
    return [...this.pods.values()]
      .filter((p) => p.spec?.nodeName === node)
      .map(stageKey)
      .sort();
  }

  job(node: string, key: string): V1Job | undefined {
    return [...this.jobs.values()].find((j) => jobNodeName(j) === node && stageKey(j) === key);
  }

  /**
   * When the stage a Job ran ended (ms): its succeeded pod's last container finished, as Keelson goes on from that
   * success and may delete the Job before the Job controller writes Complete; else the Job's completion time.
   */
  stageEnd(job: V1Job): number | undefined {
    const pod = [...this.pods.values()].find(
      (p) =>
        p.status?.phase === 'Succeeded' && (p.metadata?.ownerReferences ?? []).some((o) => o.uid === job.metadata?.uid),
    );
    const finished = [...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.containerStatuses ?? [])]
      .map((c) => c.state?.terminated?.finishedAt)
      .filter((t) => t !== undefined)
      .map((t) => new Date(t).getTime());
    if (finished.length > 0) return Math.max(...finished);
    return job.status?.completionTime ? new Date(job.status.completionTime).getTime() : undefined;
  }

  clear(): void {
    this.jobs.clear();
    this.pods.clear();
  }

  stop(): void {
    this.stopped = true;
    this.onStop?.();
  }
}
