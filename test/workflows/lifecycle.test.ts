import type { RunInterruptInput } from '../../activities/contract';
import { rolloutWorkflow } from '../../workflows';
import { encodeNodeState } from '../../model';
import { nodeStateQuery, statusQuery, updateSpecUpdate } from '../../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, startRollout, statusBecomes, useTemporal, withWorker } from './env';

const t = useTemporal();
const image = (n: string) => `ghcr.io/example/${n}`;

test('upgrade, downgrade and removal in one spec update', async () => {
  const cluster = new FakeCluster(['node-1']);
  cluster.script = () => ({ ms: 50 });
  const packages = {
    aa: { version: '1.0.0', image: image('aa') },
    bb: { version: '2.0.0', image: image('bb') },
    cc: { version: '1.0.0', image: image('cc') },
  };
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, rolloutSpec('versions', { packages }));
    await statusBecomes(handle, 'complete');
    const before = cluster.stagesOn('node-1').length;
    const next = rolloutSpec('versions', {
      packages: { aa: { ...packages.aa, version: '1.1.0' }, bb: { ...packages.bb, version: '1.0.0' } },
    });
    await expect(handle.executeUpdate(updateSpecUpdate, { args: [next] })).resolves.toEqual({ generation: 2 });
    await eventually(async () => {
      const st = await handle.query(statusQuery);
      expect([st.generation, st.status]).toEqual([2, 'complete']);
    });
    const after = cluster.stagesOn('node-1').slice(before);
    expect([...after].sort()).toEqual(
      [
        'aa@1.1.0:upgrade',
        'aa@1.1.0:config',
        'bb@2.0.0:uninstall',
        'bb@1.0.0:apply',
        'bb@1.0.0:config',
        'cc@1.0.0:uninstall',
      ].sort(),
    );
    expect(after.indexOf('bb@2.0.0:uninstall')).toBeLessThan(after.indexOf('bb@1.0.0:apply'));
    const node = await t.env.client.workflow.getHandle(nodeWorkflowId('versions', 'node-1')).query(nodeStateQuery);
    expect(Object.keys(node.rollouts.versions!.packages).sort()).toEqual(['aa|1.1.0', 'bb|1.0.0']);
    await handle.cancel();
  });
  await recordHistory(t.env, nodeWorkflowId('versions', 'node-1'), 'node-versions');
});

test('a config change runs config, and the interrupt only when configInterrupts match', async () => {
  const cluster = new FakeCluster(['node-1']);
  cluster.script = () => ({ ms: 50 });
  const tuned = (configMap: Record<string, string>) => ({
    version: '1.0.0',
    image: image('tuned'),
    configMap,
    configInterrupts: { 'svc-*': { type: 'service' as const, services: ['tuned'] } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const spec = (configMap: Record<string, string>) =>
      rolloutSpec('config', { packages: { tuned: tuned(configMap) } });
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId('config', 'config'),
      args: [{ cluster: 'config', spec: spec({ plain: '1', 'svc-a': '1' }) }],
    });
    const completeAt = async (generation: number) =>
      eventually(async () => {
        const st = await handle.query(statusQuery);
        expect([st.generation, st.status]).toEqual([generation, 'complete']);
      });
    await completeAt(1);
    expect(cluster.stagesOn('node-1')).toEqual(['tuned@1.0.0:apply', 'tuned@1.0.0:config']);

    await handle.executeUpdate(updateSpecUpdate, { args: [spec({ plain: '2', 'svc-a': '1' })] });
    await completeAt(2);
    expect(cluster.stagesOn('node-1').slice(2)).toEqual(['tuned@1.0.0:config']);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(0);
    expect(cluster.callsOf('cordon')).toHaveLength(0);

    await handle.executeUpdate(updateSpecUpdate, { args: [spec({ plain: '2', 'svc-a': '2' })] });
    await completeAt(3);
    expect(cluster.stagesOn('node-1').slice(3)).toEqual(['tuned@1.0.0:config', 'tuned@1.0.0:post-interrupt']);
    expect(cluster.callsOf('runInterrupt').map((c) => (c.input as RunInterruptInput).interrupt)).toEqual([
      { type: 'service', services: ['tuned'] },
    ]);
    expect(cluster.callsOf('cordon')).toHaveLength(1);
    await eventually(() => expect(cluster.callsOf('uncordon')).toHaveLength(1));
    await handle.cancel();
  });
});

