import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type WorkflowExecutionDescription } from '@temporalio/client';
import type { RolloutSpec } from '../model';
import { DEFAULT_ACTOR } from '../model/access';
import { API_OWNER, describeOwner, type RolloutOwner } from '../model/custom-resource/ownership';
import type { rolloutWorkflow } from '../workflows/rollout/workflow';
import {
  disableSignal,
  enableSignal,
  pauseSignal,
  QUERY_TIMEOUT_MS,
  resetBatchStateUpdate,
  resumeSignal,
  OWNER_MEMO,
  STARTED_BY_MEMO,
  statusQuery,
  updateSpecUpdate,
  type Actor,
  type BatchResetResult,
  type RolloutStatusView,
} from '../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId, workflowIdPrefix } from '../model/workflow-ids';
import { packageKey, rolloutKey, stateKey } from '../workflows/search-attributes';
import { canonicalJson } from './canonical';
import type { KeelsonContext } from './connect';
import { ConflictError, InvalidError, mapErrors, NotFoundError, translate } from './errors';
import { specFromHistory } from './history-spec';
import { workflowLink, workflowListLink } from './links';
import { validSpec } from './spec-input';

// Rollouts: start (idempotent), apply, update, steer, delete, read. Never waits on a rollout's progress.

export const ROLLOUT_WORKFLOW_TYPE = 'rolloutWorkflow';
/** Longest wait for an update's answer: a worker that does not answer is reported, not waited on. */
export const ANSWER_TIMEOUT_MS = 15_000;

export interface RolloutRef {
  name: string;
  workflowId: string;
  runId: string;
  links: { rollout: string; nodes: string };
}

export interface StartResult extends RolloutRef {
  /** false: a rollout of that name already ran with the same spec, and nothing was started. */
  created: boolean;
}

export interface ApplyResult extends RolloutRef {
  action: 'created' | 'unchanged' | 'updated';
  generation: number;
}

export type ControlKind = 'pause' | 'resume' | 'disable' | 'enable';

const CONTROL = { pause: pauseSignal, resume: resumeSignal, disable: disableSignal, enable: enableSignal };

export function rolloutRef(ctx: KeelsonContext, name: string, runId: string): RolloutRef {
  const workflowId = rolloutWorkflowId(ctx.cluster, name);
  return {
    name,
    workflowId,
    runId,
    links: {
      rollout: workflowLink(ctx, workflowId),
      nodes: workflowListLink(
        ctx,
        `WorkflowId STARTS_WITH "${workflowIdPrefix(ctx.cluster, 'node')}" AND KeelsonRollout = "${name}"`,
      ),
    },
  };
}

/** The running rollout's description; NotFoundError when there is none (never started, or deleted). */
async function running(ctx: KeelsonContext, name: string): Promise<WorkflowExecutionDescription> {
  const what = `rollout ${name}`;
  const d = await mapErrors(what, () => ctx.client.workflow.getHandle(rolloutWorkflowId(ctx.cluster, name)).describe());
  if (d.status.name !== 'RUNNING') throw new NotFoundError(`${what} not found (its last run is ${d.status.name})`);
  return d;
}

type OwnedChange = 'started' | 'updated' | 'deleted';

/**
 * Refuses a change of a rollout whose start recorded another owner (a resource's rollout changed through the API, or
 * the other way round): the owner's next pass would undo it, or never see it. A run with no owner recorded (started
 * before owners were) is anyone's: the controller judges those itself (controller/rollout-owner.ts).
 */
function ensureOwner(d: WorkflowExecutionDescription, name: string, owner: RolloutOwner, change: OwnedChange): void {
  const recorded = d.memo?.[OWNER_MEMO];
  if (typeof recorded !== 'string' || recorded === owner) return;
  const by = owner === API_OWNER ? 'through the API' : 'by this resource';
  throw new ConflictError(
    `rollout ${name} is owned by ${describeOwner(recorded, name)}; it may not be ${change} ${by}: ` +
      (recorded === API_OWNER ? 'use the API or the CLI' : 'change or delete the resource instead'),
    d.workflowId,
  );
}

