import type { temporal } from '@temporalio/proto';
import { encodeNodeState } from '../../model';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { statusQuery, updateSpecUpdate } from '../../workflows/messages';
import { FakeCluster } from './fake-cluster';
import {
  eventually,
  fixedBatchPolicy,
  recordHistory,
  rolloutSpec,
  startRollout,
  statusBecomes,
  useTemporal,
  withWorker,
} from './env';

// Interrupt permits granted with the admission (workflows/rollout/interrupt-permits.ts, requestWithAdmission): under
// a budget every node in flight fits, the permit rides on the node's desire, and the node neither asks for it nor
// waits for a grant; the budget holds all the same (G16).

const t = useTemporal();
const drv = { version: '1.0.0', image: 'ghcr.io/example/drv', interrupt: { type: 'reboot' } };

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const signalled = (events: HistoryEvent[], signal: string) =>
  events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === signal).length;
const sent = (events: HistoryEvent[], signal: string) =>
  events.filter((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === signal).length;
const history = async (workflowId: string) =>
  (await t.env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
const cordonedNodes = (cluster: FakeCluster) =>
  cluster.callsOf('cordon').map((c) => (c.input as { node: string }).node);

test('G16 under a legacy budget the permit rides on the admission: no request, no grant signal, the budget holds', async () => {
  const nodes = ['node-1', 'node-2', 'node-3', 'node-4', 'node-5'];
  const cluster = new FakeCluster(nodes);
  cluster.script = () => ({ ms: 200 });
  const spec = rolloutSpec('ride', { interruptionBudget: { count: 2 }, packages: { drv } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(handle, 'complete', 90_000);
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    const rollout = await history(rolloutWorkflowId('ride', 'ride'));
    expect(signalled(rollout, 'requestInterrupt')).toBe(0);
    expect(sent(rollout, 'grantInterrupt')).toBe(0);
    expect(signalled(rollout, 'releaseInterrupt')).toBe(5);
    for (const node of nodes) {
      const events = await history(nodeWorkflowId('ride', node));
      expect(sent(events, 'requestInterrupt')).toBe(0);
      expect(signalled(events, 'grantInterrupt')).toBe(0);
      // The permit goes back from the uncordon's own activity: the node sends no signal for it.
      expect(sent(events, 'releaseInterrupt')).toBe(0);
    }
    const releases = cluster.callsOf('uncordon').map((c) => (c.input as { release?: unknown }).release);
    expect(releases).toHaveLength(5);
    for (const release of releases) expect(release).toMatchObject({ signal: 'releaseInterrupt' });
    expect(cluster.callsOf('runInterrupt')).toHaveLength(5);
    expect(cluster.maxCordoned).toBe(2);
    expect(cluster.cordoned.size).toBe(0);
    await recordHistory(t.env, rolloutWorkflowId('ride', 'ride'), 'rollout-permit-with-admission');
    await recordHistory(t.env, nodeWorkflowId('ride', 'node-1'), 'node-permit-with-admission');
  });
});

test('a node admitted with a permit it has no use for hands it back, and the next node is granted it', async () => {
  const cluster = new FakeCluster(['node-a', 'node-b']);
  cluster.script = () => ({ ms: 200 });
  // node-a has drv already: its permit comes back unused, never cordoning it.
  const done = { name: 'drv', version: '1.0.0', image: drv.image, stage: 'post-interrupt', state: 'complete' } as const;
  cluster.annotations.set('node-a/spare', encodeNodeState({ 'drv|1.0.0': done }));
  const spec = rolloutSpec('spare', { interruptionBudget: { count: 1 }, packages: { drv } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(handle, 'complete', 60_000);
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    const nodeA = await history(nodeWorkflowId('spare', 'node-a'));
    expect(sent(nodeA, 'requestInterrupt')).toBe(0);
    expect(sent(nodeA, 'releaseInterrupt')).toBe(1);
    expect(cordonedNodes(cluster)).toEqual(['node-b']);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(1);
    expect(cluster.maxCordoned).toBe(1);
  });
});

test('a batch larger than its ceiling asks for its permits, and the ceiling decides who waits', async () => {
  const cluster = new FakeCluster(['node-a', 'node-b', 'node-c']);
  cluster.script = () => ({ ms: 200 });
  const policy = fixedBatchPolicy('wide', { count: 1, initialBatch: 3 });
  const spec = rolloutSpec('wide', { deploymentPolicy: 'wide', packages: { drv } }, policy);
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(handle, 'complete', 60_000);
    const rollout = await history(rolloutWorkflowId('wide', 'wide'));
    expect(signalled(rollout, 'requestInterrupt')).toBe(3);
    expect(sent(rollout, 'grantInterrupt')).toBe(3);
    expect(cluster.maxCordoned).toBe(1);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(3);
  });
});

