import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { quantile } from './quantile';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One hop from a stage's end to the next stage's start, split at the points a history records. */
export interface StageHop {
  /** The stage activity's completion to the next one's start. */
  hopMs: number;
  /** The completion to the start of the workflow task it brought: the task's wait for a worker. */
  waitMs: number;
  /** The task's start to its last local activity's end (the node-state write), as core records it; 0 without one. */
  localMs: number;
  /** The rest of the task, to its completion, which sends the next stage's command. */
  restMs: number;
}

/**
 * The direct hops between stage activities (`stageActivities`, by type) in one workflow's history: a stage's
 * completion whose very next workflow task scheduled the next stage, which started on its first attempt. Hops through
 * other steps (a drain before an interrupt), across a failed or timed-out workflow task (its wait is a timeout, not
 * a hop), into a retried stage (its start is the retry's) and hops whose next stage never started are left out.
 */
export function stageHops(events: readonly HistoryEvent[], stageActivities: ReadonlySet<string>): StageHop[] {
  const names = new Map<string, string>();
  const firstAttemptStart = new Map<string, number>();
  for (const e of events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) names.set(String(e.eventId), name);
    const started = e.activityTaskStartedEventAttributes;
    // Written once, when the activity ends, with its last attempt's start.
    if (started && (started.attempt ?? 1) <= 1)
      firstAttemptStart.set(String(started.scheduledEventId), tsToMs(e.eventTime));
  }
  const hops: StageHop[] = [];
  let stageDone: number | undefined;
  let taskStarted: number | undefined;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const done = e.activityTaskCompletedEventAttributes;
    if (done && stageActivities.has(names.get(String(done.scheduledEventId)) ?? '')) stageDone = tsToMs(e.eventTime);
    if (e.workflowTaskStartedEventAttributes) taskStarted = tsToMs(e.eventTime);
    if (e.workflowTaskFailedEventAttributes || e.workflowTaskTimedOutEventAttributes) stageDone = undefined;
    if (!e.workflowTaskCompletedEventAttributes || stageDone === undefined || taskStarted === undefined) continue;
    const taskMs = tsToMs(e.eventTime) - taskStarted;
    let localMs = 0;
    let next: string | undefined;
    for (let j = i + 1; j < events.length && !events[j]!.workflowTaskScheduledEventAttributes; j++) {
      const after = events[j]!;
      const end = after.markerRecordedEventAttributes?.markerName === 'core_local_activity' && localActivityEnd(after);
      // An end outside the task (a local activity begun in an earlier one) cannot split it: one past its completion
      // is skipped here, one before its start gives a negative span that the max leaves out.
      if (end && end - taskStarted <= taskMs) localMs = Math.max(localMs, end - taskStarted);
      const name = after.activityTaskScheduledEventAttributes?.activityType?.name;
      if (name && stageActivities.has(name)) next = String(after.eventId);
    }
    const nextStarted = next === undefined ? undefined : firstAttemptStart.get(next);
    if (nextStarted !== undefined) {
      hops.push({
        hopMs: nextStarted - stageDone,
        waitMs: taskStarted - stageDone,
        localMs,
        restMs: taskMs - localMs,
      });
    }
    // Only the first task after a stage's end counts: a later one is a hop through other steps.
    stageDone = undefined;
  }
  return hops;
}

type Quantiles = { p50: number; p90: number };

/** The hops' count and the p50 and p90 of each part. */
export function hopSummary(hops: readonly StageHop[]): { n: number } & Record<keyof StageHop, Quantiles> {
  const of = (part: keyof StageHop): Quantiles => {
    const sorted = hops.map((h) => h[part]).sort((a, b) => a - b);
    return { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9) };
  };
  return {
    n: hops.length,
    hopMs: of('hopMs'),
    waitMs: of('waitMs'),
    localMs: of('localMs'),
    restMs: of('restMs'),
  };
}

/**
 * A local activity's end as core records it in its marker's data (`complete_time`; the marker's own time is its
 * task's completion). Within a task these grow from one local activity to the next and stay within the task, in the
 * bench's histories. Unreadable data gives none.
 */
function localActivityEnd(marker: HistoryEvent): number | undefined {
  const data = marker.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
  if (!data) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as {
      complete_time?: { seconds?: number | string; nanos?: number };
    };
    const t = parsed.complete_time;
    return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : undefined;
  } catch {
    return undefined;
  }
}
