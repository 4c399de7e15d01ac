import { spawn } from 'node:child_process';
import { installScript, kubeconfigPath } from './paths';
import { startDevController } from './controller';
import { apiserverUrl, clusterComponents, startCluster, stopCluster } from './cluster';
import { runningPid } from './processes';
import { ensureNodes } from './nodes';
import { serviceComponents, serviceEnv, startServices, stopServices } from './services';
import { startTemporal, stopTemporal, temporalAddress, temporalUiUrl } from './temporal';

export interface StackOptions {
  nodes: number;
  /** Also install the custom resource definitions and run the controller (custom-resource mode). */
  customResources?: boolean;
  log: (line: string) => void;
}

/** Runs the tool installer, streaming its progress lines; it builds only what is missing from the cache. */
export function installTools(log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(installScript, [], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) log(line);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`tool install failed (exit ${code}):\n${stderr}`)),
    );
  });
}

/** Brings the local stack up; each part is started only if it is not running, so `up` twice is harmless. */
export async function stackUp(options: StackOptions): Promise<void> {
  await installTools(options.log);
  await startTemporal(options.log);
  await startCluster(options.log);
  const nodes = await ensureNodes(kubeconfigPath, options.nodes);
  options.log(`cluster: ${nodes.length} fake nodes Ready (${nodes[0]} .. ${nodes[nodes.length - 1]})`);
  await startServices(options.log);
  if (options.customResources) await startDevController(options.log);
}

export async function stackDown(): Promise<string[]> {
  const stopped = await stopServices();
  stopped.push(...(await stopCluster()));
  if (await stopTemporal()) stopped.push('temporal');
  return stopped;
}

export function stackEnv(): Record<string, string> {
  return {
    ...serviceEnv(),
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_UI_URL: temporalUiUrl,
    KUBECONFIG: kubeconfigPath,
    KEELSON_APISERVER_URL: apiserverUrl,
  };
}

export const stackComponents = ['temporal', ...clusterComponents, ...serviceComponents];

/** The stack's services that are running now (by pid file and live process). */
export function runningComponents(): string[] {
  return stackComponents.filter((name) => runningPid(name) !== undefined);
}
