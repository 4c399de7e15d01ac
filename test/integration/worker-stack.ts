import { CoreV1Api, KubeConfig, Watch, type V1Job, type V1Node, type V1Taint } from '@kubernetes/client-node';
import { defaultPayloadConverter } from '@temporalio/common';
import { KeelsonClient } from '../../client';
import { ClientSettingsSchema } from '../../client/settings';
import { decodeNodeState, workflowIdPrefix, type PackageEntry } from '../../model';
import { createFakeNodes } from '../../harness/fake-nodes';
import { startInProcessWorker, type InProcessWorker } from '../../harness/in-process-worker';
import { eventually } from '../../harness/wait';
import { keelsonNames, testWorkerSettings } from '../../harness/worker-settings';

export { eventually };

// A whole Keelson worker in the test process (workers/worker.ts startWorker, with the settings a deployment would
// give it) on the shared Temporal server and kube-apiserver, its own fake kwok nodes, and a recorder of every value
// the Nodes and Jobs take. Used by tests that need real workflows over real activities with chosen worker settings.

/** Fake kwok nodes named `<prefix>-n<i>`, labelled `keelson.dev/itest=<prefix>` only; Ready when it returns. */
export function createItestNodes(
  core: CoreV1Api,
  prefix: string,
  count: number,
  taints?: V1Taint[],
): Promise<string[]> {
  const label = { 'keelson.dev/itest': prefix };
  const defs = Array.from({ length: count }, (_, i) => ({ name: `${prefix}-n${i}`, labels: label, taints }));
  return createFakeNodes(core, defs, `keelson.dev/itest=${prefix}`);
}

const annotationOf = (rollout: string) => `skyhook.nvidia.com/nodeState_${rollout}`;

/** A package's entry in a Node's nodeState annotation of a rollout. */
export function entryIn(node: V1Node, rollout: string, pkg: string): PackageEntry | undefined {
  const decoded = decodeNodeState(node.metadata?.annotations?.[annotationOf(rollout)]);
  return decoded.ok ? Object.values(decoded.state).find((e) => e.name === pkg) : undefined;
}

/** The entry read from the Node now; throws while there is none. */
export async function nodeEntry(core: CoreV1Api, node: string, rollout: string, pkg: string): Promise<PackageEntry> {
  const e = entryIn(await core.readNode({ name: node }), rollout, pkg);
  if (!e) throw new Error(`no ${pkg} entry on ${node}`);
  return e;
}

export const stageState = (e: PackageEntry | undefined) => `${e?.stage}:${e?.state}`;

/** One event a watch delivered, in the order this process received it across all watches. */
export interface Seen {
  kind: 'node' | 'job';
  type: string;
  name: string;
  obj: V1Node | V1Job;
}

/** Records every value of the test's Nodes and of the Jobs in its namespace, in one timeline. */
export class Timeline {
  readonly events: Seen[] = [];
  private readonly aborts: { abort(): void }[] = [];
  private stopped = false;

  constructor(private readonly kc: KubeConfig) {}

  /** Watches `path`; a watch the apiserver ends resumes from the last resource version seen, so nothing is missed. */
  async watch(kind: Seen['kind'], path: string, labelSelector?: string, resourceVersion?: string): Promise<void> {
    if (this.stopped) return;
    let last = resourceVersion;
    const req = await new Watch(this.kc).watch(
      path,
      { allowWatchBookmarks: true, ...(labelSelector && { labelSelector }), ...(last && { resourceVersion: last }) },
      (type: string, obj: V1Node | V1Job) => {
        last = obj.metadata?.resourceVersion ?? last;
        if (type !== 'BOOKMARK') this.events.push({ kind, type, name: obj.metadata?.name ?? '', obj });
      },
      (err: unknown) => {
        // 410 Gone: the version is too old to resume from; start afresh.
        const resume = (err as { statusCode?: number } | null)?.statusCode === 410 ? undefined : last;
        setTimeout(() => void this.watch(kind, path, labelSelector, resume), 200);
      },
    );
    this.aborts.push(req);
  }

  /** Index of the first event that matches, or -1. */
  indexOf(match: (e: Seen) => boolean): number {
    return this.events.findIndex(match);
  }

  stop(): void {
    this.stopped = true;
    for (const a of this.aborts) a.abort();
  }
}

export interface ScheduledActivity {
  input: unknown;
  startToCloseSeconds: number;
  completed: boolean;
}

/** A worker with its own cluster name, task queue and settings, and a client for its rollouts. */
export class InProcessKeelson {
  readonly cluster: string;
  readonly taskQueue: string;
  client!: KeelsonClient;
  private worker?: InProcessWorker;

  constructor(
    readonly prefix: string,
    private readonly env: Record<string, string>,
  ) {
    this.cluster = prefix;
    this.taskQueue = `keelson-${prefix}`;
  }

  async start(): Promise<this> {
    this.worker = await startInProcessWorker({
      ...testWorkerSettings(keelsonNames(this.cluster, 'keelson'), '127.0.0.1:0'),
      ...this.env,
    });
    this.client = await KeelsonClient.connect(
      ClientSettingsSchema.parse({
        TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
        KEELSON_CLUSTER: this.cluster,
        KEELSON_TASK_QUEUE: this.taskQueue,
      }),
    );
    return this;
  }

  /** The inputs of every scheduled activity of a type, with the start-to-close timeout it was scheduled with. */
  async scheduled(workflowId: string, type: string): Promise<ScheduledActivity[]> {
    const events = (await this.client.ctx.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const completed = new Set(events.map((e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId)));
    return events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type)
      .map((e) => {
        const a = e.activityTaskScheduledEventAttributes!;
        return {
          input: defaultPayloadConverter.fromPayload(a.input!.payloads![0]!),
          startToCloseSeconds: Number(a.startToCloseTimeout?.seconds ?? 0),
          completed: completed.has(Number(e.eventId)),
        };
      });
  }

  /** A metric of the worker, summed over its label sets (0 before it has any). */
  async metric(name: string): Promise<number> {
    const text = await (await fetch(this.worker!.metricsUrl)).text();
    return text
      .split('\n')
      .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  }

  /** Messages of the activity failures (retries exhausted or non-retryable) in a workflow's history. */
  async activityFailures(workflowId: string): Promise<string[]> {
    const events = (await this.client.ctx.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    return events.flatMap((e) => e.activityTaskFailedEventAttributes?.failure?.message ?? []);
  }

  /** Workflow IDs of this worker's cluster that are still running. */
  async runningWorkflows(): Promise<string[]> {
    const query = `WorkflowId STARTS_WITH '${workflowIdPrefix(this.cluster)}' AND ExecutionStatus = 'Running'`;
    const ids: string[] = [];
    for await (const wf of this.client.ctx.client.workflow.list({ query })) ids.push(wf.workflowId);
    return ids;
  }

  /** Deletes its rollouts and waits until their node workflows have let go, then stops the worker. */
  async stop(): Promise<void> {
    for (const r of await this.client.listRollouts().catch(() => [])) {
      await this.client.deleteRollout(r.name).catch(() => undefined);
    }
    await eventually(
      'workflows of the test to end',
      async () => {
        const left = await this.runningWorkflows();
        if (left.length > 0) throw new Error(`still running: ${left.join(' ')}`);
      },
      120_000,
    ).catch((err: Error) => process.stderr.write(`${err.message}\n`));
    await this.client.close().catch(() => undefined);
    await this.worker?.stop();
  }
}
