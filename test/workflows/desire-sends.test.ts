import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { CancelledFailure } from '@temporalio/common';
import { ensureNodeWorkflows, IN_FLIGHT } from '../../activities/node-workflows';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { useTemporal } from './env';

// ensureNodeWorkflows (a pass's desires in one activity) against a real Temporal server: every node's workflow gets
// its signal with the shared and its own arguments; the heartbeat names how many nodes from the first are done; a
// retry resumes there; a failed call ends the activity; a cancelled activity starts no node workflow. No worker polls
// the queue: the workflows only need to exist.

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
  const done = beats.map((b) => (b as { done: number }).done);
  expect(done[0]).toBe(0);
  expect(done.at(-1)).toBe(20);
  expect(done.every((d, i) => i === 0 || d >= done[i - 1]!)).toBe(true);
  expect(await signalsOf('all', 'n-00')).toEqual([{ rollout: 'r', generation: 3 }]);
  expect(await signalsOf('all', 'n-01')).toEqual([{ rollout: 'r', generation: 3, permit: 'p-1' }]);
  expect(await signalsOf('all', 'n-19')).toEqual([{ rollout: 'r', generation: 3 }]);
});

test('more nodes than calls in flight: every one is signalled once, and the last heartbeat names them all', async () => {
  const env = new MockActivityEnvironment();
  const count = IN_FLIGHT + 6;
  const beats: number[] = [];
  env.on('heartbeat', (d: unknown) => beats.push((d as { done: number }).done));
  await env.run(ensureNodeWorkflows, t.env.client, QUEUE, input('window', count));
  expect(beats.at(-1)).toBe(count);
  const nodes = input('window', count).nodes.map((n) => n.node);
  const signals = await Promise.all(nodes.map((n) => signalsOf('window', n)));
  expect(signals.map((s) => s?.length)).toEqual(nodes.map(() => 1));
});

/**
 * The real client, its calls counted and held once they are done until every call in flight is: then all of them
 * return in the same turn, so every lane takes its next node at once.
 */
function inStep(real: Client): { client: Client; maxInFlight: () => number } {
  let inFlight = 0;
  let max = 0;
  let held: (() => void)[] = [];
  const signalWithStart: Client['workflow']['signalWithStart'] = async (...args) => {
    inFlight++;
    max = Math.max(max, inFlight);
    const handle = await real.workflow.signalWithStart(...args);
    await new Promise<void>((resolve) => {
      held.push(resolve);
      if (held.length < inFlight) return;
      inFlight = 0;
      const all = held;
      held = [];
      for (const release of all) release();
    });
    return handle;
  };
  return { client: { workflow: { signalWithStart } } as unknown as Client, maxInFlight: () => max };
}

test('a heartbeat timeout of 0 (none) stops nothing', async () => {
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 0 });
  await env.run(ensureNodeWorkflows, t.env.client, QUEUE, input('no-timeout', 3));
  expect(await signalsOf('no-timeout', 'n-02')).toEqual([{ rollout: 'r', generation: 3 }]);
});

test('calls that end together each go on to a node of their own, and no more than IN_FLIGHT are in flight', async () => {
  const env = new MockActivityEnvironment();
  const count = IN_FLIGHT + 2;
  const spy = inStep(t.env.client);
  await env.run(ensureNodeWorkflows, spy.client, QUEUE, input('in-step', count));
  expect(spy.maxInFlight()).toBe(IN_FLIGHT);
  const nodes = input('in-step', count).nodes.map((n) => n.node);
  const signals = await Promise.all(nodes.map((n) => signalsOf('in-step', n)));
  expect(signals.map((s) => s?.length)).toEqual(nodes.map(() => 1));
});

test('an attempt that went most of its heartbeat timeout without a beat starts no further call', async () => {
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 200 });
  const count = IN_FLIGHT + 4;
  // Every call returns 300 ms after the server took it: the window's first beat comes past the timeout.
  const slow = {
    workflow: {
      signalWithStart: async (...args: Parameters<Client['workflow']['signalWithStart']>) => {
        const handle = await t.env.client.workflow.signalWithStart(...args);
        await new Promise((resolve) => setTimeout(resolve, 300));
        return handle;
      },
    },
  } as unknown as Client;
  await expect(env.run(ensureNodeWorkflows, slow, QUEUE, input('overdue', count))).rejects.toMatchObject({
    type: 'HeartbeatOverdue',
    nonRetryable: false,
  });
  expect(await signalsOf('overdue', 'n-00')).toEqual([{ rollout: 'r', generation: 3 }]);
  for (let i = IN_FLIGHT; i < count; i++) expect(await signalsOf('overdue', `n-${i}`)).toBeUndefined();
});

test('a failed call ends the activity with its error, and the heartbeat never passes the node that failed', async () => {
  const env = new MockActivityEnvironment();
  const beats: number[] = [];
  env.on('heartbeat', (d: unknown) => beats.push((d as { done: number }).done));
  const bad = input('failing', IN_FLIGHT + 4);
  // A BigInt has no JSON form: this node's signal cannot be encoded, so its call fails before it reaches the server.
  bad.nodes[4] = { node: 'n-04', own: { permit: 1n as unknown as string } };
  await expect(env.run(ensureNodeWorkflows, t.env.client, QUEUE, bad)).rejects.toThrow(/Unable to convert/);
  expect(Math.max(...beats)).toBeLessThanOrEqual(4);
  expect(await signalsOf('failing', 'n-03')).toEqual([{ rollout: 'r', generation: 3 }]);
  expect(await signalsOf('failing', 'n-04')).toBeUndefined();
  // The calls in flight when it failed settle; none of the lanes starts another.
  for (let i = IN_FLIGHT; i < IN_FLIGHT + 4; i++) expect(await signalsOf('failing', `n-${i}`)).toBeUndefined();
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