test('G16 an interrupt never runs on a node that lost its cordon: the permit goes back, and the node asks, cordons and drains again', async () => {
  const nodes = ['node-1', 'node-2'];
  const cluster = new FakeCluster(nodes);
  let first: string | undefined;
  // `kubectl uncordon` as the config stage's Job is created: the node is schedulable, its cordon annotation stays.
  cluster.script = (input) => {
    if (input.stage === 'config' && first === undefined) {
      first = input.node;
      cluster.uncordonByHand(input.node);
    }
    return { ms: 200 };
  };
  const spec = rolloutSpec('lost', { interruptionBudget: { count: 1 }, packages: { drv } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(handle, 'complete', 90_000);
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    const on = (name: string) => cluster.callsOf(name).filter((c) => (c.input as { node: string }).node === first);
    // The refused interrupt created nothing; the node was cordoned and drained again, then interrupted once.
    expect(on('runInterrupt')).toHaveLength(2);
    expect(on('cordon')).toHaveLength(2);
    expect(on('drain')).toHaveLength(2);
    // The lost cordon's annotation went with its permit, before the node asked again.
    expect(on('uncordon')).toHaveLength(2);
    expect(cluster.breaches).toEqual([]);
    expect(cluster.maxCordoned).toBe(1);
    expect(cluster.cordoned.size).toBe(0);
    const events = await history(nodeWorkflowId('lost', first!));
    expect(sent(events, 'requestInterrupt')).toBe(1);
    await recordHistory(t.env, nodeWorkflowId('lost', first!), 'node-cordon-lost');
  });
});

test('G16 a stage of an interrupting package never starts on a node that lost its cordon: runStage creates nothing, and the node cordons and drains again', async () => {
  const nodes = ['node-1', 'node-2'];
  const cluster = new FakeCluster(nodes);
  cluster.script = () => ({ ms: 200 });
  cluster.drainMs = 1500;
  const spec = rolloutSpec('lost-stage', { interruptionBudget: { count: 1 }, packages: { drv } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    // `kubectl uncordon` mid-drain, before the apply: the node is schedulable, its cordon annotation stays.
    const first = await eventually(async () => {
      const draining = [...cluster.draining];
      expect(draining).toHaveLength(1);
      return draining[0]!;
    }, 30_000);
    cluster.uncordonByHand(first);
    await statusBecomes(handle, 'complete', 90_000);
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    const on = (name: string) => cluster.callsOf(name).filter((c) => (c.input as { node: string }).node === first);
    const applies = on('runStage').filter((c) => (c.input as { stage: string }).stage === 'apply');
    // The first apply was refused and created nothing; the one after the new cordon and drain ran.
    expect(applies).toHaveLength(2);
    for (const c of applies) expect(c.input).toMatchObject({ cordoned: true });
    expect(cluster.created.filter((j) => j.includes('-apply-') && j.includes(`-${first}-`))).toHaveLength(1);
    expect(on('cordon')).toHaveLength(2);
    expect(on('drain')).toHaveLength(2);
    expect(on('uncordon')).toHaveLength(2);
    expect(on('runInterrupt')).toHaveLength(1);
    expect(cluster.breaches).toEqual([]);
    expect(cluster.maxCordoned).toBe(1);
    expect(cluster.cordoned.size).toBe(0);
    const events = await history(nodeWorkflowId('lost-stage', first));
    expect(sent(events, 'requestInterrupt')).toBe(1);
    await recordHistory(t.env, nodeWorkflowId('lost-stage', first), 'node-stage-cordon-lost');
  });
});

test('G16 a new driver that comes while the release uncordons the node is installed only under a new cordon', async () => {
  const cluster = new FakeCluster(['node-1']);
  cluster.script = () => ({ ms: 200 });
  // The uncordon's call answers slowly, past the workflow task's heartbeat (as after a worker crash that lost the task
  // that ran it): the update reaches the node while its release is under way, the node already schedulable.
  cluster.uncordonMs = 12_000;
  const spec = rolloutSpec('swap', { interruptionBudget: { count: 1 }, packages: { drv } });
  const next = rolloutSpec('swap', {
    interruptionBudget: { count: 1 },
    packages: { drv: { ...drv, version: '1.1.0' } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    let updated: Promise<unknown> | undefined;
    cluster.onUncordon = () => void (updated ??= handle.executeUpdate(updateSpecUpdate, { args: [next] }));
    await eventually(async () => {
      expect(updated).toBeDefined();
      expect((await handle.query(statusQuery)).generation).toBe(2);
    }, 60_000);
    await updated;
    await statusBecomes(handle, 'complete', 90_000);
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    expect(cluster.breaches).toEqual([]);
    const calls = cluster.calls.map((c) => (c.name === 'runStage' ? `${c.name} ${stageOf(c.input)}` : c.name));
    const applyNew = calls.indexOf('runStage drv@1.1.0 upgrade');
    expect(applyNew).toBeGreaterThan(0);
    // The new version's first stage came after a cordon made after the release's uncordon.
    expect(calls.slice(calls.lastIndexOf('uncordon', applyNew), applyNew)).toContain('cordon');
    expect(cluster.callsOf('cordon')).toHaveLength(2);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(2);
    expect(cluster.maxCordoned).toBe(1);
    expect(cluster.cordoned.size).toBe(0);
    await recordHistory(t.env, nodeWorkflowId('swap', 'node-1'), 'node-release-then-new-driver');
  });
});

function stageOf(input: unknown): string {
  const { package: pkg, stage } = input as { package: { name: string; version: string }; stage: string };
  return `${pkg.name}@${pkg.version} ${stage}`;
}
