import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

// ensureNodeWorkflow: a workflow cannot start an unrelated workflow, so a rollout asks this activity to
// signal-with-start the node's entity workflow (`keelson/<cluster>/node/<node>`, conflict policy USE_EXISTING).
// The workflow is named by its type string so the worker does not import workflow code here.

export const NODE_WORKFLOW_TYPE = 'nodeWorkflow';

export function nodeWorkflowId(cluster: string, node: string): string {
  return `keelson/${cluster}/node/${node}`;
}

export async function ensureNodeWorkflow(
  client: Client | undefined,
  taskQueue: string,
  input: { cluster: string; node: string; signal: string; args: unknown[] },
): Promise<void> {
  if (!client) {
    throw ApplicationFailure.create({
      type: 'KeelsonMisconfigured',
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
