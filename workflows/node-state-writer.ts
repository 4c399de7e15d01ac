import { condition, getExternalWorkflowHandle, log, patched, proxyActivities } from '@temporalio/workflow';
import type { FinishedStageJob, KeelsonActivities, RolloutRef } from '../activities/contract';
import { SHORT_CALL_TIMEOUT } from './activity-timeouts';
import { encodeNodeState, type NodeState, type Status } from '../model';
import { nodeProgressSignal, rolloutWorkflowId } from './messages';

// The node-state projection (G1): whole-state writes, one in flight, in the order the transitions happened. The
// queue holds snapshots taken at transition time, so a later transition can never be overtaken by an earlier one;
// of consecutive snapshots of one rollout only the last is written, never an older one after a newer.

const { writeNodeState, deleteStageJob } = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

export interface NodeStateSnapshot extends RolloutRef {
  state: NodeState;
  status: Status;
}

export class NodeStateWriter {
  private readonly queue: NodeStateSnapshot[] = [];
  private readonly lastQueued = new Map<string, string>();
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
    return condition(() => this.written >= target);
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

  idle(): boolean {
    return this.queue.length === 0 && !this.inFlight && this.deletes.length === 0;
  }

  /** The single writer loop; started once per run. */
  async run(): Promise<never> {
    for (;;) {
      await condition(() => this.queue.length > 0 || this.deletes.length > 0);
      if (this.queue.length === 0) {
        // Everything published is written: the deletes are due now, with no write to ride on.
        this.inFlight = true;
        for (const d of this.deletes.splice(0)) await deleteStageJob(d.job);
        this.inFlight = false;
        continue;
      }
      let next = this.queue.shift()!;
      let taken = 1;
      // A later snapshot of the same rollout holds all an earlier one did (a stage's end and the next stage's start
      // come together): write only the last. Patched: histories before it wrote each one.
      while (this.queue[0]?.rollout === next.rollout && patched('coalesce-node-state-writes')) {
        next = this.queue.shift()!;
        taken++;
      }
      this.inFlight = true;
      const upTo = this.written + taken;
      const due = this.deletes.filter((d) => d.after <= upTo);
      this.deletes.splice(0, due.length);
      const { written } = await writeNodeState({
        ...next,
        node: this.node,
        previous: this.previous[next.rollout] ?? null,
        ...(due.length > 0 && { deleteJobs: due.map((d) => d.job) }),
      });
      this.previous[next.rollout] = written;
      await this.report(next);
      this.inFlight = false;
      this.written += taken;
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
