import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowSignal } from './contract';
import { FAILURE_TYPES } from '../model/failure-types';

// A signal sent from an activity, where a workflow would pay a command, an event on each side and a workflow task
// for it: the node-state write reports the node's progress to its rollout this way.

export async function signalWorkflow(client: Client | undefined, s: WorkflowSignal): Promise<void> {
  if (!client) {
    throw ApplicationFailure.create({
      type: FAILURE_TYPES.misconfigured,
      nonRetryable: true,
      message: `signalling ${s.workflowId} needs a Temporal client; the worker was created without one`,
    });
  }
  try {
    await client.workflow.getHandle(s.workflowId).signal(s.signal, ...s.args);
  } catch (err) {
    // A rollout already gone has nothing to fold the report into.
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
