import { rolloutWorkflow } from '../../workflows';
import { disableSignal, nodeStateQuery, rerunUpdate } from '../../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import type { WriteNodeStateInput } from '../../activities/contract';
import { encodeNodeState } from '../../model';
import type { NodeProgress } from '../../workflows/messages';
import { FakeCluster } from './fake-cluster';
import {
  eventually,
  localActivities,
  recordHistory,
  rolloutSpec,
  sleep,
  startRollout,
  statusBecomes,
  useTemporal,
  withWorker,
} from './env';

// G13 no wedge, no leak: a drain, a reboot or a node-state write that fails for good ends as a recorded state (the
// package erroring with its reason, the permit returned) or a visible retry, never a node stuck holding its permit.

const t = useTemporal();
const NODE = 'node-a';
const spec = (name: string) =>
  rolloutSpec(name, {
    interruptionBudget: { count: 1 },
    packages: { drv: { version: '1.0.0', image: 'ghcr.io/example/drv', interrupt: { type: 'reboot' } } },
  });

async function run(cluster: FakeCluster, name: string, body: (handle: ReturnType<typeof rollout>) => Promise<void>) {
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId(name, name),
      args: [{ cluster: name, spec: spec(name) }],
    });
    await body(rollout(name));
  });
}
const rollout = (name: string) => t.env.client.workflow.getHandle(rolloutWorkflowId(name, name));
const node = (name: string) => t.env.client.workflow.getHandle(nodeWorkflowId(name, NODE));

test('G13 a drain timeout under policy fail ends erroring with its reason and returns the permit; a rerun goes on', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.drainTimesOut = true;
  await run(cluster, 'drainfail', async (handle) => {
    await statusBecomes(handle, 'erroring');
    const view = await node('drainfail').query(nodeStateQuery);
    expect(view.rollouts.drainfail!.packages['drv|1.0.0']).toMatchObject({
      state: 'erroring',
      lastError: expect.stringContaining('DrainTimeout: drain of node node-a timed out'),
    });
    await eventually(async () => expect((await node('drainfail').query(nodeStateQuery)).interrupt).toBeNull());
    // The policy `fail` leaves the node cordoned; the drain was tried once, not every 10 seconds.
    expect(cluster.cordoned.has(NODE)).toBe(true);
    await sleep(1500);
    expect(cluster.callsOf('drain')).toHaveLength(1);
    cluster.drainTimesOut = false;
    await node('drainfail').executeUpdate(rerunUpdate, { args: [{ rollout: 'drainfail', package: 'drv' }] });
    await statusBecomes(handle, 'complete', 60_000);
    await recordHistory(t.env, nodeWorkflowId('drainfail', NODE), 'node-drain-timeout-rerun');
  });
});

test('G13 a node that does not come back from its reboot ends erroring (RebootTimeout) and returns the permit', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.rebootHangs = true;
  await run(cluster, 'nohome', async (handle) => {
    await statusBecomes(handle, 'erroring');
    await eventually(async () => expect((await node('nohome').query(nodeStateQuery)).interrupt).toBeNull());
    const view = await node('nohome').query(nodeStateQuery);
    expect(view.rollouts.nohome!.packages['drv|1.0.0']).toMatchObject({
      stage: 'interrupt',
      state: 'erroring',
      lastError: expect.stringContaining('RebootTimeout: node node-a did not come back'),
    });
    await sleep(1500);
    // The wait ran inside the interrupt's activity, once: no wait again, no second interrupt before the rerun.
    expect(cluster.callsOf('waitForReboot')).toHaveLength(0);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(1);
    expect(cluster.callsOf('runInterrupt')[0]!.input).toMatchObject({ reboot: { previousBootId: expect.any(String) } });
    // Once the node reboots, a rerun of the interrupt completes the package.
    cluster.rebootHangs = false;
    await node('nohome').executeUpdate(rerunUpdate, {
      args: [{ rollout: 'nohome', package: 'drv', stage: 'interrupt' }],
    });
    await statusBecomes(handle, 'complete', 60_000);
    await recordHistory(t.env, nodeWorkflowId('nohome', NODE), 'node-reboot-timeout-rerun');
  });
  // The rerun's interrupt is a Job of its own: the failed one is never adopted for it (G11).
  const runIds = cluster.callsOf('runInterrupt').map((c) => (c.input as { runId?: string }).runId);
  expect(runIds).toHaveLength(2);
  expect(runIds[0]).toBeDefined();
  expect(runIds[1]).not.toBe(runIds[0]);
});

test('G13 a node-state write refused for good (another writer changed it) is retried, and the node goes on', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.script = () => ({ ms: 1500 });
  await run(cluster, 'foreign', async (handle) => {
    await eventually(() => expect(cluster.stagesOn(NODE)).toContain('drv@1.0.0:apply'));
    // Another writer replaces the annotation under Keelson's feet: the next test-then-replace write is refused.
    cluster.annotations.set(
      `${NODE}/foreign`,
      '{"drv|1.0.0":{"name":"drv","version":"1.0.0","image":"x","stage":"apply","state":"erroring"}}',
    );
    await statusBecomes(handle, 'complete', 90_000);
    expect(JSON.parse(cluster.annotations.get(`${NODE}/foreign`)!)['drv|1.0.0']).toMatchObject({
      stage: 'post-interrupt',
      state: 'complete',
    });
  });
}, 120_000);

