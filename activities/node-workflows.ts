import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { heartbeat, heartbeatTimeoutMs, lastHeartbeat, throwIfCancelled } from './activity-context';
import { nodeWorkflowId } from '../model/workflow-ids';
import { FAILURE_TYPES } from '../model/failure-types';

// ensureNodeWorkflow: a workflow cannot start an unrelated workflow, so a rollout asks this activity to
// signal-with-start the node's entity workflow (`keelson/<cluster>/node/<node>`, conflict policy USE_EXISTING).
// The workflow is named by its type string so the worker does not import workflow code here.

export const NODE_WORKFLOW_TYPE = 'nodeWorkflow';

export async function ensureNodeWorkflow(
  client: Client | undefined,
  taskQueue: string,
  input: { cluster: string; node: string; signal: string; args: unknown[] },
): Promise<void> {
  if (!client) {
    throw ApplicationFailure.create({
      type: FAILURE_TYPES.misconfigured,
      nonRetryable: true,
      message: 'ensureNodeWorkflow needs a Temporal client; the worker was created without one',
    });
  }
  await client.workflow.signalWithStart(NODE_WORKFLOW_TYPE, {
    workflowId: nodeWorkflowId(input.cluster, input.node),
    taskQueue,
    args: [{ cluster: input.cluster, node: input.node }],
    signal: input.signal,
    signalArgs: input.args,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

/**
 * How many signal-with-starts one ensureNodeWorkflows call keeps in flight. A window, not rounds: a round waits for
 * its slowest call before the next starts, and at N = 500 seven rounds of sixteen spread a batch's starts over 3 to
 * 4 s (bench/README.md), which the batch's barrier then waits for.
 */
export const IN_FLIGHT = 64;

/** The share of its heartbeat timeout an attempt may go without a beat before it starts no further call. */
const OVERDUE_SHARE = 0.8;

/**
 * ensureNodeWorkflow for many nodes in one activity (a batch's admission): each node's signal carries the shared
 * arguments and its own (a permit granted with its admission). Up to IN_FLIGHT calls run at once, in the nodes'
 * order; the heartbeat names how many nodes from the first are done, so a retry resumes there (a node signalled
 * twice takes the same desire as once, DesireArgs.permit). A cancelled rollout starts no further call, and every
 * call started settles before the activity ends, so no desire reaches a node after the rollout's forget. Nor does
 * a new one from an attempt the server may have timed out: after most of the heartbeat timeout with no beat, it
 * starts nothing more and fails, and its retry (or the rollout's cancellation) goes on from there.
 */
export async function ensureNodeWorkflows(
  client: Client | undefined,
  taskQueue: string,
  input: { cluster: string; signal: string; shared: object; nodes: { node: string; own?: object }[] },
): Promise<void> {
  const resumed = lastHeartbeat() as { done?: number } | undefined;
  const from = resumed?.done ?? 0;
  const timeoutMs = heartbeatTimeoutMs();
  let stop: { reason: unknown } | undefined;
  let lastBeat = performance.now();
  const beat = (done: number) => {
    // A gap near the timeout: the server may have timed this attempt out and handed the rollout on (a cancellation
    // the worker has not heard of yet, a forget sent since); none of its calls may start after that. The server
    // counts from the beat it received, which may have left late (the SDK holds beats back for up to 0.8 of the
    // timeout), so the gap allowed is that much.
    const now = performance.now();
    if (timeoutMs !== undefined && now - lastBeat >= OVERDUE_SHARE * timeoutMs) stop ??= { reason: overdue(timeoutMs) };
    lastBeat = now;
    heartbeat({ done });
  };
  const settled = new Array<boolean>(input.nodes.length).fill(false);
  let done = from;
  let next = from;
  beat(from);
  const send = async (i: number) => {
    const n = input.nodes[i]!;
    await ensureNodeWorkflow(client, taskQueue, {
      cluster: input.cluster,
      node: n.node,
      signal: input.signal,
      args: [{ ...input.shared, ...n.own }],
    });
    settled[i] = true;
    while (done < settled.length && settled[done]) done++;
    // Every completion beats, advanced or not: the beat is also how a cancellation reaches the activity.
    beat(done);
  };
  // Each lane takes the next node until none is left, a call has failed, the attempt is overdue or cancelled.
  const lane = async () => {
    for (;;) {
      // The node is taken before the await: lanes interleave there, and each must take a node of its own.
      const i = next++;
      if (i >= input.nodes.length) return;
      await throwIfCancelled();
      if (stop) return;
      await send(i).catch((reason: unknown) => {
        stop ??= { reason };
      });
    }
  };
  const lanes = Array.from({ length: Math.min(IN_FLIGHT, input.nodes.length - from) }, lane);
  const ended = await Promise.allSettled(lanes);
  const cancelled = ended.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (cancelled) throw cancelled.reason;
  if (stop) throw stop.reason;
}

function overdue(timeoutMs: number): ApplicationFailure {
  return ApplicationFailure.retryable(
    `no heartbeat for ${OVERDUE_SHARE * timeoutMs} ms of the ${timeoutMs} ms heartbeat timeout while node workflows were signalled: this attempt may have been timed out, so it starts no further signal`,
    FAILURE_TYPES.heartbeatOverdue,
  );
}