test('continue-as-new during a long rollout keeps every bit of state', async () => {
  const cluster = new FakeCluster(['node-1', 'node-2', 'node-3']);
  cluster.script = () => ({ ms: 50 });
  const packages = {
    aa: { version: '1.0.0', image: image('aa') },
    bb: { version: '1.0.0', image: image('bb'), dependsOn: { aa: '1.0.0' }, interrupt: { type: 'reboot' as const } },
    cc: { version: '1.0.0', image: image('cc'), dependsOn: { bb: '1.0.0' } },
  };
  const id = rolloutWorkflowId('long', 'long');
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: id,
      args: [
        {
          cluster: 'long',
          spec: rolloutSpec('long', { packages, interruptionBudget: { count: 1 } }),
          // Tiny history bounds force several continue-as-new of the rollout and of every node workflow.
          options: {
            historyEventLimit: 40,
            node: {
              protectedPodsTimeoutSeconds: 60,
              drainTimeoutSeconds: 60,
              drainOnTimeout: 'wait' as const,
              rebootTimeoutSeconds: 60,
              historyEventLimit: 30,
            },
          },
        },
      ],
    });
    await statusBecomes(handle, 'complete', 90_000);
    const st = await handle.query(statusQuery);
    for (const node of ['node-1', 'node-2', 'node-3']) {
      expect(st.nodes[node]!.packages).toEqual({
        aa: { version: '1.0.0', stage: 'config', state: 'complete', restarts: 0 },
        bb: { version: '1.0.0', stage: 'post-interrupt', state: 'complete', restarts: 0 },
        cc: { version: '1.0.0', stage: 'config', state: 'complete', restarts: 0 },
      });
      const runs: string[] = [];
      for await (const run of t.env.client.workflow.list({ query: `WorkflowId = '${nodeWorkflowId('long', node)}'` })) {
        runs.push(run.runId);
      }
      expect(runs.length).toBeGreaterThan(1);
    }
    // Replay fixtures of real continue-as-new: node-1's first run (work, then continued as new) and its second (begun
    // from carried state, continued as new again).
    const continued: { runId: string; startTime: Date }[] = [];
    const query = `WorkflowId = '${nodeWorkflowId('long', 'node-1')}' AND ExecutionStatus = 'ContinuedAsNew'`;
    for await (const run of t.env.client.workflow.list({ query })) continued.push(run);
    continued.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    expect(continued.length).toBeGreaterThanOrEqual(2);
    await recordHistory(t.env, nodeWorkflowId('long', 'node-1'), 'node-continued-first-run', continued[0]!.runId);
    await recordHistory(t.env, nodeWorkflowId('long', 'node-1'), 'node-continued-carried-run', continued[1]!.runId);
    // Nothing ran twice: every stage Job was created once, and each node rebooted once.
    expect(new Set(cluster.created).size).toBe(cluster.created.length);
    expect(cluster.created).toHaveLength(21);
    expect(cluster.callsOf('runInterrupt')).toHaveLength(3);
    expect(cluster.maxCordoned).toBe(1);
    const first = await t.env.client.workflow.getHandle(id).describe();
    expect(first.runId).not.toBe(handle.firstExecutionRunId);
    await handle.cancel();
  });
  await recordHistory(t.env, nodeWorkflowId('long', 'node-1'), 'node-continue-as-new');
});

test('a node migrated at an older version of a package upgrades it, and one the spec dropped is uninstalled', async () => {
  const cluster = new FakeCluster(['node-1']);
  cluster.script = () => ({ ms: 50 });
  // What an operator left on the node: drv 1.0.0 and old 1.0.0 installed.
  const done = (name: string) => ({
    name,
    version: '1.0.0',
    image: image(name),
    stage: 'config' as const,
    state: 'complete' as const,
  });
  cluster.annotations.set('node-1/mig', encodeNodeState({ 'drv|1.0.0': done('drv'), 'old|1.0.0': done('old') }));
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(
      t.env,
      taskQueue,
      rolloutSpec('mig', { packages: { drv: { version: '2.0.0', image: image('drv') } } }),
    );
    await statusBecomes(handle, 'complete');
    await recordHistory(t.env, nodeWorkflowId('mig', 'node-1'), 'node-migration-version-change');
  });
  expect(cluster.stagesOn('node-1').sort()).toEqual(['drv@2.0.0:config', 'drv@2.0.0:upgrade', 'old@1.0.0:uninstall']);
  expect(Object.keys(JSON.parse(cluster.annotations.get('node-1/mig')!))).toEqual(['drv|2.0.0']);
});
