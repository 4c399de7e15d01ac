import { isGrpcServiceError, type Client, type HistoryAndWorkflowId } from '@temporalio/client';
import { Worker, type ReplayWorkerOptions, type WorkerOptions } from '@temporalio/worker';
import type { WorkerConfig } from './config';
import { promotionAction, type PromotionStep, type PromotionView } from '../model/worker-promotion';

// Worker Versioning (docs/operations.md, "Upgrading Keelson"). A versioned worker polls as one build of a Temporal
// Worker Deployment and gets workflow tasks only once its build is the deployment's current version. Rollout and
// node workflows live as long as their fleet, so they follow the current version at their next task (AUTO_UPGRADE):
// a pinned run would never leave an old build. What keeps a switch safe is that the new build replays the old
// histories: patched() and replay fixtures in development, and here, before a build is made current, a replay of
// every running workflow of the task queue against the build's own workflow code.

const GRPC_NOT_FOUND = 5;

export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

export function workerVersion(config: WorkerConfig): WorkerVersion | undefined {
  const { KEELSON_WORKER_DEPLOYMENT: deploymentName, KEELSON_WORKER_BUILD_ID: buildId } = config;
  return deploymentName && buildId ? { deploymentName, buildId } : undefined;
}

export function deploymentOptions(version: WorkerVersion | undefined): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return { workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'AUTO_UPGRADE' } };
}

export type WorkflowSource = Pick<ReplayWorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions'>;

export interface ReplayCheck {
  replayed: number;
  /** `<workflow ID>: <error>`, for each history the code does not replay. */
  failures: string[];
}

/** Replays histories against the workflow code; every one must replay for the code to take them over. */
export async function replayCheck(
  source: WorkflowSource,
  histories: AsyncIterable<HistoryAndWorkflowId> | Iterable<HistoryAndWorkflowId>,
  progress: (replayed: number) => void = () => undefined,
): Promise<ReplayCheck> {
  const check: ReplayCheck = { replayed: 0, failures: [] };
  for await (const result of Worker.runReplayHistories({ ...source, replayName: 'keelson-upgrade-check' }, histories)) {
    check.replayed++;
    if (result.error) check.failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
    if (check.replayed % 100 === 0) progress(check.replayed);
  }
  return check;
}

/** The histories of every running workflow of a task queue (rollouts and nodes alike), downloaded a few at once. */
export function runningHistories(temporal: Client, taskQueue: string): AsyncIterable<HistoryAndWorkflowId> {
  const query = `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`;
  return temporal.workflow.list({ query }).intoHistories({ concurrency: 5 });
}

/** What a worker needs to know of its deployment, and the token that makes a switch conditional on it. */
export interface DeploymentView extends PromotionView {
  conflictToken?: Uint8Array;
}

export async function deploymentView(temporal: Client, version: WorkerVersion): Promise<DeploymentView> {
  let info;
  let conflictToken;
  try {
    ({ workerDeploymentInfo: info, conflictToken } = await temporal.workflowService.describeWorkerDeployment({
      namespace: temporal.options.namespace,
      deploymentName: version.deploymentName,
    }));
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND)
      return { registered: false, servedBefore: false, newer: true };
    throw err;
  }
  const current = info?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
  const summaries = info?.versionSummaries ?? [];
  const created = (buildId: string | undefined) =>
    Number(summaries.find((v) => v.deploymentVersion?.buildId === buildId)?.createTime?.seconds ?? 0);
  const mine = summaries.find((v) => v.deploymentVersion?.buildId === version.buildId);
  return {
    ...(current && { current }),
    ...(conflictToken && { conflictToken }),
    registered: mine !== undefined,
    servedBefore: !!mine?.firstActivationTime,
    newer: !current || created(version.buildId) >= created(current),
  };
}

/** Makes the build current, refused by the server if the deployment changed since `conflictToken` was read. */
export async function makeCurrent(temporal: Client, version: WorkerVersion, conflictToken?: Uint8Array): Promise<void> {
  await temporal.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: temporal.options.namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity: temporal.options.identity,
    ...(conflictToken && { conflictToken }),
  });
}

/** Whether this worker's build is current: what its readiness reports, so a rolling update waits for the switch. */
export interface VersionState {
  ready: boolean;
  reason: string;
}

const RECHECK_MS = 10_000;

/**
 * Keeps `state` up to date for a versioned worker and, with promotion `replay-checked`, makes a new build current
 * once it replays every running workflow of the task queue. A build that does not replay them stays out of service
 * (not ready), and the current build keeps the workflows. A build takes over once, when it is new: one that served
 * before (an old pod restarting) or is older than the current one waits for `set-current-version`. Runs until
 * `signal` aborts.
 */
export async function followVersion(
  temporal: Client,
  config: WorkerConfig,
  version: WorkerVersion,
  source: WorkflowSource,
  state: VersionState,
  log: (line: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  const name = `${version.deploymentName}/${version.buildId}`;
  let step: PromotionStep = config.KEELSON_WORKER_PROMOTION === 'manual' ? 'follow' : 'check';
  let checkedUnder: string | undefined;
  while (!signal.aborted) {
    try {
      const view = await deploymentView(temporal, version);
      const current = view.current ?? 'none';
      const next = promotionAction(step, view, version.buildId, checkedUnder);
      step = next.step;
      if (next.action === 'ready') Object.assign(state, { ready: true, reason: `build ${name} is current` });
      else if (next.action === 'wait') {
        Object.assign(state, { ready: false, reason: `build ${name} is not yet known to its Worker Deployment` });
      } else if (next.action === 'check') {
        Object.assign(state, { ready: false, reason: `build ${name} is replaying the running workflows' histories` });
        log(`replaying the running workflows of ${config.KEELSON_TASK_QUEUE} before ${name} takes them over`);
        const check = await replayCheck(source, runningHistories(temporal, config.KEELSON_TASK_QUEUE), (n) =>
          log(`replayed ${n} running workflows`),
        );
        if (check.failures.length > 0) {
          const reason =
            `build ${name} does not replay ${check.failures.length} of ${check.replayed} running workflows, so it ` +
            `stays out of service and build ${current} keeps them; roll back, or fix and rebuild:\n  ` +
            check.failures.slice(0, 10).join('\n  ');
          Object.assign(state, { ready: false, reason });
          log(reason);
          return;
        }
        log(`replayed ${check.replayed} running workflows; making ${name} current (was ${current})`);
        step = 'promote';
        checkedUnder = view.current;
        continue;
      } else if (next.action === 'promote') {
        await makeCurrent(temporal, version, view.conflictToken);
        continue;
      } else {
        const reason = `build ${name} is not current (${current} is); make it so with set-current-version`;
        Object.assign(state, { ready: false, reason });
      }
    } catch (err) {
      // Temporal unavailable, or a switch refused before this worker's pollers are seen: tried again.
      log(`worker version ${name}: ${err instanceof Error ? err.message : String(err)}; trying again`);
    }
    await wait(state.ready ? RECHECK_MS : 2_000);
  }
}
