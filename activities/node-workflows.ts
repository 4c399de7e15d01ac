import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { PermitLease } from '../workflows/interrupt-permits';
import { nodeStateQuery, QUERY_TIMEOUT_MS } from '../workflows/messages';

// ensureNodeWorkflow: a workflow cannot start an unrelated workflow, so a rollout asks this activity to
// signal-with-start the node's entity workflow (`keelson/<cluster>/node/<node>`, conflict policy USE_EXISTING).
// The workflow is named by its type string so the worker does not import workflow code here.

export const NODE_WORKFLOW_TYPE = 'nodeWorkflow';

export function nodeWorkflowId(cluster: string, node: string): string {
  return `keelson/${cluster}/node/${node}`;
}

function needClient(client: Client | undefined, activity: string): Client {
  if (client) return client;
  throw ApplicationFailure.create({
    type: 'KeelsonMisconfigured',
    nonRetryable: true,
    message: `${activity} needs a Temporal client; the worker was created without one`,
  });
}

export async function ensureNodeWorkflow(
  client: Client | undefined,
  taskQueue: string,
  input: { cluster: string; node: string; signal: string; args: unknown[] },
): Promise<void> {
  await needClient(client, 'ensureNodeWorkflow').workflow.signalWithStart(NODE_WORKFLOW_TYPE, {
    workflowId: nodeWorkflowId(input.cluster, input.node),
    taskQueue,
    args: [{ cluster: input.cluster, node: input.node }],
    signal: input.signal,
    signalArgs: input.args,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

/** Node workflows asked at once: enough for a large batch, few enough not to crowd the frontend. */
const LEASE_READS_AT_ONCE = 16;

/**
 * permitLeases: what each node workflow holds of one rollout's interrupt permits (G13, the rollout reconciles its
 * books with it). A node workflow that is not running holds nothing; one that does not answer (its worker is down)
 * is left out, so nothing changes for it.
 */
export async function permitLeases(
  client: Client | undefined,
  input: { cluster: string; rollout: string; nodes: string[] },
): Promise<PermitLease[]> {
  const temporal = needClient(client, 'permitLeases');
  const leases: PermitLease[] = [];
  const read = async (node: string): Promise<void> => {
    const handle = temporal.workflow.getHandle(nodeWorkflowId(input.cluster, node));
    try {
      if ((await handle.describe()).status.name !== 'RUNNING') return void leases.push({ node, running: false });
      const view = await temporal.withDeadline(Date.now() + QUERY_TIMEOUT_MS, () => handle.query(nodeStateQuery));
      const mine = view.interrupt?.rollout === input.rollout ? view.interrupt : null;
      leases.push({ node, running: true, phase: mine?.phase ?? null, permit: mine?.permit ?? null });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) leases.push({ node, running: false });
    }
  };
  const queue = [...input.nodes];
  await Promise.all(
    Array.from({ length: Math.min(LEASE_READS_AT_ONCE, queue.length) }, async () => {
      for (let node = queue.shift(); node !== undefined; node = queue.shift()) await read(node);
    }),
  );
  return leases;
}
