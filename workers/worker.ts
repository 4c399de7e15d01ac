import type http from 'node:http';
import { type KubeConfig, type V1Job } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities, workloadInformer } from '../activities';
import { makeClients, type Clients } from '../activities/clients';
import { checkKubernetes } from '../activities/server-version';
import { KEELSON_PREFIX, workflowIdPrefix } from '../model';
import { QUERY_TIMEOUT_MS, statusQuery, type RolloutStatusView } from '../workflows/messages';
import { activitySettings, loadConfig, type WorkerConfig } from './config';
import { SettingsError } from './temporal-settings';
import { TemporalCredentials } from './temporal-credentials';
import { NativeConnectionFollower } from './native-connection';
import { KeelsonMetrics, serveMetrics, type GaugeSources } from './metrics';
import { cachedWorkflowsFor, memoryLimitBytes } from './sizing';
import { deploymentOptions, followVersion, workerVersion, type VersionState, type WorkflowSource } from './versioning';
import { KeepAliveKubeConfig } from './kube-config';
import { preloadModules, workflowsPath } from './workflow-bundle';

// The Keelson worker: settings from the environment (G9), the Kubernetes floor checked against the server (G8),
// then rollout and node workflows with the real Kubernetes activities on one task queue.

function kubeConfig(config: WorkerConfig): KubeConfig {
  const kc = new KeepAliveKubeConfig();
  if (config.KUBECONFIG) kc.loadFromFile(config.KUBECONFIG);
  else kc.loadFromDefault();
  return kc;
}

/** The scrape-time sources of the gauges: running rollout workflows' status queries, and Keelson's Jobs. */
export function gaugeSources(config: WorkerConfig, temporal: Client, clients: Clients): GaugeSources {
  const idPrefix = workflowIdPrefix(config.KEELSON_CLUSTER, 'rollout');
  return {
    async rollouts(): Promise<RolloutStatusView[]> {
      const views: RolloutStatusView[] = [];
      const query = `WorkflowType = 'rolloutWorkflow' AND ExecutionStatus = 'Running'`;
      for await (const wf of temporal.workflow.list({ query })) {
        if (!wf.workflowId.startsWith(idPrefix)) continue;
        const handle = temporal.workflow.getHandle(wf.workflowId);
        views.push(await temporal.withDeadline(Date.now() + QUERY_TIMEOUT_MS, () => handle.query(statusQuery)));
      }
      return views;
    },
    async jobs(): Promise<V1Job[]> {
      const list = await clients.batch.listNamespacedJob({
        namespace: config.KEELSON_NAMESPACE,
        labelSelector: `${KEELSON_PREFIX}rollout`,
      });
      return list.items;
    },
  };
}

export interface RunningWorker {
  worker: Worker;
  /** Temporal client of the worker's own (activities and the worker version's checks). */
  temporal: Client;
  /** The workflow code the worker runs, for replaying histories against it. */
  workflowSource: WorkflowSource;
  /** What `/readyz` answers: an unversioned worker is ready; a versioned one once its build is current. */
  readiness: VersionState;
  metrics: KeelsonMetrics;
  metricsServer: http.Server;
  /** Stops the watches and closes the metrics endpoint and both Temporal connections (after worker.run() resolves). */
  close(): Promise<void>;
}

export async function startWorker(config: WorkerConfig): Promise<RunningWorker> {
  const kc = kubeConfig(config);
  const clients = makeClients(kc);
  const floor = await checkKubernetes(clients, config.KEELSON_NAMESPACE);
  if (!floor.ok) throw new SettingsError(floor.message);
  const credentials = await TemporalCredentials.load(config, log);
  const connection = await NativeConnection.connect(credentials.nativeOptions());
  const clientConnection = await Connection.connect(credentials.clientOptions());
  const temporal = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE });
  const metrics = new KeelsonMetrics({
    sources: gaugeSources(config, temporal, clients),
    refreshSeconds: config.KEELSON_METRICS_REFRESH_SECONDS,
    processMetrics: true,
  });
  const settings = activitySettings(config);
  const workloads = workloadInformer(kc, settings);
  // A prebuilt bundle makes a restart seconds instead of a webpack build (the same code either way).
  const workflowSource: WorkflowSource = config.KEELSON_WORKFLOW_BUNDLE
    ? { workflowBundle: { codePath: config.KEELSON_WORKFLOW_BUNDLE } }
    : { workflowsPath, bundlerOptions: { preloadModules } };
  const version = workerVersion(config);
  const readiness: VersionState = version
    ? { ready: false, reason: `build ${version.deploymentName}/${version.buildId} is not current yet` }
    : { ready: true, reason: 'unversioned worker' };
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.KEELSON_TASK_QUEUE,
    ...workflowSource,
    ...deploymentOptions(version),
    activities: createActivities({ kubeConfig: kc, temporal, settings, workloads, metrics }),
    maxConcurrentActivityTaskExecutions: config.KEELSON_MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentWorkflowTaskExecutions: config.KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS,
    maxCachedWorkflows: config.KEELSON_MAX_CACHED_WORKFLOWS ?? cachedWorkflowsFor(memoryLimitBytes()),
    shutdownGraceTime: `${config.KEELSON_SHUTDOWN_GRACE_SECONDS}s`,
  });
  const metricsServer = await serveMetrics(metrics, config.KEELSON_METRICS_ADDRESS, readiness);
  const follower = new NativeConnectionFollower(worker, credentials, log);
  await credentials.watch();
  return {
    worker,
    temporal,
    workflowSource,
    readiness,
    metrics,
    metricsServer,
    async close() {
      credentials.close();
      await follower.close();
      workloads.stop();
      await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
      await clientConnection.close();
      await worker.connection!.close();
    },
  };
}

/**
 * Installs the SDK runtime once per process, before any connection: SIGINT/SIGTERM/SIGQUIT/SIGUSR2 make the worker
 * stop polling and drain (running activities get KEELSON_SHUTDOWN_GRACE_SECONDS), and Temporal core serves its own
 * Prometheus metrics on KEELSON_SDK_METRICS_ADDRESS.
 */
export function installRuntime(config: WorkerConfig): void {
  const sdk = config.KEELSON_SDK_METRICS_ADDRESS;
  Runtime.install({
    shutdownSignals: ['SIGINT', 'SIGTERM', 'SIGQUIT', 'SIGUSR2'],
    telemetryOptions: sdk === 'off' ? {} : { metrics: { prometheus: { bindAddress: sdk } } },
  });
}

function log(line: string): void {
  process.stderr.write(`keelson worker: ${line}\n`);
}

async function main(): Promise<void> {
  const config = loadConfig();
  installRuntime(config);
  const running = await startWorker(config);
  process.stderr.write(
    `keelson worker: task queue ${config.KEELSON_TASK_QUEUE} on ${config.TEMPORAL_ADDRESS}, metrics on ` +
      `http://${config.KEELSON_METRICS_ADDRESS}/metrics (SDK: ${config.KEELSON_SDK_METRICS_ADDRESS}), ` +
      `${running.worker.options.maxCachedWorkflows} workflows cached at most\n`,
  );
  const version = workerVersion(config);
  const stopFollowing = new AbortController();
  const following = version
    ? followVersion(
        running.temporal,
        config,
        version,
        running.workflowSource,
        running.readiness,
        log,
        stopFollowing.signal,
      )
    : Promise.resolve();
  try {
    await running.worker.run();
  } finally {
    stopFollowing.abort();
    await following;
    await running.close();
  }
  process.stderr.write('keelson worker: drained and stopped\n');
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`keelson worker: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
