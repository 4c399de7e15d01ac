import {
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  sleep,
  workflowInfo,
  ActivityFailure,
  ApplicationFailure,
} from '@temporalio/workflow';
import type {
  FinishedStageJob,
  KeelsonActivities,
  RolloutRef,
  WorkflowSignal,
  WriteNodeStateInput,
} from '../../activities/contract';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { encodeNodeState, packageProgress, type NodeState, type Status } from '../../model/node-state';
import { writtenAfter, type NodeWriteOrder } from '../../model/node-write-order';
import { reportDue, reportOf, type LastReport } from '../../model/progress-report';
import { nodeProgressSignal, type NodeProgress } from '../messages';
import type { LocalCalls } from './activities';
import type { NodeConditions } from './conditions';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { isPatched, PATCHES } from '../patches';
import { FAILURE_TYPES } from '../../model/failure-types';

// The node-state projection (G1): whole-state writes, one in flight, in the order the transitions happened. The
// queue holds snapshots taken at transition time, so a later transition can never be overtaken by an earlier one;
// of consecutive snapshots of one rollout only the last is written, never an older one after a newer.

const { writeNodeState, deleteStageJob, readNode } = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

const WRITE_RETRY_MAX_SECONDS = 300;
/** The timer after a stale write: one workflow task to complete before the next write, only after a crash or stall. */
const STALE_WRITE_FENCE_MS = 1000;

/** The annotation value on the Node after a write, and the order there when it was a later write's (a stale one). */
type WriteResult = { written: string; newerOnNode?: NodeWriteOrder };

/** The node's counts of its progress reports and of its writes, carried across continue-as-new (carried.ts). */
export interface WriterCounts {
  reports?: number;
  writes?: number;
}

export interface NodeStateSnapshot extends RolloutRef {
  state: NodeState;
  status: Status;
}

export class NodeStateWriter {
  private readonly queue: NodeStateSnapshot[] = [];
  private readonly lastQueued = new Map<string, string>();
  /** Per rollout, the last progress report a write carried: a write that changes nothing it judges by sends none. */
  private readonly lastReported = new Map<string, LastReport>();
  /** Per rollout, the last snapshot written whose report was held back (a stage's change alone). */
  private readonly held = new Map<string, NodeStateSnapshot>();
  /** Per rollout, the order on the Node with `previous`, when known (not across continue-as-new): tested too (G1). */
  private readonly previousOrder = new Map<string, NodeWriteOrder>();
  private queued = 0;
  private written = 0;
  private inFlight = false;
  /** Jobs to delete once the snapshots published before them (`after`, a count) are written (G3). */
  private readonly deletes: { job: FinishedStageJob; after: number }[] = [];

  /** `previous` holds, per rollout, the annotation value Keelson last wrote (carried across continue-as-new). */
  constructor(
    private readonly cluster: string,
    private readonly node: string,
    readonly previous: Record<string, string | null>,
    private readonly count: WriterCounts,
    /** The node workflow's local activities, shared with its other short calls (workflows/node/activities.ts). */
    private readonly kubeLocal: LocalCalls,
    /** The node workflow's conditions, counted (workflows/node/conditions.ts). */
    private readonly conditions: NodeConditions,
  ) {}

  /** Queues the whole state of one rollout; a snapshot equal to the last one queued changes nothing and is dropped. */
  publish(snapshot: NodeStateSnapshot): void {
    const encoded = `${snapshot.generation} ${snapshot.status} ${encodeNodeState(snapshot.state)}`;
    if (this.lastQueued.get(snapshot.rollout) === encoded) return;
    this.lastQueued.set(snapshot.rollout, encoded);
    // Model transitions return new objects and never mutate, so the snapshot can share them.
    this.queue.push({ ...snapshot });
    this.queued++;
  }

  /** Resolves once everything published so far is on the Node (G3: a failure is recorded before cleanup). */
  flush(): Promise<void> {
    const target = this.queued;
    return this.conditions.until(() => this.written >= target);
  }

  /**
   * G3: deletes a finished stage's Job once everything published so far is on the Node, in the same activity as the
   * write that puts it there (one activity per stage instead of two), or alone when that write has already happened.
   */
  deleteAfterWrite(job: FinishedStageJob): void {
    this.deletes.push({ job, after: this.queued });
  }

  /** Jobs waiting for their deletion: a stage of the same name must not start and adopt one meanwhile. */
  deletingJobs(): Set<string> {
    return new Set(this.deletes.map((d) => d.job.jobName));
  }

  /** A forgotten rollout: its next snapshot, from a rollout started again under the name, is written whatever it is. */
  forget(rollout: string): void {
    this.lastQueued.delete(rollout);
    this.lastReported.delete(rollout);
    this.held.delete(rollout);
    this.previousOrder.delete(rollout);
    delete this.previous[rollout];
  }

  idle(): boolean {
    return this.queue.length === 0 && !this.inFlight && this.deletes.length === 0;
  }

