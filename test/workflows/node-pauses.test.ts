import type { RunStageInput } from '../../activities/contract';
import { rolloutWorkflow } from '../../workflows';
import { nodePauseSignal, nodeStateQuery, pauseSignal, resumeSignal } from '../../workflows/messages';
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

// G14 pauses hold: a pause longer than a stage's remaining time, and a continue-as-new while paused, both end with
// the stage's Job resumed and completed.

const t = useTemporal();
const NODE = 'node-a';
const who = { actor: 'test', reason: 'maintenance window' };
const node = (name: string) => t.env.client.workflow.getHandle(nodeWorkflowId(name, NODE));
const suspends = (cluster: FakeCluster, suspend: boolean) =>
  cluster.callsOf('suspendStageJob').filter((c) => (c.input as { suspend: boolean }).suspend === suspend);

test('G14 a paused stage keeps the time it had left: a pause longer than it, then resume, completes', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.script = () => ({ ms: 5000 });
  const spec = rolloutSpec('keep', {
    stageTimeout: '12s',
    packages: { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await eventually(() => expect(cluster.stagesOn(NODE)).toEqual(['tools@1.0.0:apply']));
    await sleep(2000);
    await handle.signal(pauseSignal, who);
    await eventually(() => expect(suspends(cluster, true)).toHaveLength(1));
    // Paused for longer than the 10 s the stage had left.
    await sleep(14_000);
    await handle.signal(resumeSignal, who);
    await statusBecomes(handle, 'complete', 60_000);
    await recordHistory(t.env, nodeWorkflowId('keep', NODE), 'node-pause-keeps-time');
    const view = await node('keep').query(nodeStateQuery);
    expect(view.rollouts.keep!.packages['tools|1.0.0']).toMatchObject({ stage: 'config', state: 'complete' });
  });
  // The resumed Job's deadline is the time it had left (Kubernetes counts it from the resume), not the whole 12 s.
  const deadline = cluster.callsOf('setStageDeadline')[0]!.input as { activeDeadlineSeconds: number };
  expect(deadline.activeDeadlineSeconds).toBeGreaterThanOrEqual(5);
  expect(deadline.activeDeadlineSeconds).toBeLessThanOrEqual(11);
}, 90_000);

test('G14 continue-as-new while paused: the stage Job is resumed with the rollout and completes', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.script = (i: RunStageInput) => ({ ms: i.stage === 'apply' ? 3000 : 100 });
  const spec = rolloutSpec('canp', { packages: { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId('canp', 'canp'),
      args: [
        {
          cluster: 'canp',
          spec,
          options: {
            historyEventLimit: 10_000,
            node: {
              protectedPodsTimeoutSeconds: 60,
              drainTimeoutSeconds: 60,
              drainOnTimeout: 'wait' as const,
              rebootTimeoutSeconds: 60,
              historyEventLimit: 60,
            },
          },
        },
      ],
    });
    await eventually(() => expect(cluster.stagesOn(NODE)).toEqual(['tools@1.0.0:apply']));
    await handle.signal(pauseSignal, who);
    await eventually(() => expect(suspends(cluster, true)).toHaveLength(1));
    // Repeated pauses grow the node's history past its bound: it continues as new while paused.
    const before = (await node('canp').describe()).runId;
    for (let i = 0; i < 20 && (await node('canp').describe()).runId === before; i++) {
      await node('canp').signal(nodePauseSignal, { rollout: 'canp', ...who });
      await sleep(200);
    }
    await eventually(async () => expect((await node('canp').describe()).runId).not.toBe(before));
    await handle.signal(resumeSignal, who);
    await statusBecomes(handle, 'complete', 30_000);
  });
  expect(suspends(cluster, false).length).toBeGreaterThanOrEqual(1);
}, 90_000);
