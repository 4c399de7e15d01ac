import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE_TYPES } from '../model/failure-types';
import { rolloutWorkflowId } from '../model/workflow-ids';
import { OWNER_MEMO } from '../workflows/messages';
import type { KeelsonContext } from './connect';
import { mapErrors, NotFoundError } from './errors';

// A start the worker refused: the rollout workflow checks its spec against the worker's image policy before it lists
// a node, and fails its run when the spec is outside it. The start itself succeeded, so the refusal is read here.

export interface StartRefusal {
  /** The worker's reason, naming each field, its value and what the policy allows. */
  message: string;
  /** The owner recorded by that start, when it recorded one. */
  owner?: string;
}

/** Why the last run of this rollout was refused at its start; undefined when it runs, ended otherwise or never ran. */
export async function startRefusal(ctx: KeelsonContext, name: string): Promise<StartRefusal | undefined> {
  const workflowId = rolloutWorkflowId(ctx.cluster, name);
  const d = await mapErrors(`rollout ${name}`, () => ctx.client.workflow.getHandle(workflowId).describe()).catch(
    (err: unknown) => {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    },
  );
  if (d?.status.name !== 'FAILED') return undefined;
  const failure = await mapErrors(`rollout ${name}`, () =>
    ctx.client.workflow.getHandle(workflowId, d.runId).result(),
  ).then(
    () => undefined,
    (err: unknown) => {
      if (err instanceof WorkflowFailedError) return err.cause;
      throw err;
    },
  );
  if (!(failure instanceof ApplicationFailure) || failure.type !== FAILURE_TYPES.invalidSpec) return undefined;
  const owner = d.memo?.[OWNER_MEMO];
  return { message: failure.message, ...(typeof owner === 'string' && { owner }) };
}
