import type { RunStageInput } from '../../activities/contract';
import { STAGES, stageJobName, type NodeState } from '../../model';
import { rolloutWorkflow } from '../../workflows';
import {
  disableSignal,
  pauseSignal,
  rerunUpdate,
  resetUpdate,
  resumeSignal,
  statusQuery,
  updateSpecUpdate,
} from '../../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster, type Write } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, sleep, statusBecomes, useTemporal, withWorker } from './env';

const t = useTemporal();

const pkg = (name: string, extra: Record<string, unknown> = {}) => ({
  version: '1.0.0',
  image: `ghcr.io/x/${name}`,
  ...extra,
});
const rank = (e: NodeState[string]) => STAGES.indexOf(e.stage) * 2 + (e.state === 'complete' ? 1 : 0);

async function start(name: string, packages: Record<string, unknown>, taskQueue: string, extra = {}) {
  const rollout = rolloutSpec(name, { packages, ...extra });
  const handle = await t.env.client.workflow.start(rolloutWorkflow, {
    taskQueue,
    workflowId: rolloutWorkflowId(name, name),
    args: [{ cluster: name, spec: rollout }],
  });
  return { handle, rollout };
}

test('G1 concurrent completions and a spec update mid-flight never move a written entry backwards', async () => {
  const cluster = new FakeCluster(['node-1', 'node-2']);
  // Both independent packages finish in the same instant on each node.
  cluster.script = () => ({ ms: 300 });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const { handle, rollout } = await start('g1', { aa: pkg('aa'), bb: pkg('bb') }, taskQueue);
    await eventually(() => expect(cluster.callsOf('runStage').length).toBeGreaterThanOrEqual(4));
    const next = rolloutSpec('g1', {
      packages: { ...rollout.spec.packages, cc: pkg('cc', { dependsOn: { aa: '1.0.0' } }) },
    });
    await handle.executeUpdate(updateSpecUpdate, { args: [next] });
    await statusBecomes(handle, 'complete');
    await handle.cancel();
  });
  for (const node of ['node-1', 'node-2']) {
    const writes: Write[] = cluster.writes.filter((w) => w.node === node);
    const best = new Map<string, number>();
    for (const w of writes) {
      for (const [key, seen] of best) {
        expect(w.state[key]).toBeDefined();
        expect(rank(w.state[key]!)).toBeGreaterThanOrEqual(seen);
      }
      for (const [key, e] of Object.entries(w.state)) best.set(key, rank(e));
    }
    expect(Object.keys(writes.at(-1)!.state).sort()).toEqual(['aa|1.0.0', 'bb|1.0.0', 'cc|1.0.0']);
    // a and b completed config in the same instant: both completions are in the written state.
    expect(writes.some((w) => w.state['aa|1.0.0']?.stage === 'config' && w.state['bb|1.0.0']?.stage === 'config')).toBe(
      true,
    );
  }
  await recordHistory(t.env, nodeWorkflowId('g1', 'node-1'), 'node-g1');
});

test('G4 a new stageTimeout patches the running Job deadline and waits again with the time left', async () => {
  const cluster = new FakeCluster(['node-1']);
  // Long enough that the update reaches the running stage on a loaded machine.
  cluster.script = () => ({ ms: 10_000 });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const { handle, rollout } = await start('g4', { aa: pkg('aa') }, taskQueue, { stageTimeout: '1h' });
    await eventually(() => expect(cluster.callsOf('runStage')).toHaveLength(1));
    const job = stageJobName({ rollout: 'g4', package: 'aa', version: '1.0.0', stage: 'apply', node: 'node-1' });
    await handle.executeUpdate(updateSpecUpdate, {
      args: [{ ...rollout, spec: { ...rollout.spec, stageTimeout: '2h' } }],
    });
    await eventually(() =>
      expect(cluster.callsOf('setStageDeadline').map((c) => c.input)).toEqual([
        { jobName: job, activeDeadlineSeconds: 7200 },
      ]),
    );
    await eventually(() => expect(cluster.callsOf('runStage')).toHaveLength(2));
    const [first, second] = cluster.callsOf('runStage').map((c) => c.input as RunStageInput);
    expect([first!.stage, first!.timeoutSeconds, second!.stage, second!.timeoutSeconds]).toEqual([
      'apply',
      3600,
      'apply',
      7200,
    ]);
    // The Job was neither deleted nor created again: the second wait adopted it.
    expect(
      cluster.callsOf('deleteStageJob').filter((c) => (c.input as { jobName: string }).jobName === job),
    ).toHaveLength(0);
    expect(cluster.jobs.get(job)?.deadlineSeconds).toBe(7200);
    await statusBecomes(handle, 'complete');
    await handle.cancel();
  });
});