  /** The single writer loop; started once per run. */
  async run(): Promise<never> {
    for (;;) {
      await this.conditions.until(() => this.queue.length > 0 || this.deletes.length > 0);
      // One round of the workflow's coroutines first: what the node loop publishes in the same activation (the first
      // stage, right after the rollout's read of the Node) rides on this write. Patched: histories before it wrote
      // at once.
      if (isPatched(PATCHES.writeAfterStep)) await this.conditions.nextRound();
      if (this.queue.length === 0) {
        // Everything published is written: the deletes are due now, with no write to ride on.
        this.inFlight = true;
        const remove = isPatched(PATCHES.localNodeCalls) ? this.kubeLocal.deleteStageJob : deleteStageJob;
        for (const d of this.deletes.splice(0)) {
          // G13: a Job that cannot be deleted (403) stays for its TTL; the writer goes on.
          await remove(d.job).catch((err: unknown) => {
            if (isCancellation(err)) throw err;
            log.warn('finished stage Job not deleted', { job: d.job.jobName, error: String(err) });
          });
        }
        this.inFlight = false;
        continue;
      }
      let next = this.queue.shift()!;
      let taken = 1;
      // A later snapshot of the same rollout holds all an earlier one did (a stage's end and the next stage's start
      // come together): write only the last. Patched: histories before it wrote each one.
      while (this.queue[0]?.rollout === next.rollout && isPatched(PATCHES.coalesceNodeStateWrites)) {
        next = this.queue.shift()!;
        taken++;
      }
      this.inFlight = true;
      const upTo = this.written + taken;
      const due = this.deletes.filter((d) => d.after <= upTo);
      this.deletes.splice(0, due.length);
      // The write's own activity reports to the rollout. Patched: histories before it signalled from here.
      const local = isPatched(PATCHES.localNodeCalls);
      // A local write's result is recorded only when its workflow task completes: after a worker crash it runs
      // again, maybe after a later write landed. Its order tells the activity so, and it writes nothing (G1).
      // Patched: histories before it wrote as a regular activity (node-state-writes-remote), or before that as a
      // local one without an order.
      const ordered = local && isPatched(PATCHES.orderedLocalWrites);
      const remote = local && !ordered && isPatched(PATCHES.nodeStateWritesRemote);
      const order = ordered ? this.nextOrder() : undefined;
      const previousOrder = order && this.previousOrder.get(next.rollout);
      const { written, newerOnNode } = await this.write(
        {
          ...next,
          node: this.node,
          previous: this.previous[next.rollout] ?? null,
          ...(order && { order }),
          ...(previousOrder && { previousOrder }),
          ...(due.length > 0 && { deleteJobs: due.map((d) => d.job) }),
          ...(local && this.progress(next)),
        },
        local && !remote,
        ordered,
      );
      this.previous[next.rollout] = written;
      if (order) this.previousOrder.set(next.rollout, newerOnNode ?? order);
      if (!local) await this.report(next);
      if (newerOnNode) await this.afterStale(next, taken, due, newerOnNode);
      else this.written += taken;
      this.inFlight = false;
    }
  }

  /**
   * A stale write (G1) wrote nothing, deleted nothing and reported nothing. A durable step comes first: a worker
   * whose workflow task was lost while its local activities ran cannot complete a task, so it stops here instead of
   * writing its older snapshots over the live worker's. Then the snapshot is not counted as written: it goes again,
   * above the Node's order, unless a later one of its rollout is queued and carries it. Its Jobs wait for the write
   * that carries it (G3), and its report goes out with that write.
   */
  private async afterStale(
    snapshot: NodeStateSnapshot,
    taken: number,
    due: { job: FinishedStageJob; after: number }[],
    onNode: NodeWriteOrder,
  ): Promise<void> {
    await sleep(STALE_WRITE_FENCE_MS);
    this.lastReported.delete(snapshot.rollout);
    const later = this.queue.findIndex((s) => s.rollout === snapshot.rollout);
    // An order of another start time is a later run's (this run's own is never below it): nothing to write again.
    if (later < 0 && onNode[0] === workflowInfo().startTime.getTime()) {
      this.queue.unshift(snapshot);
      this.written += taken - 1;
      this.deletes.unshift(...due);
      return;
    }
    this.written += taken;
    const carrier = later < 0 ? this.written : this.written + later + 1;
    // The run loop takes the due deletes from the front: they stay sorted by the write they wait for.
    this.deletes.push(...due.map((d) => ({ ...d, after: carrier })));
    this.deletes.sort((a, b) => a.after - b.after);
  }

  /** The failure of the last write that failed, shown in the UI until a write succeeds. */
  lastFailure: string | null = null;

