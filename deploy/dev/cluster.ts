import { ApiextensionsV1Api, KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { ensurePki, kubeconfigYaml, type Pki } from './pki';
import { kubeconfigPath, projectRoot, stateDir, toolPaths } from './paths';
import { logFile, portOpen, runningPid, startDetached, stopDetached, waitFor } from './processes';

// Fixed loopback ports, overridable, so that `keelson dev env` can always say where things are. Below Linux's
// ephemeral range (32768 and up), where the kernel hands out ports to anything that asks for a free one: the Temporal
// dev server's HTTP, metrics and internal ports once took the apiserver's old 36443 before it started.
export const ports = {
  etcdClient: Number(process.env.KEELSON_ETCD_PORT ?? 12379),
  etcdPeer: Number(process.env.KEELSON_ETCD_PEER_PORT ?? 12380),
  apiserver: Number(process.env.KEELSON_APISERVER_PORT ?? 16443),
  controllerManager: Number(process.env.KEELSON_KCM_PORT ?? 16257),
  kwok: Number(process.env.KEELSON_KWOK_PORT ?? 16247),
};
export const apiserverUrl = `https://127.0.0.1:${ports.apiserver}`;

// Stop order is the reverse of this start order.
export const clusterComponents = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kwok', 'simulator'] as const;

function apiserverReady(pki: Pki): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      `${apiserverUrl}/readyz`,
      {
        ca: fs.readFileSync(pki.caCert),
        cert: fs.readFileSync(pki.adminCert),
        key: fs.readFileSync(pki.adminKey),
        timeout: 2000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

async function ensureRunning(
  name: string,
  port: number | undefined,
  start: () => void,
  log: (line: string) => void,
): Promise<void> {
  const pid = runningPid(name);
  if (pid !== undefined) {
    // Running, but not where this checkout expects it: started with other ports (say, before a port change).
    for (let waited = 0; port !== undefined && !(await portOpen(port)); waited += 500) {
      if (waited >= 15_000) {
        throw new Error(
          `${name} (pid ${pid}) is running but not on port ${port}: it was started with other ports; run \`keelson dev down\` first`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    return;
  }
  if (port !== undefined && (await portOpen(port))) {
    throw new Error(`port ${port} for ${name} is taken by a process Keelson did not start; stop it or change its port`);
  }
  log(`cluster: starting ${name}`);
  start();
}

/** Starts etcd, kube-apiserver, kube-controller-manager, kwok and the pod simulator; each only if not running. */
export async function startCluster(log: (line: string) => void): Promise<void> {
  const tools = toolPaths();
  const pki = ensurePki(path.join(stateDir, 'pki'));
  fs.writeFileSync(
    kubeconfigPath,
    kubeconfigYaml(apiserverUrl, pki, { name: 'keelson-admin', cert: pki.adminCert, key: pki.adminKey }),
  );
  const kube = (bin: string) => path.join(tools.kubeBin, bin);

  await ensureRunning(
    'etcd',
    ports.etcdClient,
    () =>
      startDetached('etcd', tools.etcd, [
        '--name=keelson',
        `--data-dir=${path.join(stateDir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${ports.etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${ports.etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
        `--initial-cluster=keelson=http://127.0.0.1:${ports.etcdPeer}`,
        '--unsafe-no-fsync',
        '--log-level=warn',
      ]),
    log,
  );
  await waitFor('etcd', () => portOpen(ports.etcdClient), 30_000, logFile('etcd'));

  await ensureRunning(
    'kube-apiserver',
    ports.apiserver,
    () =>
      startDetached('kube-apiserver', kube('kube-apiserver'), [
        `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${ports.apiserver}`,
        `--tls-cert-file=${pki.serverCert}`,
        `--tls-private-key-file=${pki.serverKey}`,
        `--client-ca-file=${pki.caCert}`,
        `--service-account-key-file=${pki.serviceAccountPub}`,
        `--service-account-signing-key-file=${pki.serviceAccountKey}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        '--service-cluster-ip-range=10.96.0.0/16',
        '--authorization-mode=RBAC',
        '--allow-privileged=true',
        '--endpoint-reconciler-type=none',
        // kwok plays every node's kubelet on 127.0.0.1 (pod logs go through it).
        '--kubelet-preferred-address-types=InternalIP',
        '--profiling=false',
        '-v=0',
      ]),
    log,
  );
  await waitFor('kube-apiserver', () => apiserverReady(pki), 90_000, logFile('kube-apiserver'));

  const kubeconfig = kubeconfigPath;
  await ensureLogsCrd(kubeconfig);
  await ensureRunning(
    'kube-controller-manager',
    ports.controllerManager,
    () =>
      startDetached('kube-controller-manager', kube('kube-controller-manager'), [
        `--kubeconfig=${kubeconfig}`,
        `--authentication-kubeconfig=${kubeconfig}`,
        `--authorization-kubeconfig=${kubeconfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${ports.controllerManager}`,
        `--service-account-private-key-file=${pki.serviceAccountKey}`,
        `--root-ca-file=${pki.caCert}`,
        '--use-service-account-credentials=false',
        '--controllers=*',
        // Enough throughput for benchmark-sized fleets on one machine.
        '--kube-api-qps=200',
        '--kube-api-burst=400',
        '--concurrent-job-syncs=50',
        '--concurrent-gc-syncs=50',
        '-v=0',
      ]),
    log,
  );

  await ensureRunning(
    'kwok',
    ports.kwok,
    () =>
      startDetached('kwok', path.join(tools.kwokBin, 'kwok'), [
        `--kubeconfig=${kubeconfig}`,
        '--manage-all-nodes=false',
        '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
        '--node-lease-duration-seconds=40',
        // kwok serves the kubelet API of all fake nodes (pod logs) on one loopback port, with the apiserver's cert.
        `--server-address=127.0.0.1:${ports.kwok}`,
        '--node-ip=127.0.0.1',
        `--node-port=${ports.kwok}`,
        `--tls-cert-file=${pki.serverCert}`,
        `--tls-private-key-file=${pki.serverKey}`,
        '--enable-crds=Logs',
        `--config=${path.join(__dirname, 'kwok', 'node-stages.yaml')}`,
      ]),
    log,
  );

  await ensureRunning(
    'simulator',
    undefined,
    () =>
      startDetached('simulator', process.execPath, ['--import', 'tsx', path.join(__dirname, 'simulator.ts')], {
        KUBECONFIG: kubeconfig,
      }),
    log,
  );
  log(`cluster: kube-apiserver ${apiserverUrl} ready; KUBECONFIG=${path.relative(projectRoot, kubeconfig)}`);
}

/**
 * kwok's `Logs` resource (kwok.x-k8s.io/v1alpha1): the pod simulator writes each workload pod's log to a file and
 * creates a Logs object that points kwok, which plays the kubelet, at it. The schema is left open: kwok is its only
 * reader. (client-node serializes by its own field names, hence x_kubernetes_preserve_unknown_fields.)
 */
const logsCrd: V1CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'logs.kwok.x-k8s.io' },
  spec: {
    group: 'kwok.x-k8s.io',
    scope: 'Namespaced',
    names: { kind: 'Logs', listKind: 'LogsList', plural: 'logs', singular: 'logs' },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
      },
    ],
  },
};

/** Installs kwok's Logs resource type unless the cluster has it with an open schema. */
async function ensureLogsCrd(kubeconfig: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const name = logsCrd.metadata!.name!;
  let existing: V1CustomResourceDefinition;
  try {
    existing = await api.readCustomResourceDefinition({ name });
  } catch {
    await api.createCustomResourceDefinition({ body: logsCrd });
    return;
  }
  if (!existing.spec.versions[0]?.schema?.openAPIV3Schema?.x_kubernetes_preserve_unknown_fields) {
    const body = { ...logsCrd, metadata: { name, resourceVersion: existing.metadata!.resourceVersion } };
    await api.replaceCustomResourceDefinition({ name, body });
  }
}

export async function stopCluster(): Promise<string[]> {
  const stopped: string[] = [];
  for (const name of [...clusterComponents].reverse()) {
    if (await stopDetached(name)) stopped.push(name);
  }
  return stopped;
}