// A write refused by another writer's change pauses, reads the Node and tries again over what it finds. A later write
// of the node's own (a stalled worker's attempt) that lands during the pause is not replaced: its order says later.
test('G1 a later write that lands while a refused write waits stays on the Node: the retry never replaces it', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.script = () => ({ ms: 1500 });
  const key = `${NODE}/stalled`;
  await run(cluster, 'stalled', async (handle) => {
    await eventually(() => expect(cluster.stagesOn(NODE)).toContain('drv@1.0.0:apply'));
    cluster.annotations.set(key, '{"drv|1.0.0":{"name":"drv","version":"1.0.0","image":"x","stage":"apply"}}');
    await eventually(() => expect(cluster.callsOf('foreignNodeStateWrite')).toHaveLength(1));
    const refused = cluster.callsOf('foreignNodeStateWrite')[0]!.input as WriteNodeStateInput;
    const [started, count] = refused.order!;
    // The stalled attempt lands during the refused write's 10 s pause.
    const later = '{"drv|1.0.0":{"name":"drv","version":"1.0.0","image":"x","stage":"interrupt"}}';
    cluster.annotations.set(key, later);
    cluster.writeOrders.set(key, [started, count + 100]);
    await statusBecomes(handle, 'complete', 90_000);
    const orders = cluster.writes.filter((w) => w.rollout === 'stalled').map((w) => w.order!);
    // The refused write never landed; the next one went above the stalled attempt's order, over its value.
    expect(orders.filter(([, n]) => n === count)).toEqual([]);
    expect(orders.filter(([, n]) => n > count)[0]).toEqual([started, count + 101]);
    expect(cluster.callsOf('readNode').some((c) => (c.input as { rollout: string }).rollout === 'stalled')).toBe(true);
    // The refused write's Jobs went with the write that carried its snapshot to the Node (G3).
    const jobs = refused.deleteJobs!.map((j) => j.jobName);
    expect(jobs).toHaveLength(1);
    const deleted = cluster
      .callsOf('deleteStageJob')
      .filter((c) => jobs.includes((c.input as { jobName: string }).jobName));
    expect(deleted).toHaveLength(1);
    expect(deleted[0]!.at).toBeGreaterThanOrEqual(cluster.writes.find((w) => w.order?.[1] === count + 101)!.at);
    expect(JSON.parse(cluster.annotations.get(key)!)['drv|1.0.0']).toMatchObject({
      stage: 'post-interrupt',
      state: 'complete',
    });
  });
}, 120_000);

// A write of a lost workflow task, run again by the task that replaces it, is judged stale against the lost task's later
// write on the Node (or a stalled attempt's): it writes, deletes and reports nothing. Its snapshot must still reach the
// Node and the rollout, and its Jobs be deleted after that, by the live timeline; a timer comes first, which a worker
// whose task was lost cannot get past.
test('G1 G3 G13 a stale write deletes no Job; after a timer its snapshot goes again above the Node, with its Jobs and report', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.script = () => ({ ms: 1500 });
  const key = `${NODE}/lost`;
  const writesOf = () => cluster.writes.filter((w) => w.rollout === 'lost');
  await run(cluster, 'lost', async (handle) => {
    await eventually(() => expect(writesOf().some((w) => w.state['drv|1.0.0']?.stage === 'post-interrupt')).toBe(true));
    // While the last stage runs, the lost timeline's write lands, above every write so far.
    const [started, count] = writesOf().at(-1)!.order!;
    const lost = '{"drv|1.0.0":{"name":"drv","version":"1.0.0","image":"x","stage":"post-interrupt"}}';
    cluster.annotations.set(key, lost);
    cluster.writeOrders.set(key, [started, count + 100]);
    // The stage's end is judged stale; the rollout hears of it all the same.
    await statusBecomes(handle, 'complete', 90_000);
    const stale = cluster.callsOf('staleNodeStateWrite')[0]!;
    const refused = stale.input as WriteNodeStateInput;
    expect(refused.status).toBe('complete');
    const jobs = refused.deleteJobs!.map((j) => j.jobName);
    expect(jobs).toHaveLength(1);
    expect(refused.report).toBeDefined();
    // The stale snapshot went again, first, above the Node's order, over the value found there.
    const again = writesOf().find((w) => w.order![1] > count)!;
    expect(again.order).toEqual([started, count + 101]);
    expect(encodeNodeState(again.state)).toBe(encodeNodeState(refused.state));
    expect(JSON.parse(cluster.annotations.get(key)!)['drv|1.0.0']).toMatchObject({ state: 'complete' });
    // Its Job was deleted once, by that write; its report went with it.
    const deleted = cluster
      .callsOf('deleteStageJob')
      .filter((c) => (c.input as { jobName: string }).jobName === jobs[0]);
    expect(deleted).toHaveLength(1);
    expect(deleted[0]!.at).toBeGreaterThanOrEqual(again.at);
    const reports = cluster.callsOf('report').map((c) => (c.input as { args: [NodeProgress] }).args[0]);
    expect(reports.at(-1)).toMatchObject({ status: 'complete' });
    // Between the stale write and the next one, the workflow started a timer and had it fire.
    const events = (await node('lost').fetchHistory()).events ?? [];
    const writes = localActivities(events).filter((a) => a.type === 'writeNodeStateOrdered');
    const staleAt = writes.findIndex((a) => (a.result as { newerOnNode?: unknown }).newerOnNode);
    const between = events.slice(writes[staleAt]!.index, writes[staleAt + 1]!.index);
    expect(between.some((e) => e.timerFiredEventAttributes)).toBe(true);
  });
}, 120_000);