/** Runs a call that needs a worker's answer, with a deadline. */
export function answered<T>(
  ctx: KeelsonContext,
  what: string,
  fn: () => Promise<T>,
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<T> {
  return mapErrors(what, () => ctx.connection.withDeadline(Date.now() + timeoutMs, fn));
}

/** The spec the rollout of this name runs with now; with `owned`, a ConflictError when another owns the rollout. */
export async function currentSpec(
  ctx: KeelsonContext,
  name: string,
  owned?: { owner: RolloutOwner; change: OwnedChange },
): Promise<{ rollout: RolloutSpec; runId: string }> {
  const d = await running(ctx, name);
  if (owned) ensureOwner(d, name, owned.owner, owned.change);
  return { rollout: await specFromHistory(ctx, d.workflowId, d.runId), runId: d.runId };
}

/**
 * The same rollout spec, pause and disable aside: they act only at start (later, `rollout pause`/`resume` do), so a
 * manifest whose pause changed, or one stored before spec.pause counted, is not a new spec.
 */
export function sameSpec(a: RolloutSpec, b: RolloutSpec): boolean {
  const settable = (s: RolloutSpec) => canonicalJson({ ...s, paused: false, disabled: false });
  return settable(a) === settable(b);
}

/**
 * Starts a rollout. Same name and same spec as the running one: nothing is started and the same IDs come back
 * (`created: false`). A different spec under a running name: ConflictError (use updateSpec or applyRollout).
 * `owner` is recorded in the start's memo: the API, or the kind of the custom resource that starts it.
 */
export async function startRollout(
  ctx: KeelsonContext,
  input: RolloutSpec,
  actor = DEFAULT_ACTOR,
  owner: RolloutOwner = API_OWNER,
): Promise<StartResult> {
  const rollout = validSpec(input);
  const workflowId = rolloutWorkflowId(ctx.cluster, rollout.name);
  try {
    const handle = await ctx.client.workflow.start<typeof rolloutWorkflow>(ROLLOUT_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: ctx.taskQueue,
      args: [{ cluster: ctx.cluster, spec: rollout }],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      memo: { [STARTED_BY_MEMO]: actor, [OWNER_MEMO]: owner },
      typedSearchAttributes: [
        { key: rolloutKey, value: [rollout.name] },
        { key: packageKey, value: Object.keys(rollout.spec.packages).sort() },
        { key: stateKey, value: 'unknown' },
      ],
      staticSummary: `rollout **${rollout.name}** (${rollout.kind}) on cluster ${ctx.cluster}`,
    });
    return { ...rolloutRef(ctx, rollout.name, handle.firstExecutionRunId), created: true };
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw translate(err, `rollout ${rollout.name}`);
  }
  // The same spec under another owner is still that owner's rollout: this start would not own what it returns.
  const current = await currentSpec(ctx, rollout.name, { owner, change: 'started' });
  if (!sameSpec(current.rollout, rollout)) {
    throw new ConflictError(
      `rollout ${rollout.name} is running with a different spec; update it instead (PUT /v1/rollouts/${rollout.name}, ` +
        '`keelson rollout apply`)',
      workflowId,
    );
  }
  return { ...rolloutRef(ctx, rollout.name, current.runId), created: false };
}

/** Replaces the spec of a running rollout; the same spec again changes nothing. Returns the spec generation. */
export async function updateSpec(
  ctx: KeelsonContext,
  name: string,
  input: RolloutSpec,
  actor = DEFAULT_ACTOR,
  owner: RolloutOwner = API_OWNER,
): Promise<{ changed: boolean; generation: number; ref: RolloutRef }> {
  const rollout = validSpec(input);
  if (rollout.name !== name) {
    throw new InvalidError([
      { path: 'metadata.name', message: `is ${JSON.stringify(rollout.name)}, not ${JSON.stringify(name)}` },
    ]);
  }
  const current = await currentSpec(ctx, name, { owner, change: 'updated' });
  const ref = rolloutRef(ctx, name, current.runId);
  const handle = ctx.client.workflow.getHandle(ref.workflowId);
  if (sameSpec(current.rollout, rollout)) {
    const status = await answered(ctx, `rollout ${name}`, () => handle.query(statusQuery), QUERY_TIMEOUT_MS);
    return { changed: false, generation: status.generation, ref };
  }
  const { generation } = await answered(ctx, `rollout ${name}`, () =>
    handle.executeUpdate(updateSpecUpdate, { args: [rollout, { actor }] }),
  );
  return { changed: true, generation, ref };
}

/** Starts the rollout, or updates the spec of the running one of that name. */
export async function applyRollout(
  ctx: KeelsonContext,
  input: RolloutSpec,
  actor = DEFAULT_ACTOR,
  owner: RolloutOwner = API_OWNER,
): Promise<ApplyResult> {
  const spec = validSpec(input);
  try {
    const started = await startRollout(ctx, spec, actor, owner);
    return { ...started, action: started.created ? 'created' : 'unchanged', generation: started.created ? 1 : 0 };
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
  }
  const { generation, ref } = await updateSpec(ctx, spec.name, spec, actor, owner);
  return { ...ref, action: 'updated', generation };
}

/** pause, resume, disable or enable: a signal that the rollout passes on to every node it reached. */
export async function controlRollout(
  ctx: KeelsonContext,
  name: string,
  kind: ControlKind,
  who: Actor,
): Promise<RolloutRef> {
  const d = await running(ctx, name);
  await mapErrors(`rollout ${name}`, () =>
    ctx.client.workflow.getHandle(d.workflowId, d.runId).signal(CONTROL[kind], who),
  );
  return rolloutRef(ctx, name, d.runId);
}

/**
 * The manual batch reset (§2.2.6): each compartment of the running rollout starts again from batch 1. An update, so
 * the answer carries the batch states it left.
 */
