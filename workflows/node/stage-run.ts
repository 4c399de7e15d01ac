import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { KeelsonActivities, RunStageInput, StageResult } from '../../activities/contract';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { isPatched, PATCHES } from '../patches';
import type { NodeConditions } from './conditions';
import { FAILURE_TYPES } from '../../model/failure-types';

// One stage of one package on one node, waited for through runStage. The wait restarts, without touching the Job,
// when the stage timeout changes (G4: the Job's deadline is patched and the wait resumes with the time left) and
// when the rollout is paused or disabled (G5: the Job is suspended and nothing resumes it until both are lifted).
// A paused stage keeps the time it had left (G14): Kubernetes re-arms a resumed Job's deadline from the resume, so the
// Job gets the time left as its deadline, and the wait does not count the pause.

const { setStageDeadline, suspendStageJob } = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

/**
 * Heartbeats carry the Job's progress; a silent watcher is a dead worker, and its retry adopts the Job. Short, because
 * it is how long a killed worker's waits stall; a false alarm on a starved machine only re-adopts the Job.
 */
export const STAGE_HEARTBEAT_TIMEOUT_SECONDS = 20;

/**
 * How long past the stage timeout the wait goes on: the Job controller fails a Job at its deadline, and that failure,
 * with its reason and log tail, is what G3 records. Only a Job that never reports ends the wait.
 */
export const STAGE_DEADLINE_GRACE_SECONDS = 60;

/** A stage's clock, carried across continue-as-new with the node's state. */
export interface StageClock {
  /** Workflow time (ms) at which the stage started, moved on by the time it spent paused. */
  startedAt: number;
  /** Workflow time (ms) at which the running pause began. */
  pausedAt?: number;
  /** Seconds of the stage gone when its Job's deadline was last re-armed (a resume): that deadline counts from there. */
  armedAtSeconds?: number;
}

const MAX_FAILURE_MESSAGE = 2000;

export class StageRun {
  private scope: CancellationScope | undefined;
  private deadlineChanged = false;
  /** Set by rerun, reset, forget and continue-as-new: the result, whenever it comes, is no longer this run's. */
  stopped = false;
  private returned = false;
  private attemptsInFlight = 0;
  private restarting = false;

  /** The wait is over and no runStage attempt of it is in flight: nothing of this run creates a Job any more. */
  get ended(): boolean {
    return this.returned && this.attemptsInFlight === 0;
  }
  /** The result is the workflow's own (the Job did not report): its Job may still run, and must go (G11). */
  jobMayRun = false;
  /** G16: runStage refused to create the Job, the node no longer being cordoned by the rollout; the run has no result. */
  cordonLost = false;

  constructor(
    readonly input: RunStageInput,
    readonly jobName: string,
    /** Kept across restarts of the wait and continue-as-new. */
    private readonly clock: StageClock,
    private readonly suspended: () => boolean,
    private readonly summary: string,
    /**
     * G11: cancelling the wait waits for the runStage attempt to end, so a stopped run never creates its Job after its
     * deletion was confirmed. Off only for histories recorded before it (which did not wait).
     */
    private readonly waitForCancellation: boolean,
    /** The node workflow's conditions, counted (workflows/node/conditions.ts). */
    private readonly conditions: NodeConditions,
  ) {}

  get timeoutSeconds(): number {
    return this.input.timeoutSeconds;
  }

  /** G4: a new stage timeout reaches the running stage. */
  changeTimeout(seconds: number): void {
    if (seconds === this.input.timeoutSeconds) return;
    this.input.timeoutSeconds = seconds;
    this.deadlineChanged = true;
    this.restart();
  }

  /** G5: pause or disable came in; the wait stops so the loop can suspend the Job. */
  suspend(): void {
    this.restart();
  }

  /** The wait goes on at once; the cancelled attempt ends when its cancellation reaches it (`ended` counts it). */
  private restart(): void {
    this.restarting = true;
    this.scope?.cancel();
  }

  stop(): void {
    this.stopped = true;
    this.scope?.cancel();
  }

  /** The stage's result, or undefined when the run was stopped. G13: a failure to control the Job is a result too. */
  async wait(): Promise<StageResult | undefined> {
    try {
      return await this.waitForEnd();
    } catch (err) {
      if (isCancellation(err)) throw err;
      return this.failed('StageControlFailed', `the stage's Job could not be controlled: ${message(err)}`);
    } finally {
      this.returned = true;
    }
  }

