import { stackEnv } from '../deploy/dev/stack';
import { testWorkflowBundlePath } from './workflow-bundle';

// The settings (docs/settings.md) the harness gives every worker it starts, in-process or as a process, for the
// tests and the bench: its own cluster name, task queue and Jobs namespace, no shutdown grace, no SDK metrics.

export const TEST_AGENT_IMAGE = 'registry.example/skyhook/agent:6.4.1';

/** The names one Keelson under test owns, so that test files and runs side by side never see each other's work. */
export interface KeelsonNames {
  cluster: string;
  taskQueue: string;
  namespace: string;
}

export function keelsonNames(cluster: string, namespace = cluster): KeelsonNames {
  return { cluster, taskQueue: `keelson-${cluster}`, namespace };
}

export interface WorkerPlace {
  temporalAddress: string;
  kubeconfig: string;
  metricsAddress: string;
  /** A prebuilt workflow bundle; without it the worker builds its own. */
  workflowBundle?: string;
}

/** A worker of its own names at a place: the settings the tests and the bench have in common. */
export function workerSettings(names: KeelsonNames, place: WorkerPlace): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: place.temporalAddress,
    KUBECONFIG: place.kubeconfig,
    KEELSON_CLUSTER: names.cluster,
    KEELSON_TASK_QUEUE: names.taskQueue,
    KEELSON_NAMESPACE: names.namespace,
    KEELSON_AGENT_IMAGE: TEST_AGENT_IMAGE,
    KEELSON_SHUTDOWN_GRACE_SECONDS: '0',
    KEELSON_METRICS_ADDRESS: place.metricsAddress,
    KEELSON_SDK_METRICS_ADDRESS: 'off',
    ...(place.workflowBundle && { KEELSON_WORKFLOW_BUNDLE: place.workflowBundle }),
  };
}

/**
 * A test's worker: on the local stack with the run's workflow bundle, sized for tests (short image-pull grace, one
 * retry, failed Jobs kept the shortest time allowed, 1 s polls).
 */
export function testWorkerSettings(names: KeelsonNames, metricsAddress: string): Record<string, string> {
  const stack = stackEnv();
  return {
    ...workerSettings(names, {
      temporalAddress: stack.TEMPORAL_ADDRESS!,
      kubeconfig: stack.KUBECONFIG!,
      metricsAddress,
      workflowBundle: testWorkflowBundlePath(),
    }),
    KEELSON_IMAGE_PULL_GRACE_SECONDS: '5',
    KEELSON_BACKOFF_LIMIT: '1',
    KEELSON_JOB_RETENTION_SECONDS: '600',
    KEELSON_POLL_SECONDS: '1',
  };
}