export async function resetBatches(
  ctx: KeelsonContext,
  name: string,
  who: Actor,
): Promise<RolloutRef & BatchResetResult> {
  const d = await running(ctx, name);
  const result = await answered(ctx, `rollout ${name}`, () =>
    ctx.client.workflow.getHandle(d.workflowId, d.runId).executeUpdate(resetBatchStateUpdate, { args: [who] }),
  );
  return { ...rolloutRef(ctx, name, d.runId), ...result };
}

/** How long a delete waits for the rollout's workflow to end (its nodes told to forget it). */
const DELETE_WAIT_MS = 30_000;

/**
 * Deletes a rollout: cancels its workflow, whose node workflows then forget it, and waits (up to 30 s) for it to end,
 * as `kubectl delete` waits for the object to go: a rollout started under the name afterwards is a new one, not the
 * one being deleted.
 */
export async function deleteRollout(
  ctx: KeelsonContext,
  name: string,
  actor = DEFAULT_ACTOR,
  owner: RolloutOwner = API_OWNER,
): Promise<RolloutRef> {
  const d = await running(ctx, name);
  ensureOwner(d, name, owner, 'deleted');
  const handle = ctx.client.workflow.getHandle(d.workflowId, d.runId);
  // The service call itself: the SDK's cancel() sends no reason, and the reason names who deleted it in history.
  await mapErrors(`rollout ${name}`, () =>
    ctx.client.workflowService.requestCancelWorkflowExecution({
      namespace: ctx.client.options.namespace,
      identity: ctx.client.options.identity,
      requestId: randomUUID(),
      workflowExecution: { workflowId: d.workflowId, runId: d.runId },
      reason: `deleted by ${actor}`,
    }),
  );
  // It ends cancelled (an error here); a larger fleet may take longer than the wait, and the delete goes on then.
  await ctx.client.withDeadline(Date.now() + DELETE_WAIT_MS, () => handle.result()).catch(() => undefined);
  return rolloutRef(ctx, name, d.runId);
}

export interface RolloutStatusResult extends RolloutStatusView {
  /** The name of the API token that started the rollout (its start memo); absent for rollouts started before. */
  startedBy?: string;
  /** Its owner, `api` or a resource kind (its start memo); absent for rollouts started before owners were recorded. */
  owner?: string;
  workflowId: string;
  runId: string;
  links: RolloutRef['links'] & { nodeWorkflows: Record<string, string> };
}

/** The Skyhook-compatible status (query `status`) with the workflow's IDs and UI links. */
export async function rolloutStatus(ctx: KeelsonContext, name: string): Promise<RolloutStatusResult> {
  const d = await running(ctx, name);
  const view = await answered(
    ctx,
    `rollout ${name}`,
    () => ctx.client.workflow.getHandle(d.workflowId, d.runId).query(statusQuery),
    QUERY_TIMEOUT_MS,
  );
  const ref = rolloutRef(ctx, name, d.runId);
  const nodeWorkflows = Object.fromEntries(
    Object.keys(view.nodes).map((n) => [n, workflowLink(ctx, nodeWorkflowId(ctx.cluster, n))]),
  );
  const startedBy = d.memo?.[STARTED_BY_MEMO];
  const owner = d.memo?.[OWNER_MEMO];
  return {
    ...view,
    ...(typeof startedBy === 'string' && { startedBy }),
    ...(typeof owner === 'string' && { owner }),
    workflowId: ref.workflowId,
    runId: ref.runId,
    links: { ...ref.links, nodeWorkflows },
  };
}

export interface RolloutListEntry {
  name: string;
  workflowId: string;
  runId: string;
  startTime: string;
  /** The status the workflow last published (search attribute KeelsonState). */
  status: string;
  packages: string[];
  link: string;
}

/** Running rollouts of this cluster, from Temporal visibility (eventually consistent: a new one shows up shortly). */
export async function listRollouts(ctx: KeelsonContext, limit = 1000): Promise<RolloutListEntry[]> {
  const prefix = rolloutWorkflowId(ctx.cluster, '');
  const query =
    `WorkflowType = '${ROLLOUT_WORKFLOW_TYPE}' AND WorkflowId STARTS_WITH '${prefix}' ` +
    `AND ExecutionStatus = 'Running'`;
  return mapErrors('rollouts', async () => {
    const out: RolloutListEntry[] = [];
    for await (const w of ctx.client.workflow.list({ query })) {
      const attrs = w.typedSearchAttributes;
      out.push({
        name: w.workflowId.slice(prefix.length),
        workflowId: w.workflowId,
        runId: w.runId,
        startTime: w.startTime.toISOString(),
        status: attrs.get(stateKey) ?? 'unknown',
        packages: attrs.get(packageKey) ?? [],
        link: workflowLink(ctx, w.workflowId),
      });
      if (out.length >= limit) break;
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  });
}