  private async waitForEnd(): Promise<StageResult | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      if (this.deadlineChanged) {
        this.deadlineChanged = false;
        const armed = this.clock.armedAtSeconds ?? 0;
        await setStageDeadline({ jobName: this.jobName, activeDeadlineSeconds: this.input.timeoutSeconds - armed });
      }
      if (this.suspended()) {
        await suspendStageJob({ jobName: this.jobName, suspend: true });
        this.clock.pausedAt ??= Date.now();
        await this.conditions.until(() => !this.suspended() || this.stopped);
        if (this.stopped) return undefined;
      }
      // The Job is suspended: by this wait, or by a run before a continue-as-new whose resume came first (G14).
      if (this.clock.pausedAt !== undefined) {
        // Patched: histories before it counted the pause against the stage and resumed with the whole deadline.
        if (isPatched(PATCHES.pauseKeepsTimeLeft)) {
          this.clock.startedAt += Date.now() - this.clock.pausedAt;
          const gone = Math.floor((Date.now() - this.clock.startedAt) / 1000);
          this.clock.armedAtSeconds = gone;
          const left = Math.max(1, this.input.timeoutSeconds - gone);
          await setStageDeadline({ jobName: this.jobName, activeDeadlineSeconds: left });
        }
        delete this.clock.pausedAt;
        await suspendStageJob({ jobName: this.jobName, suspend: false });
        continue;
      }
      const gone = Math.floor((Date.now() - this.clock.startedAt) / 1000);
      const remaining = Math.max(1, this.input.timeoutSeconds - gone) + STAGE_DEADLINE_GRACE_SECONDS;
      // A watcher that fails (apiserver down, worker gone) is retried until the stage timeout has passed: an outage
      // of the cluster's API is not a failure of the package. Non-retryable errors (403, 422) end it at once.
      const { runStage } = proxyActivities<KeelsonActivities>({
        startToCloseTimeout: remaining * 1000,
        scheduleToCloseTimeout: remaining * 1000,
        heartbeatTimeout: STAGE_HEARTBEAT_TIMEOUT_SECONDS * 1000,
        // The Job stays when the wait is cancelled, and the next wait adopts it by its run ID.
        cancellationType: this.waitForCancellation
          ? ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
          : ActivityCancellationType.TRY_CANCEL,
        retry: { initialInterval: '1s', maximumInterval: '30s' },
        summary: this.summary,
      });
      this.scope = new CancellationScope();
      this.restarting = false;
      try {
        const attempt = this.scope.run(() => runStage({ ...this.input }));
        // Histories before it awaited the attempt itself (its cancellation came back at once).
        if (!this.waitForCancellation) return await attempt;
        this.attemptsInFlight++;
        const settled = attempt.then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        void settled.then(() => this.attemptsInFlight--);
        // A pause, a new timeout or a stop does not wait for the cancelled attempt: it may take a heartbeat to hear.
        const first = await Promise.race([
          settled,
          this.conditions.until(() => this.restarting || this.stopped || this.returned).then(() => null),
        ]);
        if (first === null) continue;
        if ('error' in first) throw first.error;
        return first.result;
      } catch (err) {
        // A cancelled workflow is not a restarted wait: let its cancellation through.
        if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
        if (isCancellation(err)) continue;
        if (isNotCordoned(err)) {
          this.cordonLost = true;
          return undefined;
        }
        if (err instanceof Error && err.cause instanceof TimeoutFailure) {
          const timeout = this.input.timeoutSeconds;
          return this.failed(
            'DeadlineExceeded',
            `the stage ran past its timeout of ${timeout}s; its Job reported no end`,
          );
        }
        return this.failed('WatcherFailed', message(err));
      } finally {
        this.scope = undefined;
      }
    }
  }

  private failed(reason: string, logTail: string): StageResult {
    this.jobMayRun = true;
    return { outcome: 'failed', reason, jobName: this.jobName, adopted: false, failedPods: 0, logTail };
  }
}

function isNotCordoned(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === FAILURE_TYPES.notCordoned
  );
}

/** A failure's message, bounded: it goes into the node's annotation. */
function message(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > MAX_FAILURE_MESSAGE ? `${text.slice(0, MAX_FAILURE_MESSAGE)}…` : text;
}
