import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { NodeTimeouts } from '../activities/contract';
import type { BatchState, NodeState, PackageProgress, RolloutSpec, Stage, Status } from '../model';

// Every message of the node and rollout workflows, defined once: the workflows set handlers for them and the client
// sends them. This module imports only @temporalio/workflow and model types, so any side may import it.

/** The memo key of the rollout workflow's start that names who started it (the API token's name). */
export const STARTED_BY_MEMO = 'startedBy';
/** The memo key of the rollout workflow's start that names its owner (model/custom-resource/ownership.ts). */
export const OWNER_MEMO = 'owner';

/** Who asked for a pause, resume, disable or enable, and why: kept in history and shown in the UI. */
export interface Actor {
  /** The API token's name (set by the API, never by its caller). */
  actor: string;
  reason: string;
  /** Who the caller said it acts for (the CLI's `user@host`): not verified. */
  onBehalfOf?: string;
}

/** Who asked for a change that takes no reason (a spec update, a rerun, a reset): kept in history. */
export interface ChangedBy {
  actor: string;
}

/** The last change made to a rollout through its messages, shown by its status. */
export interface RolloutChange {
  action: 'update' | 'pause' | 'resume' | 'disable' | 'enable' | 'reset-batches';
  actor: string;
  reason?: string;
  onBehalfOf?: string;
  /** The spec generation after the change. */
  generation: number;
}

// ---- node workflow ------------------------------------------------------------------------------------------

/** How ensureNodeWorkflow starts a node workflow (signal-with-start): the node is all it needs to know. */
export interface NodeWorkflowStart {
  cluster: string;
  node: string;
}

/** Node-side knobs a rollout hands down with its desire (timeouts of the interrupt flow, history bound). */
export interface NodeSettings extends NodeTimeouts {
  /** Continue as new once the history has this many events (the server's suggestion also counts). */
  historyEventLimit: number;
}

export const DEFAULT_NODE_SETTINGS: NodeSettings = {
  protectedPodsTimeoutSeconds: 3600,
  drainTimeoutSeconds: 600,
  drainOnTimeout: 'wait',
  rebootTimeoutSeconds: 1800,
  historyEventLimit: 10_000,
};

export interface DesireArgs {
  rollout: string;
  spec: RolloutSpec;
  generation: number;
  settings: NodeSettings;
  /**
   * The rollout's identity across delete-and-recreate (its workflow's first run ID): with the generation it scopes the
   * agent's flag files, so a rollout started again under its name is not taken for done. Absent from older rollouts.
   */
  rolloutUid?: string;
  /**
   * An interrupt permit granted with the admission. The desire's activity may deliver it twice: the node takes a
   * permit it was handed this way once (NodeRollout.admissionPermit).
   */
  permit?: string;
}

export interface RolloutRefArgs {
  rollout: string;
}

export type NodeControlArgs = RolloutRefArgs & Actor;

export interface GrantArgs {
  rollout: string;
  permit: string;
}

export interface LeaseCheckArgs {
  rollout: string;
  /** The rollout run that asks: an answer reaching a later run (after a reset or a re-creation) is dropped. */
  epoch: string;
  /** How many permits the rollout had issued when it asked: grants after that are not in the answer. */
  asOf: number;
  /** What the rollout's books say of the node: the node answers only when it disagrees. */
  booked: string | null;
  queued: boolean;
  /**
   * The status the rollout holds for the node (absent from older rollouts): a node settled otherwise reports again,
   * the report that said so being lost (a reset of the rollout drops the signals after its point).
   */
  status?: Status;
}

/** What a node holds of one rollout's permits, as it answers a lease check it disagrees with. */
export interface LeaseReport extends NodeRef {
  epoch: string;
  asOf: number;
  phase: 'requested' | 'granted' | 'prepared' | null;
  permit: string | null;
}

export interface RerunArgs extends Partial<ChangedBy> {
  rollout: string;
  package: string;
  /** Without a stage the package runs again from the start; with one, that stage runs again. */
  stage?: Stage;
}

export interface NodeRolloutView {
  status: Status;
  generation: number;
  paused: boolean;
  disabled: boolean;
  packages: NodeState;
}

export interface NodeView {
  node: string;
  rollouts: Record<string, NodeRolloutView>;
  /** The rollout whose cordon Keelson holds on this node. */
  cordonedBy: string | null;
  /** The rollout whose interrupt permit this node holds or waits for. */
  interrupt: { rollout: string; phase: 'requested' | 'granted' | 'prepared'; permit: string | null } | null;
}

