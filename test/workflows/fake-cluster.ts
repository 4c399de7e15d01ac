import { ApplicationFailure, Context, heartbeat } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type {
  KeelsonActivities,
  NodeFacts,
  RolloutWorkerSettings,
  RunStageInput,
  StageResult,
} from '../../activities/contract';
import {
  encodeNodeState,
  selectorMatches,
  stageJobName,
  writtenAfter,
  type NodeState,
  type NodeWriteOrder,
  type Status,
} from '../../model';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { OPEN_IMAGE_POLICY, type ImagePolicy } from '../../model/image-policy';
import { signalWorkflow } from '../../activities/workflow-signal';
import { FAILURE_TYPES } from '../../model/failure-types';

// Fake Kubernetes for workflow tests: plain functions with the activity contract, recording every call. Jobs run
// for a scripted time while not suspended, then complete or fail; the workflows under test are real.

export interface StageScript {
  ms: number;
  fail?: boolean;
}

interface FakeJob {
  node: string;
  package: string;
  name: string;
  /** Set when the Job is deleted: its pod runs on until then (its grace period), as on a real node. */
  podGoneAt?: number;
  outcome?: 'complete' | 'failed';
  leftMs: number;
  fail: boolean;
  suspended: boolean;
  deadlineSeconds: number;
  /** Time run since the Job's deadline clock started (its start, or its last resume, as Kubernetes re-arms it). */
  armedMs: number;
  deadlineExceeded?: boolean;
}

export interface Write {
  node: string;
  rollout: string;
  state: NodeState;
  status: Status;
  generation: number;
  at: number;
  order?: NodeWriteOrder;
}

export class FakeCluster {
  readonly calls: { name: string; input: unknown; at: number }[] = [];
  readonly writes: Write[] = [];
  readonly jobs = new Map<string, FakeJob>();
  /** Every Job created (not adopted), in order. */
  readonly created: string[] = [];
  readonly annotations = new Map<string, string>();
  /** Per node and rollout, the order of the write whose state the annotation holds (as nodeStateOrder_<rollout>). */
  readonly writeOrders = new Map<string, NodeWriteOrder>();
  readonly cordoned = new Set<string>();
  /** Per node, the rollouts whose cordon is on it, as their annotations say. */
  readonly cordonHolders = new Map<string, Map<string, 'true' | 'preexisting'>>();
  maxCordoned = 0;
  /** Nodes being drained now. A node cordoned or draining is disrupted: the interruption budget bounds them. */
  readonly draining = new Set<string>();
  maxDisrupted = 0;
  /** Set when a test ends: every watcher gives up, so the worker can shut down. */
  stopped = false;
  readonly nodes: NodeFacts[];
  script: (input: RunStageInput) => StageScript = () => ({ ms: 100 });
  /** How long starting or signalling a node workflow takes, as on a busy Temporal server. */
  ensureNodeWorkflowMs = 0;
  /** ensureNodeWorkflow starts the node workflow; off, it only records the call (the test plays the nodes). */
  startNodeWorkflows = true;
  /** How long removeTaint takes before it removes the taint. */
  removeTaintMs = 0;
  /** How long a deleted Job's pod keeps running (its termination grace period). */
  podTerminationMs = 0;
  /** suspendStageJob is refused for good (RBAC), so a pause cannot stop a Job. */
  suspendForbidden = false;
  /** How long a drain takes. */
  drainMs = 0;
  /** Whether nodes run pods a drain evicts: with none, the cordon's drain check spares the drain activity. */
  workloadPods = true;
  /** How long runStage takes before it creates a new Job. */
  createDelayMs = 0;
  /** Jobs fail with DeadlineExceeded once they ran past activeDeadlineSeconds, as the Job controller fails them. */
  enforceDeadlines = false;
  /** How long the uncordon's call takes after the node is schedulable (a slow answer, or a worker about to crash). */
  uncordonMs = 0;
  /** Called as a rollout's uncordon makes a node schedulable. */
  onUncordon: (node: string) => void = () => undefined;
  /** How long the merged interrupt Job runs. */
  interruptMs = 0;
  /** The drain times out (policy `fail`), as with a pod that a PodDisruptionBudget never lets go. */
  drainTimesOut = false;
  /** The interrupt Job completes but the node never comes back with a new boot ID. */
  rebootHangs = false;
  /** G11/G12 breaches seen: a second executor of a package on a node, or a stage Job beside the interrupt. */
  readonly breaches: string[] = [];
  /** Every stage Job created, deleted ones included: their pods may still run. */
  private readonly everyJob: FakeJob[] = [];
  private readonly interrupting = new Set<string>();
  /** How long listing the nodes takes; the list is the one at the call, as a slow API server answers. */
  listNodesMs = 0;
  /** How long reading a node takes, by node name (the node workflow reads it first). */
  readNodeMs: Record<string, number> = {};
  /** What nodeTimeouts answers: the worker's settings, as a rollout reads them at its start. */
  nodeTimeouts: RolloutWorkerSettings = {
    protectedPodsTimeoutSeconds: 3600,
    drainTimeoutSeconds: 600,
    drainOnTimeout: 'wait',
    rebootTimeoutSeconds: 1800,
  };
  /** What imagePolicy answers: the worker's image policy, as a rollout reads it at its start and each update. */
  imagePolicy: ImagePolicy = OPEN_IMAGE_POLICY;
  /** How long each next imagePolicy call takes (ms), one entry per call; then at once. */
  imagePolicyDelays: number[] = [];

