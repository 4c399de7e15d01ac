import { msNumberToTs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { stageHops } from '../../bench/lib/stage-hops';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const STAGES = new Set(['runStage', 'runInterrupt']);

let nextId = 1;
/** Event IDs are Longs in a fetched history; the function reads them only as strings, as a number gives them too. */
const id = (n: number) => n as unknown as HistoryEvent['eventId'];
const event = (ms: number, attributes: HistoryEvent): HistoryEvent => ({
  eventId: id(nextId++),
  eventTime: msNumberToTs(ms),
  ...attributes,
});
const taskScheduled = (ms: number) => event(ms, { workflowTaskScheduledEventAttributes: {} });
const taskStarted = (ms: number) => event(ms, { workflowTaskStartedEventAttributes: {} });
const taskCompleted = (ms: number) => event(ms, { workflowTaskCompletedEventAttributes: {} });
const scheduled = (ms: number, name: string) =>
  event(ms, { activityTaskScheduledEventAttributes: { activityType: { name } } });
const started = (ms: number, of: HistoryEvent) =>
  event(ms, { activityTaskStartedEventAttributes: { scheduledEventId: of.eventId } });
const completed = (ms: number, of: HistoryEvent) =>
  event(ms, { activityTaskCompletedEventAttributes: { scheduledEventId: of.eventId } });
/** A workflow task: scheduled when the event that brought it came, then started and completed. */
const task = (scheduledMs: number, startedMs: number, completedMs: number) => [
  taskScheduled(scheduledMs),
  taskStarted(startedMs),
  taskCompleted(completedMs),
];
/** An activity's run: started, then completed. */
const ran = (of: HistoryEvent, startedMs: number, completedMs: number) => [
  started(startedMs, of),
  completed(completedMs, of),
];
/** A local activity's marker, dated at its task's completion, with the end core recorded in its data. */
const localActivity = (ms: number, endMs: number) =>
  event(ms, {
    markerRecordedEventAttributes: {
      markerName: 'core_local_activity',
      details: {
        data: {
          payloads: [
            {
              data: Buffer.from(
                JSON.stringify({ complete_time: { seconds: Math.floor(endMs / 1000), nanos: (endMs % 1000) * 1e6 } }),
              ),
            },
          ],
        },
      },
    },
  });

describe('stageHops (bench: a stage end to the next stage start, split)', () => {
  it('splits a direct hop at the task start, the write end and the task completion', () => {
    const first = scheduled(1000, 'runStage');
    const second = scheduled(3200, 'runStage');
    // The second stage's started event is written at its end, after other events: it is found by its scheduled ID.
    const events = [
      first,
      ...ran(first, 1001, 3000),
      ...task(3000, 3020, 3200),
      localActivity(3200, 3120),
      second,
      ...ran(second, 3205, 5300),
    ];
    expect(stageHops(events, STAGES)).toEqual([
      { hopMs: 205, waitMs: 20, toLocalDoneMs: 100, localDoneToCompletedMs: 80 },
    ]);
  });

  it('times the split from the last local activity of the task, and takes a hop without one', () => {
    const a = scheduled(0, 'runStage');
    const b = scheduled(2100, 'runInterrupt');
    const c = scheduled(9050, 'runStage');
    const events = [
      a,
      ...ran(a, 0, 2000),
      ...task(2000, 2010, 2100),
      localActivity(2100, 2040),
      localActivity(2100, 2070),
      b,
      ...ran(b, 2100, 9000),
      ...task(9000, 9030, 9050),
      c,
      started(9060, c),
    ];
    expect(stageHops(events, STAGES)).toEqual([
      { hopMs: 100, waitMs: 10, toLocalDoneMs: 60, localDoneToCompletedMs: 30 },
      { hopMs: 60, waitMs: 30 },
    ]);
  });

  it('leaves out hops through other steps, other activities, and a next stage that never started', () => {
    const a = scheduled(0, 'runStage');
    const drain = scheduled(2100, 'drainNode');
    const b = scheduled(4000, 'runInterrupt');
    const c = scheduled(9100, 'runStage');
    const events = [
      a,
      ...ran(a, 0, 2000),
      ...task(2000, 2010, 2100),
      drain,
      ...ran(drain, 2100, 3900),
      ...task(3900, 3910, 4000),
      b,
      ...ran(b, 4000, 9000),
      ...task(9000, 9010, 9100),
      c,
    ];
    expect(stageHops(events, STAGES)).toEqual([]);
  });
});
