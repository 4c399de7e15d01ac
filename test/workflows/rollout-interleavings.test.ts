import type { RunStageInput } from '../../activities/contract';
import { stageJobName } from '../../model';
import { enableSignal, pauseSignal, resumeSignal, statusQuery, updateSpecUpdate } from '../../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import {
  eventually,
  recordHistory,
  rolloutSpec,
  sleep,
  startRollout,
  statusBecomes,
  useTemporal,
  withWorker,
} from './env';

// The rollout's side of G13 and G14: a user action, a spec update or a missing node workflow meeting work in flight.

const t = useTemporal();
const image = (n: string) => `ghcr.io/example/${n}`;

interface DesireCall {
  node: string;
  args: [{ generation: number; spec: { paused: boolean; disabled: boolean } }];
}
const desires = (cluster: FakeCluster) => cluster.callsOf('ensureNodeWorkflow').map((c) => c.input as DesireCall);
/** The rollout named as its spec, on a cluster of the same name. */

test('G14 a spec update reaches every in-flight node at once and keeps the batch barrier', async () => {
  // Batches of two in creation order: node-a and node-b first, then node-c and node-d; node-c's stage is long.
  const nodes = ['node-a', 'node-b', 'node-c', 'node-d'];
  const cluster = new FakeCluster(nodes);
  cluster.script = (input: RunStageInput) => ({
    ms: input.node === 'node-c' && input.stage === 'apply' ? 20_000 : 200,
  });
  const rollout = rolloutSpec('upd', {
    interruptionBudget: { count: 2 },
    packages: { tools: { version: '1.0.0', image: image('tools') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, rollout);
    // The second batch is in flight: node-d done, node-c still applying.
    await eventually(async () => {
      const status = await handle.query(statusQuery);
      expect(status.nodes['node-d']!.status).toBe('complete');
      expect(status.nodes['node-c']!.status).toBe('in_progress');
    });
    await handle.executeUpdate(updateSpecUpdate, {
      args: [{ ...rollout, spec: { ...rollout.spec, stageTimeout: '2h' } }],
    });
    // node-c takes generation 2 while its stage runs (the new timeout reaches it, G4) ...
    await eventually(() =>
      expect(
        desires(cluster)
          .filter((d) => d.node === 'node-c')
          .map((d) => d.args[0].generation),
      ).toEqual([1, 2]),
    );
    await eventually(() =>
      expect(cluster.callsOf('runStage').filter((c) => (c.input as RunStageInput).node === 'node-c')).toHaveLength(2),
    );
    const second = cluster.callsOf('runStage').filter((c) => (c.input as RunStageInput).node === 'node-c')[1]!;
    expect((second.input as RunStageInput).timeoutSeconds).toBe(7200);
    // ... and no other node is admitted for generation 2 while it is in flight: the barrier holds.
    await sleep(1500);
    expect((await handle.query(statusQuery)).nodes['node-c']!.status).toBe('in_progress');
    expect(desires(cluster).filter((d) => d.args[0].generation === 2 && d.node !== 'node-c')).toEqual([]);
    cluster.finish(
      stageJobName({ rollout: 'upd', package: 'tools', version: '1.0.0', stage: 'apply', node: 'node-c' }),
      'complete',
    );
    await statusBecomes(handle, 'complete', 60_000);
    expect(
      desires(cluster)
        .filter((d) => d.args[0].generation === 2)
        .map((d) => d.node)[0],
    ).toBe('node-c');
    await handle.cancel();
  });
  await recordHistory(t.env, rolloutWorkflowId('upd', 'upd'), 'rollout-spec-update-in-flight');
});

test('G14 a rollout started paused runs on resume, and one started disabled runs on enable', async () => {
  for (const [flag, signal] of [
    ['paused', resumeSignal],
    ['disabled', enableSignal],
  ] as const) {
    const cluster = new FakeCluster(['node-1', 'node-2']);
    const name = `start-${flag}`;
    const spec = {
      ...rolloutSpec(name, { packages: { tools: { version: '1.0.0', image: image('tools') } } }),
      [flag]: true,
    };
    await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
      const handle = await startRollout(t.env, taskQueue, spec);
      await eventually(async () => expect((await handle.query(statusQuery)).status).toBe(flag));
      expect(cluster.callsOf('runStage')).toHaveLength(0);
      await handle.signal(signal, { actor: 'sre', reason: 'go' });
      await statusBecomes(handle, 'complete', 60_000);
      // The nodes were told the rollout's own state, not the manifest's.
      expect(desires(cluster).map((d) => d.args[0].spec[flag])).toEqual([false, false]);
      await handle.cancel();
    });
  }
});

test('G13 signalling a missing node workflow never fails the rollout', async () => {
  const cluster = new FakeCluster(['node-1', 'node-2']);
  cluster.script = () => ({ ms: 30_000 });
  const spec = rolloutSpec('gone', {
    interruptionBudget: { count: 2 },
    packages: { tools: { version: '1.0.0', image: image('tools') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await eventually(() => expect(cluster.callsOf('runStage')).toHaveLength(2));
    // node-2's workflow is terminated by hand; then the rollout is paused, which signals every admitted node.
    await t.env.client.workflow.getHandle(nodeWorkflowId('gone', 'node-2')).terminate('by hand');
    await handle.signal(pauseSignal, { actor: 'sre', reason: 'look' });
    await statusBecomes(handle, 'paused');
    await handle.signal(resumeSignal, { actor: 'sre', reason: 'go on' });
    for (const job of cluster.jobs.keys()) cluster.finish(job, 'complete');
    await eventually(async () => expect((await handle.query(statusQuery)).nodes['node-1']!.status).toBe('complete'));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await handle.cancel();
  });
  await recordHistory(t.env, rolloutWorkflowId('gone', 'gone'), 'rollout-missing-node');
});

test('a relist asked for while the nodes are being listed is not lost: a spec update during the first listing', async () => {
  const cluster = new FakeCluster(['node-1']);
  cluster.listNodesMs = 3000;
  const rollout = rolloutSpec('relist', { packages: { tools: { version: '1.0.0', image: image('tools') } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, rollout);
    await eventually(() => expect(cluster.callsOf('listNodes')).toHaveLength(1));
    // A node joins, and a spec update asks for a relist, while the first listing (without the node) is under way.
    cluster.nodes.push({ ...cluster.nodes[0]!, name: 'node-2', bootId: 'node-2-boot-0' });
    await handle.executeUpdate(updateSpecUpdate, {
      args: [{ ...rollout, spec: { ...rollout.spec, stageTimeout: '2h' } }],
    });
    // Listed again at once, not at the next relist interval (5 minutes).
    await eventually(() => expect(desires(cluster).map((d) => d.node)).toContain('node-2'), 20_000);
    expect(cluster.callsOf('listNodes').length).toBeGreaterThanOrEqual(2);
    await handle.cancel();
  });
});
