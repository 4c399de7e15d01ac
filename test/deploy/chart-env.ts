import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import YAML from 'yaml';
import { projectRoot, stateDir, toolPaths } from '../../deploy/dev/paths';

// The Helm chart as the deploy tests use it: rendered with the pinned helm, applied to the local RBAC apiserver,
// and a kubeconfig file holding a token of the worker's ServiceAccount, as a worker in the cluster would have.

export const chart = path.join(projectRoot, 'deploy', 'helm', 'keelson');
const tools = toolPaths();
export const helm = tools.helm;
const kubectl = path.join(tools.kubeBin, 'kubectl');

export type Doc = {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
} & Record<string, unknown>;

export function helmTemplate(release: string, namespace: string, ...sets: string[]): Doc[] {
  const args = ['template', release, chart, '-n', namespace, '--kube-version', '1.37.2'];
  const out = execFileSync(helm, [...args, ...sets.flatMap((s) => ['--set', s])], { encoding: 'utf8' });
  return YAML.parseAllDocuments(out)
    .map((d) => d.toJSON() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

/** `kubectl apply --server-side` of rendered documents; returns kubectl's output. */
/** What `helm template` says when it refuses the values; throws when it accepts them. */
export function helmRefusal(release: string, ...sets: string[]): string {
  try {
    execFileSync(helm, ['template', release, chart, '--kube-version', '1.37.2', ...sets.flatMap((s) => ['--set', s])], {
      stdio: 'pipe',
    });
  } catch (err) {
    return String((err as { stderr: Buffer }).stderr);
  }
  throw new Error(`helm template accepted ${sets.join(' ')}`);
}

export function applyDocs(docs: Doc[]): string {
  return execFileSync(kubectl, ['apply', '--server-side', '-f', '-'], {
    input: docs.map((d) => YAML.stringify(d)).join('---\n'),
    env: { ...process.env, KUBECONFIG: process.env.KUBECONFIG },
    encoding: 'utf8',
  });
}

/** Renders and applies the chart with no Keelson pods (the image is not on the fake nodes). */
export function applyChart(release: string, namespace: string): Doc[] {
  const docs = helmTemplate(release, namespace, 'worker.replicas=0', 'api.replicas=0');
  applyDocs(docs);
  return docs;
}

/** The worker's ServiceAccount name for a release (the chart's default naming). */
export const workerServiceAccount = (release: string) => `${release}-keelson-worker`;

/** Writes a kubeconfig file with an hour-long token of a release's ServiceAccount (the worker's by default). */
export async function serviceAccountKubeconfig(
  adminKc: KubeConfig,
  release: string,
  namespace: string,
  sa = workerServiceAccount(release),
): Promise<string> {
  const token = await adminKc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: sa,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'local', server: adminKc.getCurrentCluster()!.server, caFile: path.join(stateDir, 'pki', 'ca.crt') },
    ],
    users: [{ name: sa, token: token.status!.token }],
    contexts: [{ name: 'sa', cluster: 'local', user: sa }],
    currentContext: 'sa',
  });
  const file = path.join(os.tmpdir(), `${sa}-kubeconfig.yaml`);
  fs.writeFileSync(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

/** The Jobs namespace the chart makes by default for a release namespace. */
export const jobsNamespaceOf = (namespace: string) => `${namespace}-jobs`;

/** Deletes what the chart made outside its namespace (cluster-scoped RBAC, the Jobs namespace), then the namespace. */
export async function removeChart(adminKc: KubeConfig, release: string, namespace: string): Promise<void> {
  const rbac = adminKc.makeApiClient(RbacAuthorizationV1Api);
  for (const name of ['worker', 'api'].map((c) => `${release}-keelson-${namespace}-${c}`)) {
    await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
    await rbac.deleteClusterRole({ name }).catch(() => undefined);
  }
  for (const name of [jobsNamespaceOf(namespace), namespace]) {
    await adminKc
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name })
      .catch(() => undefined);
  }
}
