import { KubeConfig } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { makeClients } from '../activities/clients';
import { checkKubernetes } from '../activities/server-version';
import { activitySettings, ConfigError, loadConfig, type WorkerConfig } from './config';

// The Keelson worker: settings from the environment (G9), the Kubernetes floor checked against the server (G8),
// then rollout and node workflows with the real Kubernetes activities on one task queue.

function kubeConfig(config: WorkerConfig): KubeConfig {
  const kc = new KubeConfig();
  if (config.KUBECONFIG) kc.loadFromFile(config.KUBECONFIG);
  else kc.loadFromDefault();
  return kc;
}

export async function startWorker(config: WorkerConfig): Promise<Worker> {
  const kc = kubeConfig(config);
  const floor = await checkKubernetes(makeClients(kc), config.KEELSON_NAMESPACE);
  if (!floor.ok) throw new ConfigError(floor.message);
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const clientConnection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const temporal = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE });
  return Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.KEELSON_TASK_QUEUE,
    workflowsPath: require.resolve('../workflows'),
    activities: createActivities({ kubeConfig: kc, temporal, settings: activitySettings(config) }),
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const worker = await startWorker(config);
  process.stderr.write(`keelson worker: task queue ${config.KEELSON_TASK_QUEUE} on ${config.TEMPORAL_ADDRESS}\n`);
  await worker.run();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`keelson worker: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
