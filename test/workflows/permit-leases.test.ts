import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { rolloutWorkflow } from '../../workflows';
import { nodeStateQuery, nodeWorkflowId, rolloutWorkflowId, statusQuery } from '../../workflows/messages';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, sleep, useTemporal, withWorker } from './env';

// G13 permits are leases: the rollout reconciles its books with what the node workflows hold at every relist, so a
// node workflow terminated while it holds the permit, or a request lost when the rollout was reset, never leaks the
// budget or leaves a node waiting for ever.

const t = useTemporal();
const spec = (name: string) =>
  rolloutSpec(name, {
    interruptionBudget: { count: 1 },
    packages: { drv: { version: '1.0.0', image: 'ghcr.io/example/drv', interrupt: { type: 'reboot' } } },
  });

async function run(cluster: FakeCluster, name: string, body: () => Promise<void>): Promise<void> {
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId(name, name),
      args: [{ cluster: name, spec: spec(name), options: { relistInterval: '1 second' } }],
    });
    await body();
  });
}
const rollout = (name: string) => t.env.client.workflow.getHandle(rolloutWorkflowId(name, name));
const node = (name: string, n: string) => t.env.client.workflow.getHandle(nodeWorkflowId(name, n));
const interrupted = (cluster: FakeCluster) =>
  cluster.callsOf('runInterrupt').map((c) => (c.input as { node: string }).node);

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const requestEvent = (e: HistoryEvent) => e.workflowExecutionSignaledEventAttributes?.signalName === 'requestInterrupt';
const grantEvent = (e: HistoryEvent) =>
  e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'grantInterrupt';

/** Resets the rollout to the last workflow task completed before `events[at]`, dropping every signal after it. */
async function resetBefore(name: string, events: HistoryEvent[], at: number, reason: string): Promise<void> {
  const task = events
    .slice(0, at)
    .filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
    .pop()!;
  const handle = rollout(name);
  await t.env.client.workflowService.resetWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId: handle.workflowId, runId: (await handle.describe()).runId },
    reason,
    workflowTaskFinishEventId: task.eventId,
    requestId: randomUUID(),
    resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
  });
}

test('G13 a permit held by a node workflow that is terminated goes back to the budget; the node is started again', async () => {
  const cluster = new FakeCluster(['node-a', 'node-b']);
  cluster.interruptMs = 20_000;
  await run(cluster, 'gone', async () => {
    let holder = '';
    await eventually(async () => {
      const permits = (await rollout('gone').query(statusQuery)).permits;
      expect(permits).toHaveLength(1);
      holder = permits[0]!;
      expect(interrupted(cluster)).toEqual([holder]);
    });
    await node('gone', holder).terminate('by hand, while it holds the permit');
    cluster.interruptMs = 0;
    // The next relist finds the holder's workflow gone: its permit goes back, and its desire is sent again, so a new
    // node workflow takes the node up from its recorded state, asks for the permit and reboots; then the next batch.
    await eventually(async () => expect((await rollout('gone').query(statusQuery)).status).toBe('complete'), 60_000);
    const other = holder === 'node-a' ? 'node-b' : 'node-a';
    expect(interrupted(cluster)).toEqual([holder, holder, other]);
    expect(cluster.maxDisrupted).toBe(1);
    expect(cluster.breaches).toEqual([]);
    await recordHistory(t.env, rolloutWorkflowId('gone', 'gone'), 'rollout-permit-leases');
  });
});

test('G13 a permit request the rollout lost (reset to before it) is queued again at the next relist', async () => {
  const cluster = new FakeCluster(['node-a']);
  // A slow listing keeps the rollout busy, so a request waits in history for the pass that grants it.
  cluster.listNodesMs = 4000;
  await run(cluster, 'lost', async () => {
    let events: HistoryEvent[] = [];
    await eventually(async () => {
      events = (await rollout('lost').fetchHistory()).events ?? [];
      expect(events.some(requestEvent)).toBe(true);
    });
    expect(events.some(grantEvent)).toBe(false);
    await resetBefore('lost', events, events.findIndex(requestEvent), 'an operator resets the rollout');
    await eventually(async () => expect((await rollout('lost').query(statusQuery)).status).toBe('complete'), 60_000);
    expect(interrupted(cluster)).toEqual(['node-a']);
    const after = (await rollout('lost').fetchHistory()).events ?? [];
    expect(after.filter(requestEvent)).toHaveLength(0);
    expect(after.filter(grantEvent)).toHaveLength(1);
  });
});

test('G13 a rollout reset to after a request grants it again; the node keeps one permit and the books agree', async () => {
  const cluster = new FakeCluster(['node-a']);
  cluster.interruptMs = 10_000;
  await run(cluster, 'regrant', async () => {
    let events: HistoryEvent[] = [];
    await eventually(async () => {
      events = (await rollout('regrant').fetchHistory()).events ?? [];
      expect(events.some(grantEvent)).toBe(true);
      expect(interrupted(cluster)).toEqual(['node-a']);
    });
    await resetBefore('regrant', events, events.findIndex(grantEvent), 'an operator resets the rollout');
    // The request is before the reset point: the rollout grants the same permit again. The node, still rebooting,
    // keeps it, so the rollout's books still count node-a while it is down.
    const grantsTo = async (n: string) =>
      ((await node('regrant', n).fetchHistory()).events ?? []).filter(
        (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'grantInterrupt',
      ).length;
    await eventually(async () => expect(await grantsTo('node-a')).toBe(2));
    await sleep(1500);
    expect((await node('regrant', 'node-a').query(nodeStateQuery)).interrupt).toEqual({
      rollout: 'regrant',
      phase: 'prepared',
      permit: 'node-a#1',
    });
    expect((await rollout('regrant').query(statusQuery)).permits).toEqual(['node-a']);
    await eventually(async () => expect((await rollout('regrant').query(statusQuery)).status).toBe('complete'), 60_000);
    expect(interrupted(cluster)).toEqual(['node-a']);
    await recordHistory(t.env, nodeWorkflowId('regrant', 'node-a'), 'node-regrant-keeps-one-permit');
  });
});