test('G5 pause then disable never resumes a suspended stage', async () => {
  const cluster = new FakeCluster(['node-1']);
  // Long enough that the pause reaches the stage before it ends, even on a loaded machine; the test never waits it out.
  cluster.script = () => ({ ms: 60_000 });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const { handle } = await start('g5p', { aa: pkg('aa') }, taskQueue);
    await eventually(() => expect(cluster.callsOf('runStage')).toHaveLength(1));
    const job = stageJobName({ rollout: 'g5p', package: 'aa', version: '1.0.0', stage: 'apply', node: 'node-1' });
    await handle.signal(pauseSignal, { actor: 'sre', reason: 'investigate' });
    await eventually(() => expect(cluster.jobs.get(job)?.suspended).toBe(true));
    await handle.signal(disableSignal, { actor: 'sre', reason: 'stop it' });
    await handle.signal(resumeSignal, { actor: 'sre', reason: 'resume, still disabled' });
    await sleep(3000);
    const suspends = cluster.callsOf('suspendStageJob').map((c) => (c.input as { suspend: boolean }).suspend);
    expect(suspends).not.toContain(false);
    expect(cluster.jobs.get(job)?.suspended).toBe(true);
    expect(cluster.jobs.get(job)?.outcome).toBeUndefined();
    expect(cluster.callsOf('runStage')).toHaveLength(1);
    expect((await handle.query(statusQuery)).status).toBe('disabled');
    await handle.cancel();
  });
});

test('G5 rerun and reset against a late completion never revive the removed run', async () => {
  const cluster = new FakeCluster(['node-1']);
  let applies = 0;
  // The first apply is still running when rerun and reset come; later runs are quick.
  cluster.script = (i) => ({ ms: i.stage === 'apply' && applies++ < 2 ? 1500 : 100 });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const { handle } = await start('g5r', { aa: pkg('aa') }, taskQueue);
    const node = t.env.client.workflow.getHandle(nodeWorkflowId('g5r', 'node-1'));
    await eventually(() => expect(cluster.stagesOn('node-1')).toEqual(['aa@1.0.0:apply']));
    const firstJob = cluster.jobs.get(
      stageJobName({ rollout: 'g5r', package: 'aa', version: '1.0.0', stage: 'apply', node: 'node-1' }),
    )!;
    await node.executeUpdate(rerunUpdate, { args: [{ rollout: 'g5r', package: 'aa' }] });
    await eventually(() => expect(cluster.stagesOn('node-1')).toEqual(['aa@1.0.0:apply', 'aa@1.0.0:apply']));
    const secondJob = cluster.jobs.get(
      stageJobName({ rollout: 'g5r', package: 'aa', version: '1.0.0', stage: 'apply', node: 'node-1' }),
    )!;
    expect(secondJob).not.toBe(firstJob);
    await node.executeUpdate(resetUpdate, { args: [{ rollout: 'g5r' }] });
    await statusBecomes(handle, 'complete');
    // The removed runs' watchers did finish, late; none of their results reached node state.
    await eventually(() => expect([firstJob.outcome, secondJob.outcome]).toEqual(['complete', 'complete']));
    const third = cluster.callsOf('runStage')[2]!;
    const completions = cluster.writes.filter((w) => w.state['aa|1.0.0']?.state === 'complete');
    expect(completions.length).toBeGreaterThan(0);
    for (const w of completions) expect(w.at).toBeGreaterThan(third.at);
    expect(cluster.stagesOn('node-1')).toEqual([
      'aa@1.0.0:apply',
      'aa@1.0.0:apply',
      'aa@1.0.0:apply',
      'aa@1.0.0:config',
    ]);
    await handle.cancel();
  });
  await recordHistory(t.env, nodeWorkflowId('g5r', 'node-1'), 'node-g5-rerun-reset');
});