export const desireSignal = defineSignal<[DesireArgs]>('desire');
export const forgetSignal = defineSignal<[RolloutRefArgs]>('forget');
export const nodePauseSignal = defineSignal<[NodeControlArgs]>('pause');
export const nodeResumeSignal = defineSignal<[NodeControlArgs]>('resume');
export const nodeDisableSignal = defineSignal<[NodeControlArgs]>('disable');
export const nodeEnableSignal = defineSignal<[NodeControlArgs]>('enable');
export const grantInterruptSignal = defineSignal<[GrantArgs]>('grantInterrupt');
/** The rollout asks what the node holds of its permits; the node answers with leaseReport (G13, permits are leases). */
export const leaseCheckSignal = defineSignal<[LeaseCheckArgs]>('leaseCheck');
export const rerunUpdate = defineUpdate<void, [RerunArgs]>('rerun');
export const resetUpdate = defineUpdate<void, [RolloutRefArgs & Partial<ChangedBy>]>('reset');
export const nodeStateQuery = defineQuery<NodeView>('state');

// ---- rollout workflow ---------------------------------------------------------------------------------------

export interface NodeProgress {
  node: string;
  generation: number;
  status: Status;
  /** Node workflows before the local-node-calls patch send whole entries: the rollout keeps their progress part. */
  state: Record<string, PackageProgress>;
  /**
   * The workflow time of the write it reports and the node's count of its reports: a write activity run again (a
   * retry, a stalled worker's late attempt) sends an older report late, and the rollout drops it. Absent before the
   * local-node-calls patch, whose reports came from the workflow, in order.
   */
  order?: [number, number];
}

export interface NodeRef {
  node: string;
}

export interface ReleaseArgs {
  node: string;
  permit: string;
}

export interface PackageStatus {
  version: string;
  stage: Stage;
  state: NodeState[string]['state'];
  restarts: number;
}

export interface NodeStatusView {
  status: Status;
  compartment: string;
  packages: Record<string, PackageStatus>;
}

export interface CompartmentStatusView {
  matched: number;
  ceiling: number;
  inProgress: number;
  completed: number;
  progressPercent: number;
  batchState: BatchState;
}

/** Skyhook-compatible aggregate status (`rollout status NAME --json`). */
export interface RolloutStatusView {
  name: string;
  status: Status;
  generation: number;
  paused: boolean;
  disabled: boolean;
  nodes: Record<string, NodeStatusView>;
  compartmentStatuses: Record<string, CompartmentStatusView>;
  /** Nodes holding an interrupt permit now. */
  permits: string[];
  nodesInProgress: number;
  completeNodes: string;
  packageList: string;
  /** Absent until the rollout is updated, paused, resumed, disabled, enabled or has its batches reset. */
  lastChange?: RolloutChange;
}

export const nodeProgressSignal = defineSignal<[NodeProgress]>('nodeProgress');
export const requestInterruptSignal = defineSignal<[NodeRef]>('requestInterrupt');
export const releaseInterruptSignal = defineSignal<[ReleaseArgs]>('releaseInterrupt');
export const leaseReportSignal = defineSignal<[LeaseReport]>('leaseReport');
export const pauseSignal = defineSignal<[Actor]>('pause');
export const resumeSignal = defineSignal<[Actor]>('resume');
export const disableSignal = defineSignal<[Actor]>('disable');
export const enableSignal = defineSignal<[Actor]>('enable');
/** A validated new spec and who sends it (absent from older clients); returns the new generation. */
export const updateSpecUpdate = defineUpdate<{ generation: number }, [RolloutSpec, ChangedBy?]>('updateSpec');
/** Kept for histories that called it through Temporal directly; nothing in Keelson sends it (resetBatchState does). */
export const resetBatchesUpdate = defineUpdate<void, []>('resetBatches');
/** What a manual batch reset leaves: each compartment's batch state, and the generation it applies to. */
export interface BatchResetResult {
  generation: number;
  compartments: Record<string, BatchState>;
}
/** The manual batch reset (§2.2.6, `rollout reset-batches`), with who asked and why. */
export const resetBatchStateUpdate = defineUpdate<BatchResetResult, [Actor]>('resetBatchState');
export const statusQuery = defineQuery<RolloutStatusView>('status');

/**
 * How long a caller waits for a query's answer: shorter than the 10 s a query waits on a crashed worker's sticky
 * queue before Temporal hands it to another worker, so no query sent before a crash reaches a successor that has not
 * yet rebuilt the workflow (docs/operations.md, "A worker crash and status queries").
 */
export const QUERY_TIMEOUT_MS = 8_000;
