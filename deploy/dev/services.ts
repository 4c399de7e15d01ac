import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { kubeconfigPath, projectRoot, stateDir } from './paths';
import { logFile, portOpen, runningPid, sleep, startDetached, stopDetached, waitFor } from './processes';
import { temporalAddress, temporalUiUrl } from './temporal';

// Keelson's own processes on the local stack: the worker, the API, and the controller when asked for (controller.ts).
export const devCluster = 'local';
export const keelsonNamespace = 'keelson';
export const apiPort = Number(process.env.KEELSON_API_PORT ?? 7480);
export const apiUrl = `http://127.0.0.1:${apiPort}`;
export const serviceComponents = ['worker', 'api', 'controller'] as const;
const apiTokenFile = path.join(stateDir, 'api-token');

/** The local API's bearer token: random, made once, kept in .keelson/api-token (mode 0600). */
function apiToken(): string {
  if (!fs.existsSync(apiTokenFile)) {
    fs.mkdirSync(stateDir, { recursive: true });
    fs.writeFileSync(apiTokenFile, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  }
  return fs.readFileSync(apiTokenFile, 'utf8').trim();
}

export function serviceEnv(): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_UI_URL: temporalUiUrl,
    KUBECONFIG: kubeconfigPath,
    KEELSON_CLUSTER: devCluster,
    KEELSON_NAMESPACE: keelsonNamespace,
    KEELSON_API_URL: apiUrl,
    KEELSON_API_TOKEN: apiToken(),
  };
}

function lastLines(name: string): string {
  return fs.readFileSync(logFile(name), 'utf8').trim().split('\n').slice(-5).join('\n');
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
    return startApi(log);
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
    if (runningPid('worker') === undefined)
      throw new Error(`the worker exited during start-up:\n${lastLines('worker')}`);
  }
  log(`worker: running (pid ${pid}), task queue keelson, cluster ${devCluster}`);
  await startApi(log);
}

async function startApi(log: (line: string) => void): Promise<void> {
  if (runningPid('api') !== undefined) {
    log(`api: already running on ${apiUrl}`);
    return;
  }
  if (await portOpen(apiPort))
    throw new Error(`port ${apiPort} for the API is taken; stop its process or set KEELSON_API_PORT`);
  startDetached('api', process.execPath, ['--import', 'tsx', path.join(projectRoot, 'api', 'main.ts')], {
    ...serviceEnv(),
    KEELSON_API_HOST: '127.0.0.1',
    KEELSON_API_PORT: String(apiPort),
  });
  await waitFor(
    'keelson API',
    async () => {
      if (runningPid('api') === undefined) throw new Error(`the API exited during start-up:\n${lastLines('api')}`);
      return portOpen(apiPort);
    },
    30_000,
    logFile('api'),
  );
  log(`api: ${apiUrl} (token in .keelson/api-token)`);
}

export async function stopServices(): Promise<string[]> {
  const stopped: string[] = [];
  for (const name of [...serviceComponents].reverse()) if (await stopDetached(name)) stopped.push(name);
  return stopped;
}
