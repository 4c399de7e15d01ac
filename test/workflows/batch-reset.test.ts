import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { RunStageInput } from '../../activities/contract';
import { stageJobName } from '../../model';
import { rolloutWorkflow } from '../../workflows';
import { resetBatchStateUpdate, statusQuery } from '../../workflows/messages';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, sleep, startRollout, useTemporal, withWorker } from './env';

// The manual batch reset (§2.2.6, `rollout reset-batches`) on a real Temporal server: a compartment its failure
// threshold halted proceeds again from batch 1, a batch in flight is neither interrupted nor judged, and the
// interruption budget holds throughout.

const t = useTemporal();
const image = (n: string) => `ghcr.io/example/${n}`;
const names = Array.from({ length: 6 }, (_, i) => `node-${i + 1}`);
const sre = { actor: 'sre', reason: 'the broken image is fixed', onBehalfOf: 'alice@laptop' };

test('a batch reset lets a halted compartment go on from batch 1, never interrupts or judges the batch in flight, and keeps the budget', async () => {
  const cluster = new FakeCluster(names);
  // node-2 fails its first batch, which halts the compartment; node-3's base apply runs until the test finishes it.
  cluster.script = (i: RunStageInput) => ({
    ms: i.node === 'node-3' && i.package.name === 'base' && i.stage === 'apply' ? 600_000 : 50,
    fail: i.node === 'node-2' && i.package.name === 'base' && i.stage === 'apply',
  });
  // Batches of 2 and a budget of 1: every batch has more rebooting nodes than may be interrupted at once.
  const spec = rolloutSpec(
    'resets',
    {
      deploymentPolicy: 'p',
      packages: {
        base: { version: '1.0.0', image: image('base') },
        driver: {
          version: '2.0.0',
          image: image('driver'),
          dependsOn: { base: '1.0.0' },
          interrupt: { type: 'reboot' },
        },
      },
    },
    {
      name: 'p',
      spec: {
        resetBatchStateOnCompletion: false,
        default: {
          budget: { count: 1 },
          strategy: { fixed: { initialBatch: 2, batchThreshold: 100, failureThreshold: 1, safetyLimit: 100 } },
        },
        compartments: [],
      },
    },
  );
  const id = rolloutWorkflowId('resets', 'resets');
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: id,
      args: [{ cluster: 'resets', spec }],
    });
    const batchState = async () => (await handle.query(statusQuery)).compartmentStatuses.__default__!.batchState;

    // Halted after its first batch: node-2 failed.
    await eventually(async () => {
      const st = await handle.query(statusQuery);
      expect(st.nodes['node-1']!.status).toBe('complete');
      expect(st.nodes['node-2']!.status).toBe('erroring');
      expect(st.compartmentStatuses.__default__!.batchState).toMatchObject({ currentBatch: 2, shouldStop: true });
    }, 60_000);
    await sleep(1500);
    expect(cluster.stagesOn('node-3')).toEqual([]);

    const reset = await handle.executeUpdate(resetBatchStateUpdate, { args: [sre] });
    expect(reset).toEqual({
      generation: 1,
      compartments: {
        __default__: {
          currentBatch: 1,
          consecutiveFailures: 0,
          completedNodes: 1,
          failedNodes: 1,
          shouldStop: false,
          lastBatchSize: 0,
          lastBatchFailed: false,
        },
      },
    });
    expect((await handle.query(statusQuery)).lastChange).toEqual({
      action: 'reset-batches',
      ...sre,
      generation: 1,
    });

    // Batch 1 again: node-3 and node-4. node-4 completes; node-3 is still applying base when the batches are reset
    // a second time.
    await eventually(async () => {
      const st = await handle.query(statusQuery);
      expect(st.nodes['node-4']!.status).toBe('complete');
      expect(cluster.stagesOn('node-3')).toEqual(['base@1.0.0:apply']);
    }, 60_000);
    await handle.executeUpdate(resetBatchStateUpdate, { args: [{ actor: 'sre', reason: 'again' }] });
    expect(await batchState()).toMatchObject({ currentBatch: 1, completedNodes: 2, failedNodes: 1 });
    // The barrier holds: nothing beside node-3 while it is in flight, and node-3 runs on undisturbed.
    await sleep(1500);
    expect(cluster.stagesOn('node-5')).toEqual([]);
    expect(cluster.stagesOn('node-3')).toEqual(['base@1.0.0:apply']);
    expect((await handle.query(statusQuery)).nodes['node-3']!.status).toBe('in_progress');
    cluster.finish(
      stageJobName({ rollout: 'resets', package: 'base', version: '1.0.0', stage: 'apply', node: 'node-3' }),
      'complete',
    );

    await eventually(async () => {
      const st = await handle.query(statusQuery);
      for (const n of ['node-3', 'node-5', 'node-6']) expect(st.nodes[n]!.status).toBe('complete');
      expect(st.permits).toEqual([]);
    }, 90_000);
    // The batch in flight at the reset was not judged: node-5 and node-6 ran as batch 1, judged a success.
    expect(await batchState()).toEqual({
      currentBatch: 2,
      consecutiveFailures: 0,
      completedNodes: 5,
      failedNodes: 1,
      shouldStop: false,
      lastBatchSize: 2,
      lastBatchFailed: false,
    });
    expect(cluster.stagesOn('node-3')).toEqual([
      'base@1.0.0:apply',
      'base@1.0.0:config',
      'driver@2.0.0:apply',
      'driver@2.0.0:config',
      'driver@2.0.0:post-interrupt',
    ]);
    // node-5 started only once node-3 had settled.
    const node3Done = cluster.writes.find((w) => w.node === 'node-3' && w.status === 'complete')!.at;
    const node5Start = cluster.callsOf('runStage').find((c) => (c.input as RunStageInput).node === 'node-5')!.at;
    expect(node5Start).toBeGreaterThanOrEqual(node3Done);
    // The erroring node is left as it is: a batch reset reruns nothing.
    expect(cluster.stagesOn('node-2')).toEqual(['base@1.0.0:apply']);
    // Every node rebooted that completed, at most one cordoned or draining at a time, before and after the resets.
    expect(cluster.callsOf('runInterrupt')).toHaveLength(5);
    expect(cluster.maxCordoned).toBe(1);
    expect(cluster.maxDisrupted).toBe(1);
    expect(cluster.breaches).toEqual([]);
    await handle.cancel();
  });
  await recordHistory(t.env, id, 'rollout-reset-batch-state');
}, 240_000);

test('a batch reset without an actor is refused before it is accepted, naming the field', async () => {
  const cluster = new FakeCluster(['node-1']);
  const spec = rolloutSpec('anon', { packages: { base: { version: '1.0.0', image: image('base') } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    const refused = await handle.executeUpdate(resetBatchStateUpdate, { args: [{ actor: '', reason: 'x' }] }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause?.message).toContain('actor: must name who resets the batches');
    expect((await handle.query(statusQuery)).lastChange).toBeUndefined();
    await handle.cancel();
  });
});
