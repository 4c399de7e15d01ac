import { WorkflowNotFoundError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { CancelledFailure } from '@temporalio/common';
import { ensureNodeWorkflows } from '../../activities/node-workflows';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { useTemporal } from './env';

// ensureNodeWorkflows (a pass's desires in one activity) against a real Temporal server: every node's workflow gets
// its signal with the shared and its own arguments; a retry resumes after the nodes its last heartbeat named; a
// cancelled activity starts no node workflow. No worker polls the queue: the workflows only need to exist.

const t = useTemporal();
const QUEUE = 'desire-sends-no-worker';

async function signalsOf(cluster: string, node: string): Promise<unknown[] | undefined> {
  const handle = t.env.client.workflow.getHandle(nodeWorkflowId(cluster, node));
  try {
    await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  const { events } = await handle.fetchHistory();
  return events!
    .filter((e) => e.workflowExecutionSignaledEventAttributes)
    .map((e) =>
      JSON.parse(Buffer.from(e.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!.data!).toString()),
    );
}

const input = (cluster: string, count: number) => ({
  cluster,
  signal: 'desire',
  shared: { rollout: 'r', generation: 3 },
  nodes: Array.from({ length: count }, (_, i) => ({
    node: `n-${String(i).padStart(2, '0')}`,
    ...(i === 1 && { own: { permit: 'p-1' } }),
  })),
});

test('each node gets its desire: the shared arguments and its own; the heartbeat names the nodes done', async () => {
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  await env.run(ensureNodeWorkflows, t.env.client, QUEUE, input('all', 20));
  expect(beats).toEqual([{ done: 0 }, { done: 16 }, { done: 20 }]);
  expect(await signalsOf('all', 'n-00')).toEqual([{ rollout: 'r', generation: 3 }]);
  expect(await signalsOf('all', 'n-01')).toEqual([{ rollout: 'r', generation: 3, permit: 'p-1' }]);
  expect(await signalsOf('all', 'n-19')).toEqual([{ rollout: 'r', generation: 3 }]);
});

test('a retry resumes after the nodes its last attempt heartbeated as done', async () => {
  const env = new MockActivityEnvironment({ heartbeatDetails: { done: 16 }, attempt: 2 });
  await env.run(ensureNodeWorkflows, t.env.client, QUEUE, input('resume', 20));
  expect(await signalsOf('resume', 'n-15')).toBeUndefined();
  expect(await signalsOf('resume', 'n-16')).toEqual([{ rollout: 'r', generation: 3 }]);
  expect(await signalsOf('resume', 'n-19')).toEqual([{ rollout: 'r', generation: 3 }]);
});

test('a cancelled activity (the rollout deleted) sends no further desire', async () => {
  const env = new MockActivityEnvironment();
  env.cancel();
  await expect(env.run(ensureNodeWorkflows, t.env.client, QUEUE, input('cancelled', 20))).rejects.toBeInstanceOf(
    CancelledFailure,
  );
  expect(await signalsOf('cancelled', 'n-00')).toBeUndefined();
});