  constructor(nodeNames: string[], labels: (node: string) => Record<string, string> = () => ({})) {
    this.nodes = nodeNames.map((name) => ({
      name,
      labels: labels(name),
      annotations: {},
      taints: [],
      unschedulable: false,
      ready: true,
      bootId: `${name}-boot-0`,
    }));
  }

  private countDisrupted(): void {
    this.maxDisrupted = Math.max(this.maxDisrupted, new Set([...this.cordoned, ...this.draining]).size);
  }

  callsOf(name: string): { input: unknown; at: number }[] {
    return this.calls.filter((c) => c.name === name);
  }

  /** The stage runs of one node in start order, as `package@version:stage`. */
  stagesOn(node: string): string[] {
    return this.callsOf('runStage')
      .map((c) => c.input as RunStageInput)
      .filter((i) => i.node === node)
      .map((i) => `${i.package.name}@${i.package.version}:${i.stage}`);
  }

  /** Stage Jobs whose pod still runs on the node: unfinished, and not yet gone after a delete. */
  executing(node: string): FakeJob[] {
    const now = Date.now();
    return this.everyJob.filter(
      (j) => j.node === node && !j.outcome && (j.podGoneAt === undefined || now < j.podGoneAt),
    );
  }

  /** The node is unschedulable and the rollout's cordon annotation is on it. */
  private holdsCordon(node: string, rollout: string): boolean {
    return this.cordoned.has(node) && (this.cordonHolders.get(node)?.has(rollout) ?? false);
  }

  /** `kubectl uncordon`: the node is schedulable, the rollouts' cordon annotations stay. */
  uncordonByHand(node: string): void {
    this.cordoned.delete(node);
  }

  /** Lets the rollout's cordon go; the node is schedulable again when no other rollout holds one. */
  private uncordon(node: string, rollout: string): boolean {
    const holders = this.cordonHolders.get(node);
    const held = holders?.get(rollout);
    if (!holders || held === undefined) return false;
    holders.delete(rollout);
    const heir = [...holders.keys()][0];
    if (held === 'true' && heir !== undefined && ![...holders.values()].includes('true')) holders.set(heir, 'true');
    return held === 'true' && holders.size === 0 && this.cordoned.delete(node);
  }

  private deleteJob(jobName: string): void {
    const job = this.jobs.get(jobName);
    if (job) job.podGoneAt = Date.now() + this.podTerminationMs;
    this.jobs.delete(jobName);
  }

  /** Per node workflow, the local activity it has in flight. */
  private readonly localInFlight = new Map<string, string>();

  /**
   * A node workflow's local activities run one at a time (patch local-calls-in-turn): two in flight at once could
   * resolve in one activation on replay and in two live. A second one while another runs is a breach.
   */
  private oneLocalAtATime(activities: KeelsonActivities): KeelsonActivities {
    const checked: Record<string, unknown> = {};
    for (const [name, call] of Object.entries(activities) as [string, (...args: unknown[]) => Promise<unknown>][]) {
      checked[name] = async (...args: unknown[]) => {
        const info = Context.current().info;
        if (!info.isLocal || info.workflowType !== 'nodeWorkflow') return call(...args);
        const workflow = info.workflowExecution?.workflowId ?? '';
        const other = this.localInFlight.get(workflow);
        if (other !== undefined) this.breaches.push(`${workflow}: local activities ${other} and ${name} at once`);
        this.localInFlight.set(workflow, name);
        try {
          return await call(...args);
        } finally {
          if (this.localInFlight.get(workflow) === name) this.localInFlight.delete(workflow);
        }
      };
    }
    return checked as unknown as KeelsonActivities;
  }