  /**
   * G13: a write that fails for good (a 403, another writer's change) is retried with a growing pause, visibly,
   * instead of failing the workflow task for ever. After another writer's change, its value is what the next write
   * replaces: the node workflow is the node state's one writer (G1), and says so in its log.
   */
  private async write(input: WriteNodeStateInput, local: boolean, ordered: boolean): Promise<WriteResult> {
    const calls = local ? this.kubeLocal : { writeNodeState, readNode };
    const writeState = ordered ? this.kubeLocal.writeNodeStateOrdered : calls.writeNodeState;
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await writeState(input);
        this.lastFailure = null;
        if (result.newerOnNode) this.passLater(input.rollout, result.newerOnNode);
        return result;
      } catch (err) {
        if (isCancellation(err)) throw err;
        // An activity's failure comes wrapped in an ActivityFailure; a local activity's may come bare.
        const root = err instanceof ActivityFailure && err.cause ? err.cause : err;
        this.lastFailure = String(root instanceof Error ? root.message : root);
        log.warn('node state not written; trying again', { rollout: input.rollout, error: this.lastFailure });
        await sleep(Math.min(WRITE_RETRY_MAX_SECONDS, 10 * 2 ** attempt) * 1000);
        if (root instanceof ApplicationFailure && root.type === FAILURE_TYPES.foreignNodeStateWrite) {
          const read: { nodeState: string | null; nodeStateOrder?: NodeWriteOrder } = await calls
            .readNode({ ...input, node: this.node })
            .catch(() => ({ nodeState: input.previous }));
          // A later write landed during the pause (a stalled attempt): replacing it would take the entry backwards.
          const later = read.nodeStateOrder;
          if (read.nodeState !== null && input.order && later && writtenAfter(later, input.order)) {
            this.lastFailure = null;
            this.passLater(input.rollout, later);
            return { written: read.nodeState, newerOnNode: later };
          }
          input = { ...input, previous: read.nodeState, previousOrder: later };
        }
      }
    }
  }

  /**
   * The next write's order: the start time Temporal records for the workflow (so a replay computes the same one) and
   * the count of writes, carried across continue-as-new.
   */
  private nextOrder(): NodeWriteOrder {
    this.count.writes = (this.count.writes ?? 0) + 1;
    return [workflowInfo().startTime.getTime(), this.count.writes];
  }

  /**
   * A stale write: the Node holds a later one, whose value the next write replaces. That write goes above its order
   * (when it is this workflow's own): a replay that writes less often than the run it replaces would otherwise put a
   * lower order there.
   */
  private passLater(rollout: string, onNode: NodeWriteOrder): void {
    log.info('node state write was stale: the Node holds a later one', { rollout, onNode });
    if (onNode[0] === workflowInfo().startTime.getTime())
      this.count.writes = Math.max(this.count.writes ?? 0, onNode[1]);
  }

  /**
   * The progress report a write sends once it is on the Node, ordered by the write's time and the node's count; none
   * when the write changes nothing the rollout judges by (model/progress-report.ts). A write retried keeps its report,
   * so the last one sent always reaches the rollout.
   */
  private progress(s: NodeStateSnapshot, force = false): { report: WorkflowSignal } | undefined {
    const state = packageProgress(s.state);
    const now = Date.now();
    const next = reportOf({ generation: s.generation, status: s.status, state }, now);
    if (!force && !reportDue(this.lastReported.get(s.rollout), next)) {
      this.held.set(s.rollout, s);
      return undefined;
    }
    this.held.delete(s.rollout);
    this.lastReported.set(s.rollout, next);
    this.count.reports = (this.count.reports ?? 0) + 1;
    const report: NodeProgress = {
      node: this.node,
      generation: s.generation,
      status: s.status,
      state,
      order: [now, this.count.reports],
    };
    return {
      report: {
        workflowId: rolloutWorkflowId(this.cluster, s.rollout),
        signal: nodeProgressSignal.name,
        args: [report],
      },
    };
  }

  /** Whether a write's report was held back (a stage's change alone) and no later one has gone out. */
  holdsReports(): boolean {
    return this.held.size > 0;
  }

  /**
   * Sends the reports held back, once everything is written and the node runs nothing (it waits for a permit or a
   * dependency, or another package is erroring): the view of a node at rest is what the Node says, not a stage behind.
   */
  async sendHeldReports(): Promise<void> {
    // Every report is built now, in order: one built after an await could be older than a write's report sent since.
    const reports = [...this.held.values()].map((s) => this.progress(s, true)!.report);
    for (const report of reports) {
      try {
        await getExternalWorkflowHandle(report.workflowId).signal(nodeProgressSignal, report.args[0] as NodeProgress);
      } catch (err) {
        log.info('rollout did not take node progress', { rollout: report.workflowId, error: String(err) });
      }
    }
  }

  // The rollout folds node progress into its status and batches; a rollout already gone has nothing to fold into.
  private async report(s: NodeStateSnapshot): Promise<void> {
    try {
      await getExternalWorkflowHandle(rolloutWorkflowId(this.cluster, s.rollout)).signal(nodeProgressSignal, {
        node: this.node,
        generation: s.generation,
        status: s.status,
        state: s.state,
      });
    } catch (err) {
      log.info('rollout did not take node progress', { rollout: s.rollout, error: String(err) });
    }
  }
}
