import type { KubeConfig } from '@kubernetes/client-node';
import type { NodeState, Package, Status } from '../model';
import type { KeelsonActivities, StageResult } from './contract';
import { makeClients } from './clients';
import { cordon, removeTaint, uncordon } from './cordon';
import { drain, nothingToDrain } from './drain';
import { runInterrupt } from './interrupt';
import { listNodes } from './nodes';
import { ensureNodeWorkflow, ensureNodeWorkflows } from './node-workflows';
import { signalWorkflow } from './workflow-signal';
import { clearNodeState, readNode, writeNodeState } from './node-state';
import { waitForProtectedPods } from './protected-pods';
import { waitForReboot } from './reboot';
import type { ActivityDeps, ActivitySettings } from './settings';
import { stageJobActivities } from './stage-jobs';
import { WorkloadInformer } from './workload-informer';
import { FAILURE_TYPES } from '../model/failure-types';

export type { ActivityDeps, ActivitySettings } from './settings';

/** What the activities report to, when the worker hands a metrics registry in (workers/metrics.ts implements it). */
export interface ActivityMetrics {
  nodeStateWritten(input: { rollout: string; status: Status; state: NodeState; previous: string | null }): void;
  nodeStateConflict(rollout: string): void;
  /** A failed stage Job was kept for its logs (the retention) when the node workflow asked for its deletion. */
  stageJobKept(): void;
  stageEnded(input: {
    rollout: string;
    package: string;
    version: string;
    stage: string;
    outcome: string;
    seconds: number;
    failedPods: number;
  }): void;
}

/** Reports a stage's duration and failed pods once its Job (or the adopted workload) has an outcome. */
async function timed(
  metrics: ActivityMetrics | undefined,
  id: { rollout: string; package: Package; stage: string },
  run: () => Promise<StageResult>,
): Promise<StageResult> {
  const started = Date.now();
  const result = await run();
  metrics?.stageEnded({
    rollout: id.rollout,
    package: id.package.name,
    version: id.package.version,
    stage: id.stage,
    outcome: result.outcome,
    seconds: (Date.now() - started) / 1000,
    failedPods: result.failedPods,
  });
  return result;
}

/** The shared watches the activities of one worker wait on (stop them when the worker ends). */
export function workloadInformer(kubeConfig: KubeConfig, settings: ActivitySettings): WorkloadInformer {
  return new WorkloadInformer(makeClients(kubeConfig), settings.namespace, settings.legacyPrefixes);
}

/** The Kubernetes implementation of the activity contract, over the clients and settings it is given. */
export function createActivities(deps: ActivityDeps & { metrics?: ActivityMetrics }): KeelsonActivities {
  const clients = makeClients(deps.kubeConfig);
  const { settings, metrics, workloads } = deps;
  const w = { clients, settings, workloads };
  const prefix = settings.keyPrefix;
  const stageJobs = stageJobActivities(w, metrics);
  const writeState: KeelsonActivities['writeNodeState'] = async (input) => {
    try {
      const out = await writeNodeState(clients, prefix, input);
      // A stale write wrote nothing, and its report would tell the rollout of a state older than the Node's.
      if (out.newerOnNode !== undefined) return out;
      metrics?.nodeStateWritten(input);
      // G3: a retry after a failed delete writes again (a no-op: the value is already there) before deleting. A stale
      // write deletes nothing: a Job name comes back (interrupts per node, stages on rerun), and a late attempt would
      // delete the newer Job; its writer hands the deletes to its next write.
      for (const job of input.deleteJobs ?? []) await stageJobs.deleteStageJob(job);
      // The report follows the write it tells of; a retry sends it again, which the rollout takes as the same.
      if (input.report) await signalWorkflow(deps.temporal, input.report);
      return out;
    } catch (err) {
      if ((err as { type?: string }).type === FAILURE_TYPES.foreignNodeStateWrite)
        metrics?.nodeStateConflict(input.rollout);
      throw err;
    }
  };

  return {
    ...stageJobs,
    runStage: (input) => timed(metrics, input, () => stageJobs.runStage(input)),
    runInterrupt: (input) =>
      timed(metrics, { rollout: input.rollout, package: input.owner, stage: 'interrupt' }, () =>
        runInterrupt(w, input),
      ),
    writeNodeState: writeState,
    writeNodeStateOrdered: writeState,
    readNode: (input) => readNode(clients, prefix, input),
    clearNodeState: (input) => clearNodeState(clients, prefix, input),
    cordon: async (input) => {
      await cordon(clients, prefix, input);
      if (!input.drainRules) return undefined;
      return { nothingToDrain: await nothingToDrain(clients, settings, input.node, input.drainRules) };
    },
    uncordon: async (input) => {
      const uncordoned = await uncordon(clients, prefix, input);
      // The permit goes back only once the node is schedulable (or still held by another rollout's cordon): the
      // budget counts cordoned nodes. A retry sends it again, which the rollout takes as the same.
      if (input.release) await signalWorkflow(deps.temporal, input.release);
      return uncordoned;
    },
    waitForProtectedPods: (input) => waitForProtectedPods(clients, settings, input),
    drain: (input) => drain(clients, settings, input),
    nodeTimeouts: async () => ({
      ...settings.nodeTimeouts,
      ...(settings.runtimeRequiredTaint && { runtimeRequiredTaint: settings.runtimeRequiredTaint }),
      ...(prefix !== undefined && { keyPrefix: prefix }),
    }),
    imagePolicy: async () => settings.imagePolicy,
    waitForReboot: (input) => waitForReboot(clients, settings, input),
    removeTaint: (input) => removeTaint(clients, input),
    listNodes: ({ selector }) => listNodes(clients, selector),
    ensureNodeWorkflow: (input) => ensureNodeWorkflow(deps.temporal, settings.taskQueue, input),
    ensureNodeWorkflows: (input) => ensureNodeWorkflows(deps.temporal, settings.taskQueue, input),
  };
}