  finish(jobName: string, outcome: 'complete' | 'failed'): void {
    const job = this.jobs.get(jobName);
    if (job) job.leftMs = 0;
    if (job) job.fail = outcome === 'failed';
  }

  activities(client: Client, taskQueue: string): KeelsonActivities {
    const record = (name: string, input: unknown) => this.calls.push({ name, input, at: Date.now() });
    // As the real activity: signal-with-start of the node's workflow.
    const startNode = (input: { cluster: string; node: string; signal: string; args: unknown[] }) =>
      client.workflow.signalWithStart('nodeWorkflow', {
        workflowId: nodeWorkflowId(input.cluster, input.node),
        taskQueue,
        args: [{ cluster: input.cluster, node: input.node }],
        signal: input.signal,
        signalArgs: input.args,
      });
    const waitJob = async (jobName: string, adopted: boolean): Promise<StageResult> => {
      const job = this.jobs.get(jobName)!;
      let last = Date.now();
      while (!job.outcome) {
        if (this.stopped) throw new Error('test over');
        heartbeat();
        // A real watcher ends when its cancellation is delivered (through the heartbeat).
        if (Context.current().cancellationSignal.aborted) await Context.current().cancelled;
        await new Promise((r) => setTimeout(r, 20));
        const now = Date.now();
        if (!job.suspended) {
          job.leftMs -= now - last;
          job.armedMs += now - last;
        }
        last = now;
        if (job.leftMs <= 0) job.outcome = job.fail ? 'failed' : 'complete';
        else if (this.enforceDeadlines && job.armedMs > job.deadlineSeconds * 1000) {
          job.outcome = 'failed';
          job.deadlineExceeded = true;
        }
      }
      const failed = job.outcome === 'failed';
      return {
        outcome: job.outcome,
        reason: job.deadlineExceeded ? 'DeadlineExceeded' : failed ? 'BackoffLimitExceeded' : 'Complete',
        jobName,
        adopted,
        failedPods: failed ? 2 : 0,
        logTail: failed ? `stage failed in ${jobName}` : '',
      };
    };
    const writeNodeState: KeelsonActivities['writeNodeState'] = async (input) => {
      const key = `${input.node}/${input.rollout}`;
      const written = encodeNodeState(input.state);
      const current = this.annotations.get(key) ?? null;
      const onNode = this.writeOrders.get(key);
      // As the real activity: the patch tests the state and, when given, the order it replaces.
      const orderTestFails = input.previousOrder && String(onNode) !== String(input.previousOrder);
      // A stale write (a later one's order on the Node) writes nothing, deletes no Job and sends no report.
      if (
        (current !== input.previous || orderTestFails) &&
        current !== null &&
        input.order &&
        onNode &&
        writtenAfter(onNode, input.order)
      ) {
        record('staleNodeStateWrite', input);
        return { written: current, newerOnNode: onNode };
      }
      // As the real activity: a retry after a write that landed finds its own value.
      if (current !== input.previous && current !== written) {
        record('foreignNodeStateWrite', input);
        throw ApplicationFailure.nonRetryable(`foreign writer on ${key}`, 'ForeignNodeStateWrite');
      }
      this.annotations.set(key, written);
      if (input.order) this.writeOrders.set(key, input.order);
      this.writes.push({
        node: input.node,
        rollout: input.rollout,
        state: input.state,
        status: input.status,
        generation: input.generation,
        at: Date.now(),
        ...(input.order && { order: input.order }),
      });
      // As the real activity: the Jobs whose outcomes this write records go after it.
      for (const job of input.deleteJobs ?? []) {
        record('deleteStageJob', job);
        this.deleteJob(job.jobName);
      }
      if (input.report) {
        record('report', input.report);
        await signalWorkflow(client, input.report);
      }
      return { written };
    };
    return this.oneLocalAtATime({
      nodeTimeouts: async () => {
        record('nodeTimeouts', {});
        return this.nodeTimeouts;
      },
      imagePolicy: async () => {
        record('imagePolicy', {});
        await new Promise((r) => setTimeout(r, this.imagePolicyDelays.shift() ?? 0));
        return this.imagePolicy;
      },
      runStage: async (input) => {
        record('runStage', input);
        const jobName = stageJobName({ ...input, package: input.package.name, version: input.package.version });
        const existing = this.jobs.get(jobName);
        // Creating takes a while (configMaps first, a slow API server): the workflow may stop the wait meanwhile.
        if (!existing && this.createDelayMs > 0) await new Promise((r) => setTimeout(r, this.createDelayMs));
        // As the real activity: an interrupting package's new Job only under the rollout's cordon, on a node still
        // unschedulable.
        if (!existing && input.cordoned && !this.holdsCordon(input.node, input.rollout)) {
          throw ApplicationFailure.nonRetryable(`node ${input.node} is not cordoned`, FAILURE_TYPES.notCordoned);
        }
        if (!existing) {
          this.created.push(jobName);
          const s = this.script(input);
          const beside = this.executing(input.node).filter((j) => j.package === input.package.name);
          if (beside.length > 0) this.breaches.push(`G11 ${jobName} created beside ${beside.map((j) => j.name)}`);
          if (this.interrupting.has(input.node)) this.breaches.push(`G12 ${jobName} created during the interrupt`);
          // An interrupting package's apply or upgrade runs under its rollout's cordon (kubectl uncordon by hand
          // aside, which leaves the cordon's annotation; the interrupt's own check catches that).
          if (
            input.package.interrupt &&
            (input.stage === 'apply' || input.stage === 'upgrade') &&
            !this.cordonHolders.get(input.node)?.has(input.rollout)
          )
            this.breaches.push(`G16 ${jobName} created on ${input.node}, which ${input.rollout} has not cordoned`);
          const job: FakeJob = {
            node: input.node,
            package: input.package.name,
            name: jobName,
            leftMs: s.ms,
            fail: !!s.fail,
            suspended: false,
            deadlineSeconds: input.timeoutSeconds,
            armedMs: 0,
          };
          this.jobs.set(jobName, job);
          this.everyJob.push(job);
        }
        return waitJob(jobName, existing !== undefined);
      },
      runInterrupt: async (input) => {
        record('runInterrupt', input);
        const cordoned = this.holdsCordon(input.node, input.rollout);
        if (input.cordoned && !cordoned) {
          throw ApplicationFailure.nonRetryable(`node ${input.node} is not cordoned`, FAILURE_TYPES.notCordoned);
        }
        if (!cordoned) this.breaches.push(`G16 interrupt on ${input.node}, which ${input.rollout} has not cordoned`);
        const beside = this.executing(input.node).map((j) => j.name);
        if (beside.length > 0) this.breaches.push(`G12 interrupt on ${input.node} beside ${beside}`);
        this.interrupting.add(input.node);
        await new Promise((r) => setTimeout(r, this.interruptMs));
        this.interrupting.delete(input.node);
        const node = this.nodes.find((n) => n.name === input.node)!;
        if (input.interrupt.type === 'reboot' && !this.rebootHangs)
          node.bootId = `${node.name}-boot-${this.callsOf('runInterrupt').length}`;
        const done = {
          outcome: 'complete' as const,
          reason: 'Complete',
          jobName: `interrupt-${input.node}`,
          adopted: false,
          failedPods: 0,
          logTail: '',
        };
        // As the activity: the reboot's wait in the same call, a node that does not come back a failed outcome.
        if (!input.reboot || node.bootId !== input.reboot.previousBootId) return done;
        const message = `node ${input.node} did not come back from its reboot within ${input.reboot.timeoutSeconds}s`;
        return { ...done, outcome: 'failed' as const, reason: 'RebootTimeout', logTail: `RebootTimeout: ${message}` };
      },
      setStageDeadline: async (input) => {
        record('setStageDeadline', input);
        const job = this.jobs.get(input.jobName);
        if (job) job.deadlineSeconds = input.activeDeadlineSeconds;
      },
      suspendStageJob: async (input) => {
        record('suspendStageJob', input);
        if (this.suspendForbidden) throw ApplicationFailure.nonRetryable('jobs.batch is forbidden', 'KubeForbidden');
        const job = this.jobs.get(input.jobName);
        if (job && job.suspended && !input.suspend) job.armedMs = 0;
        if (job) job.suspended = input.suspend;
      },
      deleteStageJob: async (input) => {
        record('deleteStageJob', input);
        this.deleteJob(input.jobName);
        // A foreground delete returns once the pod is gone.
        if ('untilGone' in input) await new Promise((r) => setTimeout(r, this.podTerminationMs));
      },
      writeNodeState,
      // The same write under its own name for ordered writes, as the real activities register it.
      writeNodeStateOrdered: writeNodeState,
      clearNodeState: async (input) => {
        record('clearNodeState', input);
        this.annotations.delete(`${input.node}/${input.rollout}`);
        this.writeOrders.delete(`${input.node}/${input.rollout}`);
      },
      readNode: async (input) => {
        record('readNode', input);
        const ms = this.readNodeMs[input.node] ?? 0;
        if (ms > 0) await new Promise((r) => setTimeout(r, ms));
        const facts = this.nodes.find((n) => n.name === input.node)!;
        const key = `${input.node}/${input.rollout}`;
        const order = this.writeOrders.get(key);
        return {
          facts: { ...facts },
          nodeState: this.annotations.get(key) ?? null,
          ...(order && { nodeStateOrder: order }),
        };
      },
      // As the real activities (activities/cordon.ts): each rollout's cordon is its own, `true` for the one that made
      // the node unschedulable and `preexisting` for the rest; the first hands `true` over when it lets go, and the
      // node is schedulable again only when the last one does.
      cordon: async (input) => {
        record('cordon', input);
        const holders = this.cordonHolders.get(input.node) ?? new Map<string, 'true' | 'preexisting'>();
        // A cordon held on a node made schedulable since (by hand) is this rollout's own again.
        if (!holders.has(input.rollout) || !this.cordoned.has(input.node))
          holders.set(input.rollout, this.cordoned.has(input.node) ? 'preexisting' : 'true');
        this.cordonHolders.set(input.node, holders);
        this.cordoned.add(input.node);
        this.maxCordoned = Math.max(this.maxCordoned, this.cordoned.size);
        this.countDisrupted();
        return input.drainRules ? { nothingToDrain: !this.workloadPods } : undefined;
      },
      uncordon: async (input) => {
        record('uncordon', input);
        const uncordoned = this.uncordon(input.node, input.rollout);
        if (uncordoned) this.onUncordon(input.node);
        if (this.uncordonMs > 0) await new Promise((r) => setTimeout(r, this.uncordonMs));
        // As the real activity: the permit goes back once the call is done.
        if (input.release) await signalWorkflow(client, input.release);
        return uncordoned;
      },
      waitForProtectedPods: async (input) => {
        record('waitForProtectedPods', input);
        return true;
      },
      drain: async (input) => {
        record('drain', input);
        this.draining.add(input.node);
        this.countDisrupted();
        await new Promise((r) => setTimeout(r, this.drainMs));
        this.draining.delete(input.node);
        if (this.drainTimesOut) {
          throw ApplicationFailure.create({
            type: 'DrainTimeout',
            nonRetryable: true,
            message: `drain of node ${input.node} timed out after ${input.timeoutSeconds}s; still on the node: default/db-0`,
          });
        }
      },
      waitForReboot: async (input) => {
        record('waitForReboot', input);
        const node = this.nodes.find((n) => n.name === input.node)!;
        if (node.bootId === input.previousBootId) {
          const message = `node ${input.node} did not come back from its reboot within ${input.timeoutSeconds}s`;
          throw ApplicationFailure.nonRetryable(message, 'RebootTimeout');
        }
      },
      removeTaint: async (input) => {
        record('removeTaint', input);
        await new Promise((r) => setTimeout(r, this.removeTaintMs));
        const node = this.nodes.find((n) => n.name === input.node)!;
        node.taints = node.taints.filter((t) => !(t.key === input.key && t.effect === input.effect));
      },
      listNodes: async (input) => {
        record('listNodes', input);
        // As the API server: the nodes the selector matches (an empty one matches every node).
        const nodes = this.nodes
          .filter((n) => selectorMatches(input.selector, n.labels))
          .map((n) => ({ ...n, taints: [...n.taints] }));
        await new Promise((r) => setTimeout(r, this.listNodesMs));
        return nodes;
      },
      ensureNodeWorkflow: async (input) => {
        record('ensureNodeWorkflow', input);
        await new Promise((r) => setTimeout(r, this.ensureNodeWorkflowMs));
        if (this.startNodeWorkflows) await startNode(input);
      },
      // As the real activity: one signal-with-start per node, each recorded as ensureNodeWorkflow would be.
      ensureNodeWorkflows: async (input) => {
        record('ensureNodeWorkflows', input);
        await new Promise((r) => setTimeout(r, this.ensureNodeWorkflowMs));
        for (const n of input.nodes) {
          const single = {
            cluster: input.cluster,
            node: n.node,
            signal: input.signal,
            args: [{ ...input.shared, ...n.own }],
          };
          record('ensureNodeWorkflow', single);
          if (this.startNodeWorkflows) await startNode(single);
        }
      },
    });
  }
}
