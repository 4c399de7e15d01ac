import type { WorkflowHandle } from '@temporalio/client';
import { StageSchema, type NodeState, type Stage, type Status } from '../model';
import { nodeStateQuery, QUERY_TIMEOUT_MS, rerunUpdate, resetUpdate, type NodeView } from '../workflows/messages';
import { nodeWorkflowId } from '../model/workflow-ids';
import type { KeelsonContext } from './connect';
import { InvalidError, mapErrors, NotFoundError } from './errors';
import { workflowLink } from './links';
import { answered } from './rollouts';

// Nodes: read a node workflow's state, rerun a package (or one stage of it), reset a rollout on a node.

export interface NodePackageReport {
  version: string;
  stage: Stage;
  state: NodeState[string]['state'];
  restarts: number;
  attempts: number;
  lastError?: string;
}

export interface NodeReport {
  node: string;
  workflowId: string;
  link: string;
  rollouts: Record<
    string,
    {
      status: Status;
      generation: number;
      paused: boolean;
      disabled: boolean;
      packages: Record<string, NodePackageReport>;
    }
  >;
  cordonedBy: string | null;
  interrupt: NodeView['interrupt'];
}

/**
 * Package entries by package name; while an old version is uninstalled, the entry of the version coming wins, unless
 * the uninstall is erroring: then the error is what the node waits on, so that entry is shown.
 */
export function packagesByName(state: NodeState): Record<string, NodePackageReport> {
  const out: Record<string, NodePackageReport> = {};
  const rank = (e: NodeState[string]) => (e.state === 'erroring' ? 2 : e.stage !== 'uninstall' ? 1 : 0);
  const entries = Object.values(state).sort((a, b) => rank(a) - rank(b));
  for (const e of entries) {
    out[e.name] = {
      version: e.version,
      stage: e.stage,
      state: e.state,
      restarts: e.restarts ?? 0,
      attempts: e.attempts ?? 0,
      ...(e.lastError !== undefined && { lastError: e.lastError }),
    };
  }
  return out;
}

export function nodeReport(ctx: KeelsonContext, view: NodeView): NodeReport {
  const workflowId = nodeWorkflowId(ctx.cluster, view.node);
  return {
    node: view.node,
    workflowId,
    link: workflowLink(ctx, workflowId),
    rollouts: Object.fromEntries(
      Object.entries(view.rollouts).map(([name, r]) => [
        name,
        {
          status: r.status,
          generation: r.generation,
          paused: r.paused,
          disabled: r.disabled,
          packages: packagesByName(r.packages),
        },
      ]),
    ),
    cordonedBy: view.cordonedBy,
    interrupt: view.interrupt,
  };
}

async function runningNode(ctx: KeelsonContext, node: string): Promise<WorkflowHandle> {
  const what = `node ${node}`;
  const handle = ctx.client.workflow.getHandle(nodeWorkflowId(ctx.cluster, node));
  const d = await mapErrors(what, () => handle.describe());
  if (d.status.name !== 'RUNNING') throw new NotFoundError(`${what} not found (its workflow is ${d.status.name})`);
  return ctx.client.workflow.getHandle(d.workflowId, d.runId);
}

/** What the node workflow holds for every rollout on the node (query `state`). */
export async function nodeStatus(ctx: KeelsonContext, node: string): Promise<NodeReport> {
  const handle = await runningNode(ctx, node);
  return nodeReport(ctx, await answered(ctx, `node ${node}`, () => handle.query(nodeStateQuery), QUERY_TIMEOUT_MS));
}

/** Runs a package again on a node: from its first stage, or only the given stage. */
export async function rerun(
  ctx: KeelsonContext,
  node: string,
  args: { rollout: string; package: string; stage?: string; actor: string },
): Promise<{ node: string; workflowId: string; link: string }> {
  let stage: Stage | undefined;
  if (args.stage !== undefined) {
    const parsed = StageSchema.safeParse(args.stage);
    if (!parsed.success) {
      throw new InvalidError([
        { path: 'stage', message: `${JSON.stringify(args.stage)} is not one of ${StageSchema.options.join(', ')}` },
      ]);
    }
    stage = parsed.data;
  }
  const handle = await runningNode(ctx, node);
  await answered(ctx, `node ${node}`, () =>
    handle.executeUpdate(rerunUpdate, {
      args: [{ rollout: args.rollout, package: args.package, ...(stage && { stage }), actor: args.actor }],
    }),
  );
  return { node, workflowId: handle.workflowId, link: workflowLink(ctx, handle.workflowId) };
}

/** Forgets every package entry of a rollout on a node: the node runs that rollout's packages from the start. */
export async function reset(
  ctx: KeelsonContext,
  node: string,
  rollout: string,
  actor: string,
): Promise<{ node: string; workflowId: string; link: string }> {
  const handle = await runningNode(ctx, node);
  await answered(ctx, `node ${node}`, () => handle.executeUpdate(resetUpdate, { args: [{ rollout, actor }] }));
  return { node, workflowId: handle.workflowId, link: workflowLink(ctx, handle.workflowId) };
}
