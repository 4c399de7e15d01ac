import {
  ActivityCancellationType,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
} from '@temporalio/workflow';
import type { KeelsonActivities, RunStageInput, StageResult } from '../activities/contract';
import { SHORT_CALL_TIMEOUT } from './activity-timeouts';

// One stage of one package on one node, waited for through runStage. The wait restarts, without touching the Job,
// when the stage timeout changes (G4: the Job's deadline is patched and the wait resumes with the time left) and
// when the rollout is paused or disabled (G5: the Job is suspended and nothing resumes it until both are lifted).

const { setStageDeadline, suspendStageJob } = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

/**
 * Heartbeats carry the Job's progress; a silent watcher is a dead worker, and its retry adopts the Job. Short, because
 * it is how long a killed worker's waits stall; a false alarm on a starved machine only re-adopts the Job.
 */
export const STAGE_HEARTBEAT_TIMEOUT_SECONDS = 20;

export class StageRun {
  private scope: CancellationScope | undefined;
  private deadlineChanged = false;
  /** Set by rerun, reset, forget and continue-as-new: the result, whenever it comes, is no longer this run's. */
  stopped = false;

  constructor(
    readonly input: RunStageInput,
    readonly jobName: string,
    /** Workflow time (ms) at which the stage first started, kept across restarts of the wait. */
    readonly startedAt: number,
    private readonly suspended: () => boolean,
    private readonly summary: string,
  ) {}

  get timeoutSeconds(): number {
    return this.input.timeoutSeconds;
  }

  /** G4: a new stage timeout reaches the running stage. */
  changeTimeout(seconds: number): void {
    if (seconds === this.input.timeoutSeconds) return;
    this.input.timeoutSeconds = seconds;
    this.deadlineChanged = true;
    this.scope?.cancel();
  }

  /** G5: pause or disable came in; the wait stops so the loop can suspend the Job. */
  suspend(): void {
    this.scope?.cancel();
  }

  stop(): void {
    this.stopped = true;
    this.scope?.cancel();
  }

  /** The stage's result, or undefined when the run was stopped. */
  async wait(): Promise<StageResult | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      if (this.deadlineChanged) {
        this.deadlineChanged = false;
        await setStageDeadline({ jobName: this.jobName, activeDeadlineSeconds: this.input.timeoutSeconds });
      }
      if (this.suspended()) {
        await suspendStageJob({ jobName: this.jobName, suspend: true });
        await condition(() => !this.suspended() || this.stopped);
        if (this.stopped) return undefined;
        await suspendStageJob({ jobName: this.jobName, suspend: false });
        continue;
      }
      const remaining = Math.max(1, this.input.timeoutSeconds - Math.floor((Date.now() - this.startedAt) / 1000));
      // A watcher that fails (apiserver down, worker gone) is retried until the stage timeout has passed: an outage
      // of the cluster's API is not a failure of the package. Non-retryable errors (403, 422) end it at once.
      const { runStage } = proxyActivities<KeelsonActivities>({
        startToCloseTimeout: remaining * 1000,
        scheduleToCloseTimeout: remaining * 1000,
        heartbeatTimeout: STAGE_HEARTBEAT_TIMEOUT_SECONDS * 1000,
        // Cancelling the wait never waits on the watcher: the Job stays and the next wait adopts it by name.
        cancellationType: ActivityCancellationType.TRY_CANCEL,
        retry: { initialInterval: '1s', maximumInterval: '30s' },
        summary: this.summary,
      });
      this.scope = new CancellationScope();
      try {
        return await this.scope.run(() => runStage({ ...this.input }));
      } catch (err) {
        // A cancelled workflow is not a restarted wait: let its cancellation through.
        if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
        if (isCancellation(err)) continue;
        return {
          outcome: 'failed',
          reason: 'WatcherFailed',
          jobName: this.jobName,
          adopted: false,
          failedPods: 0,
          logTail: err instanceof Error ? err.message : String(err),
        };
      } finally {
        this.scope = undefined;
      }
    }
  }
}
