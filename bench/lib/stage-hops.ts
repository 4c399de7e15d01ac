import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One hop from a stage's end to the next stage's start, split at the points a history records. */
export interface StageHop {
  /** The stage activity's completion to the next one's start. */
  hopMs: number;
  /** The completion to the start of the workflow task it brought: the task's wait for a worker. */
  waitMs: number;
  /** The task's start to its last local activity's end (the node-state write), when it ran one. */
  toLocalDoneMs?: number;
  /** That local activity's end to the task's completion, which sends the next stage's command. */
  localDoneToCompletedMs?: number;
}

/**
 * The direct hops between stage activities (`stageActivities`, by type) in one workflow's history: a stage's
 * completion whose very next workflow task scheduled the next stage. Hops through other steps (a cordon and drain
 * before an interrupt) and hops whose next stage never started are left out. A local activity's end comes from its
 * marker's data (the marker's own time is its task's completion).
 */
export function stageHops(events: readonly HistoryEvent[], stageActivities: ReadonlySet<string>): StageHop[] {
  const names = new Map<string, string>();
  const startedAt = new Map<string, number>();
  for (const e of events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) names.set(String(e.eventId), name);
    const started = e.activityTaskStartedEventAttributes;
    if (started) startedAt.set(String(started.scheduledEventId), tsToMs(e.eventTime));
  }
  const hops: StageHop[] = [];
  let stageDone: number | undefined;
  let taskStarted: number | undefined;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const done = e.activityTaskCompletedEventAttributes;
    if (done && stageActivities.has(names.get(String(done.scheduledEventId)) ?? '')) stageDone = tsToMs(e.eventTime);
    if (e.workflowTaskStartedEventAttributes) taskStarted = tsToMs(e.eventTime);
    if (!e.workflowTaskCompletedEventAttributes || stageDone === undefined || taskStarted === undefined) continue;
    const completedAt = tsToMs(e.eventTime);
    let localDone: number | undefined;
    let next: string | undefined;
    for (let j = i + 1; j < events.length && !events[j]!.workflowTaskScheduledEventAttributes; j++) {
      const after = events[j]!;
      if (after.markerRecordedEventAttributes?.markerName === 'core_local_activity') {
        const end = localActivityEnd(after);
        if (end !== undefined) localDone = Math.max(localDone ?? end, end);
      }
      const name = after.activityTaskScheduledEventAttributes?.activityType?.name;
      if (name && stageActivities.has(name)) next = String(after.eventId);
    }
    const nextStarted = next === undefined ? undefined : startedAt.get(next);
    if (nextStarted !== undefined) {
      hops.push({
        hopMs: nextStarted - stageDone,
        waitMs: taskStarted - stageDone,
        ...(localDone !== undefined && {
          toLocalDoneMs: localDone - taskStarted,
          localDoneToCompletedMs: completedAt - localDone,
        }),
      });
    }
    // Only the first task after a stage's end counts: a later one is a hop through other steps.
    stageDone = undefined;
  }
  return hops;
}

/** A local activity's end, from the `complete_time` core records in its marker's data. */
function localActivityEnd(marker: HistoryEvent): number | undefined {
  const data = marker.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
  if (!data) return undefined;
  const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as {
    complete_time?: { seconds?: number | string; nanos?: number };
  };
  const t = parsed.complete_time;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : undefined;
}
