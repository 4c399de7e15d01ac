import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { rolloutWorkflow } from '../../workflows';
import { nodeProgressSignal, statusQuery } from '../../workflows/messages';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, sleep, statusBecomes, useTemporal } from './env';

// G15: a worker crash, with status queries in flight, never leaves a workflow whose history cannot be replayed, and a
// query changes nothing (docs/operations.md, "A worker crash and status queries").
//
// The SDK (1.24.0, the newest) answers a query on a worker that has no cached copy of the workflow by replaying its
// history, and when that history ends with a workflow task not yet completed (pending, or held by a crashed worker),
// it runs the workflow over that task's signals too and keeps the result. When the task then arrives with more
// signals, the worker sends the commands of two passes where a replay, which sees one task, makes one. This test
// makes that happen on purpose and checks the rollout's history still replays.

const t = useTemporal();
const EventType = temporal.api.enums.v1.EventType;

/**
 * One try at the interleaving above. Whether node-2's report comes in before the cold worker takes the task behind the
 * queries is a race the test cannot hold; the answer says whether it did. The history is replayed either way.
 */
async function coldQueries(attempt: number): Promise<boolean> {
  const { env, bundle } = t;
  const nodes = ['node-1', 'node-2', 'node-3'];
  // The node workflows go to a task queue nobody polls: the rollout stays in progress and the test plays its nodes.
  const cluster = new FakeCluster(nodes);
  const taskQueue = `cold-${randomUUID()}`;
  const activities = cluster.activities(env.client, `unpolled-${randomUUID()}`);
  const spec = rolloutSpec('cold', {
    interruptionBudget: { count: 3 },
    packages: { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } },
  });
  const clusterName = `cold${attempt}`;
  const workflowId = rolloutWorkflowId(clusterName, spec.name);
  const handle = env.client.workflow.getHandle(workflowId);
  const report = (node: string) =>
    handle.signal(nodeProgressSignal, { node, generation: 1, status: 'complete', state: {} });
  // One poller on the task queue (the other polls the worker's own sticky queue): it takes one task at a time.
  const worker = (cache: number) =>
    Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities,
      maxCachedWorkflows: cache,
      maxConcurrentWorkflowTaskPolls: cache === 0 ? 1 : 2,
    });

  // A worker with no cache (so no sticky queue) starts the rollout and goes away, as a crashed one would.
  await (
    await worker(0)
  ).runUntil(async () => {
    await env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId,
      args: [{ cluster: clusterName, spec }],
    });
    await eventually(async () => expect((await handle.query(statusQuery)).nodesInProgress).toBe(3));
    await eventually(async () => expect((await handle.describe()).raw.pendingWorkflowTask).toBeFalsy());
  });

  // Status queries sent while no workflow task is pending wait on the task queue for a worker; then node-1 reports.
  const answers: string[] = [];
  let firstAnswer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => (firstAnswer = resolve));
  const queries = Array.from({ length: 50 }, () =>
    env.client
      .withDeadline(Date.now() + 60_000, () => handle.query(statusQuery))
      .then((s) => {
        answers.push(s.completeNodes);
        firstAnswer();
      }),
  );
  await sleep(500);
  await report('node-1');
  const completions = async () =>
    (await handle.fetchHistory()).events!.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
      .length;
  const before = await completions();

  // A cold worker takes the queries first: to answer them it runs the rollout over node-1's report, which the task
  // still waiting behind them will bring, and keeps what it ran. node-2 reports before it takes that task (if the
  // race goes that way).
  let interleaved = false;
  await (
    await worker(100)
  ).runUntil(async () => {
    await answered;
    await report('node-2');
    expect(answers[0]).toBe('1/3');
    interleaved = (await completions()) === before;
    await eventually(async () => expect(await completions()).toBeGreaterThan(before), 30_000);
  });

  // What that worker recorded replays: the passes it ran over the two halves sent the commands one pass sends.
  const history = await handle.fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: bundle }, history, workflowId);

  // And the next worker, which must replay it, carries on.
  await (
    await worker(100)
  ).runUntil(async () => {
    await report('node-3');
    await statusBecomes(handle, 'complete');
  });
  if (interleaved) await recordHistory(env, workflowId, 'rollout-cold-query');
  await handle.terminate();
  // Every query settled before the test's connection closes (a query still retrying then fails the next test file).
  await Promise.allSettled(queries);
  return interleaved;
}

test('G15 status queries answered by a cold worker ahead of the workflow task they read from: the rollout still replays', async () => {
  let interleaved = false;
  for (let attempt = 1; attempt <= 3 && !interleaved; attempt++) interleaved = await coldQueries(attempt);
  expect(interleaved).toBe(true);
});

test('G15 queries change nothing: interleaved with signals, they leave no event and the history replays without them', async () => {
  const { env, bundle } = t;
  const nodes = ['node-1', 'node-2'];
  const cluster = new FakeCluster(nodes);
  const taskQueue = `queries-${randomUUID()}`;
  const spec = rolloutSpec('queries', {
    interruptionBudget: { count: 2 },
    packages: { tools: { version: '1.0.0', image: 'ghcr.io/example/tools' } },
  });
  const workflowId = rolloutWorkflowId('queries', spec.name);
  const handle = env.client.workflow.getHandle(workflowId);
  const w = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: cluster.activities(env.client, `unpolled-${randomUUID()}`),
  });
  await w.runUntil(async () => {
    await env.client.workflow.start(rolloutWorkflow, { taskQueue, workflowId, args: [{ cluster: 'queries', spec }] });
    await eventually(async () => expect((await handle.query(statusQuery)).nodesInProgress).toBe(2));
    // Queries and progress reports at once: every answer is a state the signals produced, in order.
    const seen: string[] = [];
    const querying = (async () => {
      for (let i = 0; i < 40; i++) seen.push((await handle.query(statusQuery)).completeNodes);
    })();
    for (const [i, node] of nodes.entries()) {
      await handle.signal(nodeProgressSignal, { node, generation: 1, status: 'in_progress', state: {} });
      await sleep(50 * i);
      await handle.signal(nodeProgressSignal, { node, generation: 1, status: 'complete', state: {} });
    }
    await querying;
    expect(seen.every((c, i) => i === 0 || c >= seen[i - 1]!)).toBe(true);
    await statusBecomes(handle, 'complete');
    // Idle now: twenty queries add no event and get the same answer.
    const before = (await handle.describe()).historyLength;
    const first = await handle.query(statusQuery);
    for (let i = 0; i < 20; i++) expect(await handle.query(statusQuery)).toEqual(first);
    expect((await handle.describe()).historyLength).toBe(before);
  });
  // A replay has no queries in it; it must reach the same end.
  await Worker.runReplayHistory({ workflowBundle: bundle }, await handle.fetchHistory(), workflowId);
  await handle.terminate();
});
