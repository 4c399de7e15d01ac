// The activities the workflows call, as types only: workflows import this file with `import type`, the
// Kubernetes implementation (activities/index.ts, createActivities) satisfies it, and workflow tests supply fakes.
import type {
  DrainRules,
  Interrupt,
  LabelSelector,
  NodeState,
  NodeWriteOrder,
  Package,
  RolloutKind,
  Stage,
  Status,
  Toleration,
} from '../model';
import type { Taint } from '../model/taints';
import type { ImagePolicy } from '../model/image-policy';

/** Identifies the rollout a piece of work belongs to, and where its metadata lives on Nodes and Jobs. */
export interface RolloutRef {
  rollout: string;
  kind: RolloutKind;
  /** Spec generation: scopes the agent's flag files and the Job identity. */
  generation: number;
  /**
   * The rollout's identity across delete-and-recreate (e.g. the rollout workflow's first run ID): scopes the agent's
   * flag files with the generation (§3.2). Optional; the worker's cluster name stands in when absent.
   */
  rolloutUid?: string;
}

export interface RunStageInput extends RolloutRef {
  node: string;
  package: Package;
  stage: Exclude<Stage, 'interrupt'>;
  /** The stage timeout: the Job's activeDeadlineSeconds and this activity's start-to-close timeout. */
  timeoutSeconds: number;
  additionalTolerations: Toleration[];
  /**
   * This run of the stage (G11): a Job under the stage's name that carries another run ID is stale, never adopted, and
   * replaced once it is gone. Absent in histories recorded before it: such Jobs are adopted as before.
   */
  runId?: string;
  /**
   * A stage of a package that ends in an interrupt: as RunInterruptInput.cordoned, a new Job is created only on a node
   * still unschedulable under this rollout's cordon, or the call fails as NotCordoned (patch cordon-guards).
   */
  cordoned?: true;
}

export interface RunInterruptInput extends RolloutRef {
  node: string;
  /** The package whose interrupt won the merge (§3.5); its image and identity name the Job. */
  owner: Package;
  interrupt: Interrupt;
  timeoutSeconds: number;
  additionalTolerations: Toleration[];
  /** As RunStageInput.runId: a retained interrupt Job of an earlier run is never adopted (G11). */
  runId?: string;
  /**
   * A reboot interrupt's wait for the node to come back, in the same activity once the Job completed (patch
   * reboot-in-interrupt): a new boot ID, then Ready, within timeoutSeconds, or the outcome fails as rebootTimeout.
   */
  reboot?: { previousBootId: string; timeoutSeconds: number };
  /**
   * The node must still be unschedulable under this rollout's cordon before the Job is created, or the call fails as
   * NotCordoned and creates nothing (patch interrupt-on-cordoned-node).
   */
  cordoned?: true;
}

export interface StageResult {
  outcome: 'complete' | 'failed';
  /** Complete, BackoffLimitExceeded, DeadlineExceeded, ImagePullBackOff, ... */
  reason: string;
  jobName: string;
  /** True when an existing Job or legacy Pod (Skyhook, NodeWright, earlier Keelson run) was waited on (G2). */
  adopted: boolean;
  /** Failed pod attempts seen (G6). */
  failedPods: number;
  /** Sanitized tail of the last failed pod's log (G7); empty when the stage completed. */
  logTail: string;
  /** Set for an adopted legacy raw Pod: its namespace. That Pod, not a Job, is deleted once the outcome is recorded. */
  podNamespace?: string;
  /**
   * A failure the watcher declared on a Job that has not finished (its pod refused, its image not pulled): left in
   * place, the Job could still start its pod, so it is deleted once recorded whatever the retention (G11).
   */
  unfinished?: true;
}

export interface StageJobRef {
  jobName: string;
}

/** A finished stage's Job (or adopted legacy Pod) to delete once its outcome is recorded (G3). */
export type FinishedStageJob = StageJobRef & { failed?: boolean; podNamespace?: string; unfinished?: true };

/**
 * A stopped run's Job (spec change, rerun, reset, forget), finished or not: deleted in the foreground, and the call
 * returns only once the Job and its pods are gone from the API server, so no other stage of the package starts beside
 * its executor (G11).
 */
export type StoppedStageJob = StageJobRef & { untilGone: true };

export interface WriteNodeStateInput extends RolloutRef {
  node: string;
  state: NodeState;
  status: Status;
  /** The annotation value Keelson last wrote (null: none yet); the patch tests it before replacing. */
  previous: string | null;
  /** The write's order, put on the Node with it; absent in writes scheduled before orders (G1). */
  order?: NodeWriteOrder;
  /** The order on the Node with `previous`, when the writer knows it: the patch tests it too (G1). */
  previousOrder?: NodeWriteOrder;
  /** Finished stage Jobs whose outcomes this state records: deleted once it is written (as deleteStageJob). */
  deleteJobs?: FinishedStageJob[];
  /** A signal sent once the state is written and the Jobs deleted: the node's progress report to its rollout. */
  report?: WorkflowSignal;
}

/** A signal to a workflow by its ID; a workflow that is gone takes nothing, and that is no failure. */
export interface WorkflowSignal {
  workflowId: string;
  signal: string;
  args: unknown[];
}

export interface NodeFacts {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  unschedulable: boolean;
  ready: boolean;
  bootId: string;
}

/** A node as a rollout lists it: no annotations (the node state in them is most of a Node's size). */
export type ListedNode = Omit<NodeFacts, 'annotations'>;

