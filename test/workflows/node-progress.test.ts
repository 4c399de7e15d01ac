import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { nodeProgressSignal, statusQuery, type NodeProgress } from '../../workflows/messages';
import { packageProgress, reportOf } from '../../model';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import {
  eventually,
  localActivities,
  recordHistory,
  rolloutSpec,
  startRollout,
  statusBecomes,
  useTemporal,
  withWorker,
} from './env';

// The node's progress reaches its rollout from the node-state write's own activity, a local activity (patches
// local-node-calls, ordered-local-writes): the node's history holds a marker per write and no signal command, and the
// rollout's status shows every package as before. Only writes that change what the rollout judges by report (a quick stage's change
// rides on the next report). A late, older copy of a report (the write activity run again) is dropped.

const t = useTemporal();
const EventType = temporal.api.enums.v1.EventType;

const spec = (name: string) =>
  rolloutSpec(name, {
    interruptionBudget: { count: 1 },
    packages: {
      base: { version: '1.0.0', image: 'ghcr.io/example/base' },
      driver: {
        version: '2.0.0',
        image: 'ghcr.io/example/driver',
        dependsOn: { base: '1.0.0' },
        interrupt: { type: 'reboot' },
      },
    },
  });

test('node-state writes report to the rollout from their own activity when its judgement changes; the status shows each package', async () => {
  const nodes = ['node-1', 'node-2'];
  const cluster = new FakeCluster(nodes);
  cluster.workloadPods = false;
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec('progress'));
    await statusBecomes(handle, 'complete', 60_000);
    const status = await handle.query(statusQuery);
    for (const node of nodes) {
      expect(status.nodes[node]!.packages).toEqual({
        base: { version: '1.0.0', stage: 'config', state: 'complete', restarts: 0 },
        driver: { version: '2.0.0', stage: 'post-interrupt', state: 'complete', restarts: 0 },
      });
    }
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    await handle.cancel();
  });

  // Writes, cordon and uncordon overlap in time here: the node's local activities still ran one at a time.
  expect(cluster.breaches).toEqual([]);
  const history = await t.env.client.workflow.getHandle(nodeWorkflowId('progress', 'node-1')).fetchHistory();
  const events = history.events ?? [];
  const writes = cluster.writes.filter((w) => w.node === 'node-1');
  const reports = cluster.callsOf('report').filter((c) => JSON.stringify(c.input).includes('"node-1"'));
  const sent = reports.map((r) => (r.input as { args: [NodeProgress] }).args[0]);
  // Each report carries the node's count of its reports, in order.
  expect(sent.map((r) => r.order![1])).toEqual(sent.map((_, i) => i + 1));
  // The writes that change what the rollout judges by (status, generation, a package erroring or restarted) each
  // reported, in order; the others (a stage's change within a package, seconds apart) did not.
  const judged = (p: { generation: number; status: NodeProgress['status']; state: NodeProgress['state'] }) =>
    reportOf({ generation: p.generation, status: p.status, state: packageProgress(p.state) }, 0).judged;
  const changes = (xs: string[]) => xs.filter((x, i) => i === 0 || x !== xs[i - 1]);
  const written = writes.map(judged);
  expect(changes(sent.map(judged))).toEqual(changes(written));
  expect(sent.length).toBeLessThan(writes.length);
  // The last write's progress is the last report's: the rollout holds what the Node says.
  const last = writes[writes.length - 1]!;
  expect(sent[sent.length - 1]).toMatchObject({ status: last.status, state: packageProgress(last.state) });
  console.log(`node-1: ${writes.length} node-state writes, ${sent.length} progress reports`);
  const signalled = events.filter(
    (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === nodeProgressSignal.name,
  );
  expect(signalled).toEqual([]);
  // The writes, reads, cordon and uncordon are local: markers, no activity tasks.
  const scheduled = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
  const local = ['writeNodeState', 'writeNodeStateOrdered', 'readNode', 'cordon', 'uncordon'];
  expect(scheduled.filter((n) => local.includes(n))).toEqual([]);
  // Nothing on the nodes to evict: the cordon's own drain check spares the drain activity; the reboot's wait is in
  // the interrupt's activity.
  expect(cluster.callsOf('cordon').map((c) => c.input)).toEqual(
    nodes.map(() => expect.objectContaining({ drainRules: expect.any(Object) })),
  );
  expect(scheduled).not.toContain('drain');
  expect(scheduled).not.toContain('waitForReboot');
  expect(scheduled).toContain('runInterrupt');
  const markers = events.filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED);
  expect(markers.length).toBeGreaterThanOrEqual(writes.length + 3);
  // Ordered writes have an activity type of their own: a build from before orders fails to replay this history
  // instead of taking its writes for its own unordered ones.
  const types = localActivities(events).map((a) => a.type);
  expect(types.filter((n) => n === 'writeNodeStateOrdered')).toHaveLength(writes.length);
  expect(types).not.toContain('writeNodeState');
  // G1: each write's order is the workflow's start time (in its history, the same on replay) and its count of writes.
  const started = tsToMs(events[0]!.eventTime);
  expect(writes.map((w) => w.order)).toEqual(writes.map((_, i) => [started, i + 1]));
  const nodeStages = cluster.stagesOn('node-1').length + cluster.callsOf('runInterrupt').length / nodes.length;
  console.log(`node-1: ${events.length} history events, ${(events.length / nodeStages).toFixed(1)} per node-stage`);
  await recordHistory(t.env, nodeWorkflowId('progress', 'node-1'), 'node-local-calls');
});

