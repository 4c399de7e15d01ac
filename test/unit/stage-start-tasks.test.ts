import { msNumberToTs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { stageStartTasks } from '../../bench/lib/stage-start-tasks';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const at = (ms: number) => ({ eventTime: msNumberToTs(ms) });
const scheduled = (ms: number): HistoryEvent => ({ ...at(ms), workflowTaskScheduledEventAttributes: {} });
const completed = (ms: number): HistoryEvent => ({ ...at(ms), workflowTaskCompletedEventAttributes: {} });
const activity = (ms: number, name: string): HistoryEvent => ({
  ...at(ms),
  activityTaskScheduledEventAttributes: { activityType: { name } },
});
const marker = (ms: number): HistoryEvent => ({ ...at(ms), markerRecordedEventAttributes: {} });

describe('stageStartTasks (bench: the workflow task before each stage)', () => {
  it('times each task that scheduled a stage or an interrupt, the first apart, from scheduled to completed', () => {
    const events = [
      { ...at(0), workflowExecutionStartedEventAttributes: {} },
      scheduled(0),
      completed(1100),
      marker(1100),
      activity(1100, 'runStage'),
      marker(1100),
      scheduled(3500),
      completed(3660),
      activity(3660, 'runInterrupt'),
      scheduled(9000),
      completed(9050),
      marker(9050),
      scheduled(9400),
      completed(9700),
      activity(9700, 'runStage'),
    ];
    expect(stageStartTasks(events)).toEqual({ firstMs: 1100, laterMs: [160, 300] });
  });

  it('times a task that timed out and ran again from its first scheduling', () => {
    const events = [
      scheduled(0),
      { ...at(10_000), workflowTaskTimedOutEventAttributes: {} },
      scheduled(10_000),
      completed(10_400),
      activity(10_400, 'runStage'),
    ];
    expect(stageStartTasks(events)).toEqual({ firstMs: 10_400, laterMs: [] });
  });

  it("takes no first from a continued run: its first task is not the node's admission", () => {
    const events = [
      { ...at(0), workflowExecutionStartedEventAttributes: { continuedExecutionRunId: 'run-1' } },
      scheduled(0),
      completed(200),
      activity(200, 'runStage'),
    ];
    expect(stageStartTasks(events)).toEqual({ laterMs: [200] });
  });

  it('has no first when the first task started no stage, and counts no other activity', () => {
    const events = [scheduled(0), completed(40), activity(40, 'uncordon'), scheduled(500), completed(700)];
    expect(stageStartTasks(events)).toEqual({ laterMs: [] });
  });
});
