import { execFileSync } from 'node:child_process';
import path from 'node:path';

// Everything the local stack writes lives under .keelson/ in the checkout (KEELSON_HOME overrides it).
export const projectRoot = path.resolve(__dirname, '..', '..');
export const stateDir = path.resolve(process.env.KEELSON_HOME ?? path.join(projectRoot, '.keelson'));
export const runDir = path.join(stateDir, 'run');
export const logDir = path.join(stateDir, 'logs');
export const kubeconfigPath = path.join(stateDir, 'kubeconfig.yaml');
export const installScript = path.join(__dirname, 'install-tools.sh');

export interface ToolPaths {
  kubeBin: string;
  etcd: string;
  kwokBin: string;
  temporal: string;
  temporalTestServer: string;
  /** The helm binary (deploy/helm/keelson is rendered with it in tests). */
  helm: string;
}

// The install script is the one place that knows versions and cache layout; ask it rather than repeat it.
export function toolPaths(): ToolPaths {
  const exports = execFileSync(installScript, ['--print-env'], { encoding: 'utf8' });
  const env = Object.fromEntries(
    exports
      .trim()
      .split('\n')
      .map((line) => line.replace(/^export /, '').split('=') as [string, string]),
  );
  return {
    kubeBin: env.KEELSON_KUBE_BIN!,
    etcd: env.KEELSON_ETCD_BIN!,
    kwokBin: env.KEELSON_KWOK_BIN!,
    temporal: env.TEMPORAL_CLI_PATH!,
    temporalTestServer: env.TEMPORAL_TEST_SERVER_PATH!,
    helm: env.KEELSON_HELM_BIN!,
  };
}