test("G15 a node's local activities run one at a time: its writes, cordon, reads and uncordon never overlap", async () => {
  const nodes = ['node-1', 'node-2', 'node-3'];
  const cluster = new FakeCluster(nodes);
  // Quick stages: a stage's end, its write and the cordon or uncordon that follows come close together.
  cluster.script = () => ({ ms: 20 });
  const overlapping = rolloutSpec('turns', {
    interruptionBudget: { count: 3 },
    packages: {
      base: { version: '1.0.0', image: 'ghcr.io/example/base' },
      driver: { version: '2.0.0', image: 'ghcr.io/example/driver', interrupt: { type: 'reboot' } },
    },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, overlapping);
    await statusBecomes(handle, 'complete', 60_000);
    await handle.cancel();
  });
  for (const node of nodes) {
    const { events } = await t.env.client.workflow.getHandle(nodeWorkflowId('turns', node)).fetchHistory();
    const types = new Set(localActivities(events ?? []).map((a) => a.type));
    expect([...types]).toEqual(expect.arrayContaining(['cordon', 'readNode', 'uncordon', 'writeNodeStateOrdered']));
  }
  expect(cluster.breaches).toEqual([]);
});

test('a node at rest sends the report a stage change held back: one package erroring, the other complete, the status shows both', async () => {
  const cluster = new FakeCluster(['node-1']);
  // `broken` fails at once; `slow` completes its config seconds later, a stage change alone, with nothing left to run.
  cluster.script = (i) =>
    i.package.name === 'broken' ? { ms: 50, fail: true } : { ms: i.stage === 'config' ? 3000 : 50 };
  const twoPackages = rolloutSpec('rest', {
    interruptionBudget: { count: 1 },
    packages: {
      broken: { version: '1.0.0', image: 'ghcr.io/example/broken' },
      slow: { version: '1.0.0', image: 'ghcr.io/example/slow' },
    },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, twoPackages);
    await eventually(async () => {
      const view = (await handle.query(statusQuery)).nodes['node-1']!;
      expect(view.packages).toMatchObject({
        broken: { state: 'erroring' },
        slow: { stage: 'config', state: 'complete' },
      });
    }, 30_000);
    await handle.cancel();
  });
  const { events } = await t.env.client.workflow.getHandle(nodeWorkflowId('rest', 'node-1')).fetchHistory();
  const atRest = events!.filter(
    (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === nodeProgressSignal.name,
  );
  expect(atRest.length).toBeGreaterThanOrEqual(1);
  await recordHistory(t.env, nodeWorkflowId('rest', 'node-1'), 'node-report-at-rest');
});

test('G1 a late copy of an older progress report never takes a node back from complete (real Temporal)', async () => {
  const cluster = new FakeCluster(['node-1']);
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec('late'));
    await statusBecomes(handle, 'complete', 60_000);
    const late = (order: [number, number]) =>
      handle.signal(nodeProgressSignal, {
        node: 'node-1',
        generation: 1,
        status: 'in_progress',
        state: { 'base|1.0.0': { name: 'base', version: '1.0.0', stage: 'apply', state: 'in_progress' } },
        order,
      });
    // Older than any write of this run: dropped, once a workflow task has taken it.
    await late([1, 1]);
    await eventually(async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const last = (match: (e: (typeof events)[number]) => boolean) => events.map(match).lastIndexOf(true);
      const signal = last((e) => e.workflowExecutionSignaledEventAttributes?.signalName === nodeProgressSignal.name);
      const taken = last((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
      expect(taken).toBeGreaterThan(signal);
    });
    const settled = await handle.query(statusQuery);
    expect(settled.status).toBe('complete');
    expect(settled.nodes['node-1']!.packages.base).toEqual({
      version: '1.0.0',
      stage: 'config',
      state: 'complete',
      restarts: 0,
    });
    // The same report with a newer order is taken: the check above is not vacuous.
    await late([Date.now() + 3_600_000, 1]);
    await eventually(async () => expect((await handle.query(statusQuery)).nodes['node-1']!.status).toBe('in_progress'));
    await handle.cancel();
  });
});
