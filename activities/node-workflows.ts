import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { heartbeat, lastHeartbeat, throwIfCancelled } from './activity-context';
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

/** How many node workflows one ensureNodeWorkflows call signals at once. */
const AT_ONCE = 16;

/**
 * ensureNodeWorkflow for many nodes in one activity (a batch's admission): each node's signal carries the shared
 * arguments and its own (a permit granted with its admission). It heartbeats the nodes done after each round: a
 * retry resumes there (a node signalled twice takes the same desire as once, DesireArgs.permit), and a cancelled
 * rollout stops it before the next round, so no desire reaches a node after the rollout's forget.
 */
export async function ensureNodeWorkflows(
  client: Client | undefined,
  taskQueue: string,
  input: { cluster: string; signal: string; shared: object; nodes: { node: string; own?: object }[] },
): Promise<void> {
  const resumed = lastHeartbeat() as { done?: number } | undefined;
  for (let i = resumed?.done ?? 0; i < input.nodes.length; i += AT_ONCE) {
    heartbeat({ done: i });
    await throwIfCancelled();
    // Every call of the round settles before a failure ends the attempt: none is left in flight to land after it
    // (after the rollout's forget, say).
    const settled = await Promise.allSettled(
      input.nodes.slice(i, i + AT_ONCE).map((n) =>
        ensureNodeWorkflow(client, taskQueue, {
          cluster: input.cluster,
          node: n.node,
          signal: input.signal,
          args: [{ ...input.shared, ...n.own }],
        }),
      ),
    );
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
  heartbeat({ done: input.nodes.length });
}
