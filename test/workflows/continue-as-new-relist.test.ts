import { WorkflowUpdateStage } from '@temporalio/client';
import { rolloutWorkflow } from '../../workflows';
import { nodeProgressSignal, updateSpecUpdate, type NodeProgress } from '../../workflows/messages';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, rolloutSpec, sleep, useTemporal, withWorker } from './env';

// The quiet continue-as-new (workflows/rollout/workflow.ts) waits for the handlers to finish: a spec update may still
// await its image policy read there, and the spec it then applies asks for a relist. The continued run does not list
// at its start (only at its relist clock, 5 minutes on), so a continue-as-new made then admitted the nodes for the new
// generation from the old node list: a node the new selector no longer picks was sent the new spec. The server
// suggests continue-as-new from 25 events on; the test plays the nodes (no node workflows).

const t = useTemporal(['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=25']);

const SUGGESTED_AT = 25;

function complete(node: string): NodeProgress {
  return {
    node,
    generation: 1,
    status: 'complete',
    state: { 'tools|1.0.0': { name: 'tools', version: '1.0.0', stage: 'config', state: 'complete' } },
    order: [1_000_000, 1],
  };
}

interface Desire {
  node: string;
  generation: number;
}

test('a spec update applied while the rollout waits to continue as new is relisted before its nodes are admitted', async () => {
  // keep-1 stays under the narrowed selector, drop-1 does not.
  const cluster = new FakeCluster(['keep-1', 'drop-1'], (node) => ({ pool: node.startsWith('keep') ? 'a' : 'b' }));
  cluster.startNodeWorkflows = false;
  const name = 'quiet-relist';
  const id = rolloutWorkflowId(name, name);
  const packages = { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } };
  const spec = rolloutSpec(name, { interruptionBudget: { count: 2 }, packages });
  const narrowed = rolloutSpec(name, {
    interruptionBudget: { count: 2 },
    packages,
    nodeSelectors: { matchLabels: { pool: 'a' } },
  });
  const desires = (): Desire[] =>
    cluster.calls
      .filter((c) => c.name === 'ensureNodeWorkflow')
      .map((c) => c.input as { node: string; args: [{ generation: number }] })
      .map((i) => ({ node: i.node, generation: i.args[0].generation }));
  const isNarrowedList = (c: { name: string; input: unknown }) =>
    c.name === 'listNodes' && JSON.stringify((c.input as { selector: unknown }).selector).includes('"pool"');

  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: id,
      args: [{ cluster: name, spec }],
    });
    await eventually(() => expect(desires()).toHaveLength(2));
    // drop-1 settles; keep-1 stays in flight, so no quiet point comes while the history grows past the suggestion.
    await handle.signal(nodeProgressSignal, complete('drop-1'));
    await eventually(async () => expect((await handle.describe()).historyLength).toBeGreaterThan(SUGGESTED_AT));

    // The update's policy read is slow: while it is pending, keep-1's last report makes the rollout quiet, and the
    // main loop, woken by it, waits at the quiet continue-as-new for the update to finish.
    cluster.imagePolicyDelays = [3000];
    await handle.startUpdate(updateSpecUpdate, {
      args: [narrowed, { actor: 'test' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    await handle.signal(nodeProgressSignal, complete('keep-1'));

    // keep-1 is admitted for the new generation, after a listing by the new selector; drop-1 never is.
    await eventually(() => expect(desires()).toContainEqual({ node: 'keep-1', generation: 2 }), 20_000);
    const firstOfGeneration2 = cluster.calls.findIndex(
      (c) =>
        c.name === 'ensureNodeWorkflow' && (c.input as { args: [{ generation: number }] }).args[0].generation === 2,
    );
    const narrowedList = cluster.calls.findIndex(isNarrowedList);
    await sleep(1000);
    expect(desires()).not.toContainEqual({ node: 'drop-1', generation: 2 });
    expect(narrowedList).toBeGreaterThanOrEqual(0);
    expect(narrowedList).toBeLessThan(firstOfGeneration2);

    // The race took place: keep-1's report came in while the update's policy read was pending.
    const events = (await t.env.client.workflow.getHandle(id, handle.firstExecutionRunId).fetchHistory()).events ?? [];
    const scheduled = events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'imagePolicy',
    );
    const updatePolicyRead = Number(scheduled[scheduled.length - 1]!.eventId);
    const readDone = events.find(
      (e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === updatePolicyRead,
    );
    const signals = events.filter((e) => e.workflowExecutionSignaledEventAttributes);
    const lastReport = Number(signals[signals.length - 1]!.eventId);
    expect(scheduled).toHaveLength(2);
    expect(updatePolicyRead).toBeLessThan(lastReport);
    expect(lastReport).toBeLessThan(Number(readDone!.eventId));
    await handle.cancel();
  });
}, 60_000);
