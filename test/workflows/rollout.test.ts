import type { RunStageInput } from '../../activities/contract';
import { rolloutWorkflow } from '../../workflows';
import { statusQuery } from '../../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
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

const t = useTemporal();

const image = (n: string) => `ghcr.io/example/${n}`;
const nodes = (n: number, prefix = 'node') => Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`);

test('3 packages with dependsOn on 5 nodes with a budget of 2: stage order, at most 2 permits, complete', async () => {
  const cluster = new FakeCluster(nodes(5));
  const spec = rolloutSpec('drivers', {
    interruptionBudget: { count: 2 },
    packages: {
      base: { version: '1.0.0', image: image('base') },
      driver: { version: '2.0.0', image: image('driver'), dependsOn: { base: '1.0.0' }, interrupt: { type: 'reboot' } },
      tools: { version: '1.1.0', image: image('tools'), dependsOn: { base: '1.0.0' } },
    },
  });
  const id = rolloutWorkflowId('test', spec.name);
  const started = Date.now();
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: id,
      args: [{ cluster: 'test', spec }],
    });
    await statusBecomes(handle, 'complete', 90_000);
    const status = await handle.query(statusQuery);
    expect(status.completeNodes).toBe('5/5');
    for (const node of nodes(5)) {
      expect(status.nodes[node]!.packages).toEqual({
        base: { version: '1.0.0', stage: 'config', state: 'complete', restarts: 0 },
        driver: { version: '2.0.0', stage: 'post-interrupt', state: 'complete', restarts: 0 },
        tools: { version: '1.1.0', stage: 'config', state: 'complete', restarts: 0 },
      });
      const stages = cluster.stagesOn(node);
      expect(stages.slice(0, 2)).toEqual(['base@1.0.0:apply', 'base@1.0.0:config']);
      const at = (s: string) => stages.indexOf(s);
      expect(at('driver@2.0.0:apply')).toBeLessThan(at('driver@2.0.0:config'));
      expect(at('driver@2.0.0:config')).toBeLessThan(at('driver@2.0.0:post-interrupt'));
      expect(at('tools@1.1.0:apply')).toBeGreaterThan(at('base@1.0.0:config'));
      expect(stages).toHaveLength(7);
    }
    expect(cluster.callsOf('runInterrupt')).toHaveLength(5);
    // Each reboot's wait for the node to come back runs inside its interrupt's activity (no waitForReboot).
    expect(cluster.callsOf('waitForReboot')).toHaveLength(0);
    for (const c of cluster.callsOf('runInterrupt')) expect(c.input).toHaveProperty('reboot.previousBootId');
    expect(cluster.maxCordoned).toBe(2);
    // Uncordon and permit release follow the last write that made the node complete.
    await eventually(async () => expect((await handle.query(statusQuery)).permits).toEqual([]));
    expect(cluster.cordoned.size).toBe(0);
    expect(cluster.callsOf('uncordon')).toHaveLength(5);
    await handle.cancel();
  });
  console.log(`3 packages x 5 nodes: ${Date.now() - started} ms`);
  await recordHistory(t.env, id, 'rollout-dependson-5-nodes');
  await recordHistory(t.env, nodeWorkflowId('test', 'node-1'), 'node-dependson');
});

test('failureThreshold halts a compartment, safetyLimit lets it go on', async () => {
  const policy = (safetyLimit: number) => ({
    name: 'p',
    spec: {
      resetBatchStateOnCompletion: false,
      default: {
        budget: { count: 1 },
        strategy: { fixed: { initialBatch: 1, batchThreshold: 100, failureThreshold: 1, safetyLimit } },
      },
      compartments: [],
    },
  });
  const failOn = new Set(['node-2']);
  const run = async (safetyLimit: number, name: string) => {
    const cluster = new FakeCluster(nodes(4));
    cluster.script = (i: RunStageInput) => ({ ms: 50, fail: failOn.has(i.node) && i.stage === 'apply' });
    const spec = rolloutSpec(
      name,
      { deploymentPolicy: 'p', packages: { base: { version: '1.0.0', image: image('base') } } },
      policy(safetyLimit),
    );
    return withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(rolloutWorkflow, {
        taskQueue,
        workflowId: rolloutWorkflowId(name, name),
        args: [{ cluster: name, spec }],
      });
      await eventually(async () => {
        const st = await handle.query(statusQuery);
        expect(st.nodes['node-2']!.status).toBe('erroring');
        expect(st.compartmentStatuses.__default__!.batchState.currentBatch).toBe(3);
      });
      if (safetyLimit < 50) {
        await eventually(async () =>
          expect((await handle.query(statusQuery)).nodes['node-4']!.status).toBe('complete'),
        );
      } else {
        // Time for a next batch to start if the compartment were not halted.
        await new Promise((r) => setTimeout(r, 1500));
      }
      const st = await handle.query(statusQuery);
      await handle.cancel();
      return { st, cluster };
    });
  };
  const halted = await run(100, 'halts');
  expect(halted.st.compartmentStatuses.__default__!.batchState.shouldStop).toBe(true);
  expect(halted.st.nodes['node-3']!.status).toBe('waiting');
  expect(halted.cluster.stagesOn('node-3')).toEqual([]);
  const entry = halted.cluster.writes.filter((w) => w.node === 'node-2').at(-1)!;
  expect(entry.state['base|1.0.0']).toMatchObject({
    state: 'erroring',
    lastError: expect.stringContaining('BackoffLimitExceeded'),
  });

  const goesOn = await run(25, 'goes-on');
  expect(goesOn.cluster.stagesOn('node-4')).toEqual(['base@1.0.0:apply', 'base@1.0.0:config']);
  expect(goesOn.st.nodes['node-2']!.status).toBe('erroring');
  expect(goesOn.st.compartmentStatuses.__default__!.batchState.shouldStop).toBe(false);
});

test("a new rollout takes the worker's node timeouts and drain policy, once, and keeps them", async () => {
  const cluster = new FakeCluster(nodes(2, 'timeouts'));
  cluster.nodeTimeouts = {
    protectedPodsTimeoutSeconds: 77,
    drainTimeoutSeconds: 123,
    drainOnTimeout: 'force',
    rebootTimeoutSeconds: 456,
  };
  const spec = rolloutSpec('timeouts', {
    interruptionBudget: { count: 1 },
    packages: { driver: { version: '1.0.0', image: image('driver'), interrupt: { type: 'reboot' } } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'test' });
    await statusBecomes(handle, 'complete', 90_000);
    expect(cluster.callsOf('nodeTimeouts')).toHaveLength(1);
    const drains = cluster.callsOf('drain').map((c) => c.input);
    expect(drains).toHaveLength(2);
    // No spec.drain: the worker's timeout, and kubectl drain's default rules.
    for (const d of drains) {
      expect(d).toMatchObject({
        timeoutSeconds: 123,
        onTimeout: 'force',
        rules: { force: false, deleteEmptyDirData: false },
      });
    }
    expect(cluster.callsOf('runInterrupt')).toHaveLength(2);
    for (const c of cluster.callsOf('runInterrupt')) expect(c.input).toMatchObject({ reboot: { timeoutSeconds: 456 } });
    await handle.cancel();
  });
});

test("a rollout's spec.drain reaches its drains: its own timeout and rules, the worker's on-timeout policy", async () => {
  // Nodes of its own: the node workflows of earlier tests' nodes run on, on their ended workers' task queues.
  const cluster = new FakeCluster(nodes(1, 'drainopts'));
  cluster.script = () => ({ ms: 50 });
  const spec = rolloutSpec('drainopts', {
    drain: { timeout: '15m', force: true, deleteEmptyDirData: true, gracePeriodSeconds: 5 },
    packages: { driver: { version: '1.0.0', image: image('driver'), interrupt: { type: 'reboot' } } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'test' });
    await statusBecomes(handle, 'complete', 90_000);
    expect(cluster.callsOf('drain').map((c) => c.input)).toEqual([
      {
        node: cluster.nodes[0]!.name,
        timeoutSeconds: 900,
        onTimeout: 'wait',
        rules: { force: true, deleteEmptyDirData: true, gracePeriodSeconds: 5 },
      },
    ]);
    await handle.cancel();
  });
});

test('resetBatchStateOnCompletion: the batch state starts over when the rollout completes', async () => {
  const cluster = new FakeCluster(nodes(3));
  cluster.script = () => ({ ms: 50 });
  const policy = fixedBatchPolicy('p', { count: 1, initialBatch: 1, resetBatchStateOnCompletion: true });
  const spec = {
    ...rolloutSpec(
      'resets',
      { deploymentPolicy: 'p', packages: { base: { version: '1.0.0', image: image('base') } } },
      policy,
    ),
    resetBatchStateOnCompletion: true,
  };
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId('resets', 'resets'),
      args: [{ cluster: 'resets', spec }],
    });
    await statusBecomes(handle, 'complete');
    const batch = (await handle.query(statusQuery)).compartmentStatuses.__default__!.batchState;
    expect(batch).toMatchObject({ currentBatch: 1, completedNodes: 0, failedNodes: 0 });
    await recordHistory(t.env, rolloutWorkflowId('resets', 'resets'), 'rollout-reset-batches');
  });
});
