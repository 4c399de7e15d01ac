import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import fs from 'node:fs';
import path from 'node:path';
import { kubeconfigPath, projectRoot } from './paths';
import { logFile, runningPid, sleep, startDetached, stopDetached } from './processes';
import { temporalAddress } from './temporal';

// Keelson's own processes on the local stack: the worker (and, once started by dev up, the API).
export const devCluster = 'local';
export const keelsonNamespace = 'keelson';
export const serviceComponents = ['worker'] as const;

export function serviceEnv(): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: temporalAddress,
    KUBECONFIG: kubeconfigPath,
    KEELSON_CLUSTER: devCluster,
    KEELSON_NAMESPACE: keelsonNamespace,
  };
}

async function ensureNamespace(name: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.readNamespace({ name });
  } catch {
    await core.createNamespace({ body: { metadata: { name } } });
  }
}

/** Starts the Keelson worker unless it runs; fails with the worker's own last words if it exits during start-up. */
export async function startServices(log: (line: string) => void): Promise<void> {
  await ensureNamespace(keelsonNamespace);
  if (runningPid('worker') !== undefined) {
    log('worker: already running');
    return;
  }
  const pid = startDetached(
    'worker',
    process.execPath,
    ['--import', 'tsx', path.join(projectRoot, 'workers', 'worker.ts')],
    serviceEnv(),
  );
  // The worker bundles its workflows and checks the Kubernetes floor before it polls; give it a moment to fail.
  for (let waited = 0; waited < 5_000; waited += 250) {
    await sleep(250);
    if (runningPid('worker') === undefined) {
      const tail = fs.readFileSync(logFile('worker'), 'utf8').trim().split('\n').slice(-5).join('\n');
      throw new Error(`the worker exited during start-up:\n${tail}`);
    }
  }
  log(`worker: running (pid ${pid}), task queue keelson, cluster ${devCluster}`);
}

export async function stopServices(): Promise<string[]> {
  const stopped: string[] = [];
  for (const name of [...serviceComponents].reverse()) if (await stopDetached(name)) stopped.push(name);
  return stopped;
}
