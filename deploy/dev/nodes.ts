import { ports } from './cluster';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';

export const fakeNodeAnnotation = 'kwok.x-k8s.io/node';

export function fakeNodeName(index: number): string {
  return `node-${String(index).padStart(3, '0')}`;
}

/** A fake node managed by kwok, labelled like a GPU worker in one of two zones and two pools. */
export function fakeNode(index: number): V1Node {
  const name = fakeNodeName(index);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [fakeNodeAnnotation]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node-role.kubernetes.io/worker': '',
        'topology.kubernetes.io/zone': index % 2 === 0 ? 'zone-a' : 'zone-b',
        'keelson.dev/pool': index % 4 < 2 ? 'gpu' : 'cpu',
        type: 'kwok',
      },
    },
    spec: {},
  };
}

function isReady(node: V1Node): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Points a node at kwok's kubelet endpoint (127.0.0.1:<port>), so the apiserver can fetch its pods' logs. kwok sets
 * it when a node first becomes Ready; nodes made before the port was set are brought up to date here.
 */
async function ensureKubeletEndpoint(core: CoreV1Api, node: V1Node, kubeletPort: number): Promise<void> {
  const hasAddress = (node.status?.addresses ?? []).some((a) => a.type === 'InternalIP' && a.address === '127.0.0.1');
  if (hasAddress && node.status?.daemonEndpoints?.kubeletEndpoint?.Port === kubeletPort) return;
  await core.patchNodeStatus(
    {
      name: node.metadata!.name!,
      body: {
        status: {
          addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
          daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
}

/** Creates fake nodes 0..count-1 that do not exist yet, and waits until all of them are Ready. */
export async function ensureNodes(
  kubeconfig: string,
  count: number,
  timeoutMs = 60_000,
  kubeletPort = ports.kwok,
): Promise<string[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const existing = new Set((await core.listNode()).items.map((n) => n.metadata?.name));
  const names = Array.from({ length: count }, (_, i) => fakeNodeName(i));
  for (let i = 0; i < count; i++) {
    if (!existing.has(names[i])) await core.createNode({ body: fakeNode(i) });
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const nodes = (await core.listNode()).items.filter((n) => names.includes(n.metadata?.name ?? ''));
    const ready = nodes.filter(isReady).length;
    if (ready === count) {
      for (const node of nodes) await ensureKubeletEndpoint(core, node, kubeletPort);
      return names;
    }
    if (Date.now() > deadline)
      throw new Error(`only ${ready} of ${count} fake nodes became Ready in ${timeoutMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
