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
const started = (ms: number, of: HistoryEvent, attempt = 1) =>
  event(ms, { activityTaskStartedEventAttributes: { scheduledEventId: of.eventId, attempt } });
const completed = (ms: number, of: HistoryEvent) =>
  event(ms, { activityTaskCompletedEventAttributes: { scheduledEventId: of.eventId } });
/** A workflow task: scheduled when the event that brought it came, then started and completed. */
const task = (scheduledMs: number, startedMs: number, completedMs: number) => [
  taskScheduled(scheduledMs),
  taskStarted(startedMs),
  taskCompleted(completedMs),
];
/** An activity's run: its started event (written when it ends, with its last attempt), then its completion. */
const ran = (of: HistoryEvent, startedMs: number, completedMs: number, attempt = 1) => [
  started(startedMs, of, attempt),
  completed(completedMs, of),
];
/** A local activity's marker, dated at its task's completion, with its end as core records it in its data. */
const localActivity = (ms: number, completeTimeMs: number) => marker(ms, completeTimeData(completeTimeMs));
const completeTimeData = (ms: number) =>
  Buffer.from(JSON.stringify({ complete_time: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } }));
const marker = (ms: number, data: Uint8Array) =>
  event(ms, {
    markerRecordedEventAttributes: { markerName: 'core_local_activity', details: { data: { payloads: [{ data }] } } },
  });
const signaled = (ms: number) => event(ms, { workflowExecutionSignaledEventAttributes: {} });

describe('stageHops (bench: a stage end to the next stage start, split)', () => {
  it("splits a direct hop into the task's wait, its start to its local activity's end and the rest", () => {
    const first = scheduled(1000, 'runStage');
    const second = scheduled(3200, 'runStage');
    const events = [
      first,
      ...ran(first, 1001, 3000),
      ...task(3000, 3020, 3200),
      localActivity(3200, 3120),
      second,
      // The stage's started event is written when it ends, after others: it is found by its scheduled event's ID.
      signaled(4000),
      ...ran(second, 3205, 5300),
    ];
    expect(stageHops(events, STAGES)).toEqual([{ hopMs: 205, waitMs: 20, localMs: 100, restMs: 80 }]);
  });

  it("splits at the task's last local activity, and takes a hop without one", () => {
    const a = scheduled(0, 'runStage');
    const b = scheduled(2100, 'runInterrupt');
    const c = scheduled(9050, 'runStage');
    const events = [
      a,
      ...ran(a, 0, 2000),
      ...task(2000, 2010, 2100),
      localActivity(2100, 2030),
      localActivity(2100, 2040),
      b,
      ...ran(b, 2100, 9000),
      ...task(9000, 9030, 9050),
      c,
      started(9060, c),
    ];
    expect(stageHops(events, STAGES)).toEqual([
      { hopMs: 100, waitMs: 10, localMs: 30, restMs: 60 },
      { hopMs: 60, waitMs: 30, localMs: 0, restMs: 20 },
    ]);
  });

  it('does not split at a local activity recorded outside the task or with unreadable data', () => {
    const a = scheduled(0, 'runStage');
    const b = scheduled(2100, 'runStage');
    const events = [
      a,
      ...ran(a, 0, 2000),
      ...task(2000, 2010, 2100),
      localActivity(2100, 1500),
      localActivity(2100, 2150),
      marker(2100, Buffer.from('not json')),
      b,
      ...ran(b, 2100, 4200),
    ];
    expect(stageHops(events, STAGES)).toEqual([{ hopMs: 100, waitMs: 10, localMs: 0, restMs: 90 }]);
  });

  // A stage that ends at 2000, what follows it, and the next stage; each case below is one reason to leave it out.
  function afterStage(between: (a: HistoryEvent) => HistoryEvent[]): HistoryEvent[] {
    const a = scheduled(0, 'runStage');
    return [a, ...ran(a, 0, 2000), ...between(a)];
  }

  it('leaves out a hop through another step (a drain before the interrupt)', () => {
    const drain = scheduled(2100, 'drainNode');
    const b = scheduled(4000, 'runInterrupt');
    const events = afterStage(() => [
      ...task(2000, 2010, 2100),
      drain,
      ...ran(drain, 2100, 3900),
      ...task(3900, 3910, 4000),
      b,
      ...ran(b, 4000, 9000),
    ]);
    expect(stageHops(events, STAGES)).toEqual([]);
  });

  it('leaves out a hop across a failed or a timed-out workflow task', () => {
    for (const lost of [{ workflowTaskFailedEventAttributes: {} }, { workflowTaskTimedOutEventAttributes: {} }]) {
      const b = scheduled(12_100, 'runStage');
      const events = afterStage(() => [
        taskScheduled(2000),
        taskStarted(2010),
        event(12_010, lost),
        ...task(12_010, 12_020, 12_100),
        b,
        ...ran(b, 12_100, 14_000),
      ]);
      expect(stageHops(events, STAGES)).toEqual([]);
    }
  });

  it('leaves out a hop into a stage whose first attempt failed, and one into a stage that never started', () => {
    const retried = scheduled(2100, 'runStage');
    expect(
      stageHops(
        afterStage(() => [...task(2000, 2010, 2100), retried, ...ran(retried, 5000, 7000, 2)]),
        STAGES,
      ),
    ).toEqual([]);
    const never = scheduled(2100, 'runStage');
    expect(
      stageHops(
        afterStage(() => [...task(2000, 2010, 2100), never]),
        STAGES,
      ),
    ).toEqual([]);
  });
});