/** The worker's node-side timeouts and drain policy (its settings): a rollout records them once, at its start. */
export interface NodeTimeouts {
  protectedPodsTimeoutSeconds: number;
  drainTimeoutSeconds: number;
  drainOnTimeout: 'wait' | 'fail' | 'force';
  rebootTimeoutSeconds: number;
  /** Stage timeout when neither the package nor the rollout sets one; absent in rollouts recorded before it: 1h. */
  defaultStageTimeoutSeconds?: number;
}

/** The worker's settings a new rollout reads once, at its start. Absent fields: rollouts recorded before them. */
export interface RolloutWorkerSettings extends NodeTimeouts {
  /** The taint a runtime-required rollout tolerates when it picks nodes and removes from the nodes it finishes. */
  runtimeRequiredTaint?: Taint;
  /** The node metadata key prefix (the ignore label's too); absent: by the rollout's kind. */
  keyPrefix?: string;
}

export interface KeelsonActivities {
  /** The worker's settings for rollouts (interrupt flow, runtime-required taint, key prefix), read once by each. */
  nodeTimeouts(): Promise<RolloutWorkerSettings>;
  /** The worker's image policy, read by each rollout at its start and at every spec update. */
  imagePolicy(): Promise<ImagePolicy>;
  /** Create or adopt the stage Job and wait for its end; cancelling leaves the Job in place. */
  runStage(input: RunStageInput): Promise<StageResult>;
  /**
   * Create or adopt the merged interrupt Job once no package workload runs on the node (G2), and wait for it; with
   * `reboot`, then for the node to come back.
   */
  runInterrupt(input: RunInterruptInput): Promise<StageResult>;
  /** Patch a running stage Job's activeDeadlineSeconds after a stageTimeout change (G4). */
  setStageDeadline(input: StageJobRef & { activeDeadlineSeconds: number }): Promise<void>;
  /** spec.suspend on a stage Job: pause suspends, resume unsuspends (G5). */
  suspendStageJob(input: StageJobRef & { suspend: boolean }): Promise<void>;
  /**
   * Delete a finished Job; called only after its outcome is in node state (G3). A failed one (`failed`) is deleted
   * only when the worker's Job retention is 0 ("delete once recorded"); otherwise it keeps its logs for the TTL.
   */
  deleteStageJob(input: FinishedStageJob | StoppedStageJob): Promise<void>;
  /**
   * Whole-state write with a test-then-replace JSON Patch; returns the annotation value written (G1). A stale write
   * (the Node holds a write of a higher order) writes nothing, deletes none of its Jobs, sends no report, and returns
   * the value on the Node, with its order.
   */
  writeNodeState(input: WriteNodeStateInput): Promise<{ written: string; newerOnNode?: NodeWriteOrder }>;
  /**
   * writeNodeState under its own name for ordered writes (patch ordered-local-writes): a build from before orders
   * fails to replay a history that holds them, instead of replaying it as its own local writes.
   */
  writeNodeStateOrdered(input: WriteNodeStateInput): Promise<{ written: string; newerOnNode?: NodeWriteOrder }>;
  /**
   * Removes what Keelson wrote on the Node for this rollout (its state and status annotations, status label and
   * conditions) once the rollout is deleted: a rollout started again under the name starts fresh.
   */
  clearNodeState(input: RolloutRef & { node: string }): Promise<void>;
  /**
   * The node-state annotation as an operator or an earlier Keelson left it (migration), and node facts; with the order
   * of the write that put it there, when it has one (G1).
   */
  readNode(
    input: RolloutRef & { node: string },
  ): Promise<{ facts: NodeFacts; nodeState: string | null; nodeStateOrder?: NodeWriteOrder }>;
  /**
   * With `drainRules` (patch drain-check-with-cordon), then whether a drain by them has nothing to do on the node
   * (`nothingToDrain`): the drain activity is then not needed. Without, nothing (undefined).
   */
  cordon(
    input: RolloutRef & { node: string; drainRules?: DrainRules },
  ): Promise<{ nothingToDrain: boolean } | undefined>;
  /**
   * Removes only a cordon that this rollout's annotation says Keelson made; returns whether it uncordoned. `release`
   * is sent once the call is done: the node's interrupt permit going back to its rollout.
   */
  uncordon(input: RolloutRef & { node: string; release?: WorkflowSignal }): Promise<boolean>;
  /** Waits while a pod matching the selector is Running or Pending on the node; false on timeout. */
  waitForProtectedPods(input: { node: string; selector: LabelSelector; timeoutSeconds: number }): Promise<boolean>;
  /** Evicts the node's workload pods (PDBs respected) until done or timed out, then applies the policy. */
  /** `rules`: the rollout's drain options; absent in calls scheduled before them. */
  drain(input: {
    node: string;
    timeoutSeconds: number;
    onTimeout: 'wait' | 'fail' | 'force';
    rules?: DrainRules;
  }): Promise<void>;
  /** Waits for a boot ID different from the one given, then for Ready. */
  waitForReboot(input: { node: string; previousBootId: string; timeoutSeconds: number }): Promise<void>;
  removeTaint(input: { node: string; key: string; effect: string }): Promise<void>;
  listNodes(input: { selector: LabelSelector }): Promise<ListedNode[]>;
  /** Signal-with-start of a node workflow (workflows cannot start an unrelated workflow themselves). */
  ensureNodeWorkflow(input: { cluster: string; node: string; signal: string; args: unknown[] }): Promise<void>;
  /**
   * ensureNodeWorkflow for many nodes in one call (patch desires-in-one-activity): each signal's one argument is
   * `shared` with the node's `own` fields over it.
   */
  ensureNodeWorkflows(input: {
    cluster: string;
    signal: string;
    shared: object;
    nodes: { node: string; own?: object }[];
  }): Promise<void>;
}
