import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The activities whose scheduling starts a node's stage or its interrupt. */
export const STAGE_ACTIVITIES: ReadonlySet<string> = new Set(['runStage', 'runInterrupt']);

export interface StageStartTasks {
  /** The first workflow task of a node's first run, when it started a stage: the node's first after its admission. */
  firstMs?: number;
  /** Every other workflow task that started a stage. */
  laterMs: number[];
}

/**
 * How long each workflow task that started a stage took, from scheduled to completed, in one node workflow's
 * history. The stage's activity is scheduled only when its task completes, and a task stays open while the local
 * activities it started run (the node-state write with each stage), so this is the workflow's part of every hop
 * between stages: queueing for the worker, the activation, and the local activities before the commands go. A task
 * that failed or timed out and ran again counts from its first scheduling. Also counted: a stage's wait scheduled
 * again without a new stage (a resume, a new timeout, a continue-as-new adopting its Job).
 */
export function stageStartTasks(events: readonly HistoryEvent[]): StageStartTasks {
  const result: StageStartTasks = { laterMs: [] };
  const continued = !!events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
  let scheduledAt: number | undefined;
  let tasks = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.workflowTaskScheduledEventAttributes) scheduledAt ??= tsToMs(e.eventTime);
    if (!e.workflowTaskCompletedEventAttributes) continue;
    tasks++;
    if (scheduledAt === undefined) continue;
    const ms = tsToMs(e.eventTime) - scheduledAt;
    scheduledAt = undefined;
    let startsStage = false;
    for (let j = i + 1; j < events.length && !events[j]!.workflowTaskScheduledEventAttributes; j++) {
      const name = events[j]!.activityTaskScheduledEventAttributes?.activityType?.name;
      if (name && STAGE_ACTIVITIES.has(name)) startsStage = true;
    }
    if (!startsStage) continue;
    if (tasks === 1 && !continued) result.firstMs = ms;
    else result.laterMs.push(ms);
  }
  return result;
}
