import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
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