test('G3 a stage past its timeout is recorded as DeadlineExceeded with its log tail, not as a watcher failure', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.enforceDeadlines = true;
  cluster.script = () => ({ ms: 60_000 });
  const hung = rolloutSpec('hung', {
    stageTimeout: '3s',
    packages: { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, hung);
    await statusBecomes(handle, 'erroring', 30_000);
    const view = await node('hung').query(nodeStateQuery);
    expect(view.rollouts.hung!.packages['tools|1.0.0']).toMatchObject({
      stage: 'apply',
      state: 'erroring',
      lastError: expect.stringMatching(/^DeadlineExceeded: stage failed in hung-tools/),
    });
  });
});

test('G13 a higher-priority rollout arriving mid-drain: both complete within the budget, no node left cordoned', async () => {
  const cluster = new FakeCluster(['node-a', 'node-b'], (n) => ({ name: n }));
  cluster.drainMs = 3000;
  const low = rolloutSpec('low', {
    priority: 20,
    interruptionBudget: { count: 1 },
    packages: { drv: { version: '1.0.0', image: 'ghcr.io/example/drv', interrupt: { type: 'reboot' } } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const start = (spec: typeof low) => startRollout(t.env, taskQueue, spec);
    const lowHandle = await start(low);
    await eventually(() => expect(cluster.callsOf('drain')).toHaveLength(1));
    // While the first node drains, a higher-priority rollout comes to it: the low rollout gives its permit up.
    const draining = (cluster.callsOf('drain')[0]!.input as { node: string }).node;
    const high = rolloutSpec('high', {
      priority: 10,
      nodeSelectors: { matchLabels: { name: draining } },
      packages: { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } },
    });
    await start(high);
    await statusBecomes(lowHandle, 'complete', 90_000);
  });
  // The budget of one disrupted (cordoned or draining) node held throughout, and nothing was left cordoned.
  expect(cluster.maxDisrupted).toBe(1);
  expect(cluster.cordoned.size).toBe(0);
}, 120_000);

test("G13 a cordon a failed drain left, and another rollout's cordon: each goes with its own rollout", async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.drainTimesOut = true;
  // The second rollout's reboot waits (G12) for its slow package while the node is prepared.
  cluster.script = (input) => ({ ms: input.package.name === 'slow' ? 8000 : 100 });
  const fw = rolloutSpec('second', {
    interruptionBudget: { count: 1 },
    packages: {
      fw: { version: '2.0.0', image: 'ghcr.io/example/fw', interrupt: { type: 'reboot' } },
      slow: { version: '1.0.0', image: 'ghcr.io/example/slow' },
    },
  });
  await run(cluster, 'first', async (first) => {
    await statusBecomes(first, 'erroring');
    expect(cluster.cordoned.has(NODE)).toBe(true);
    // Disabled, the first rollout no longer holds lower ones back (§5.5): the second cordons (the node is cordoned
    // already), drains, and waits for its slow package before it reboots.
    await first.signal(disableSignal, { actor: 'sre', reason: 'let the firmware rollout through' });
    cluster.drainTimesOut = false;
    const second = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue: (await first.describe()).taskQueue,
      workflowId: rolloutWorkflowId('first', 'second'),
      args: [{ cluster: 'first', spec: fw }],
    });
    await eventually(async () =>
      expect((await node('first').query(nodeStateQuery)).interrupt).toMatchObject({
        rollout: 'second',
        phase: 'prepared',
      }),
    );
    // The first rollout is deleted meanwhile: its cordon goes, the second's holds the node, and its interrupt stays.
    await first.cancel();
    await eventually(async () => expect((await node('first').query(nodeStateQuery)).rollouts.first).toBeUndefined());
    expect(cluster.cordoned.has(NODE)).toBe(true);
    expect((await node('first').query(nodeStateQuery)).interrupt).toMatchObject({ rollout: 'second' });
    expect((await node('first').query(nodeStateQuery)).cordonedBy).toBe('second');
    await statusBecomes(second, 'complete', 60_000);
    expect(cluster.cordoned.has(NODE)).toBe(false);
    // One drain each: the first's, which timed out, and the second's, never repeated.
    expect(cluster.callsOf('drain')).toHaveLength(2);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(1);
    await recordHistory(t.env, nodeWorkflowId('first', NODE), 'node-cordon-per-rollout');
  });
});
