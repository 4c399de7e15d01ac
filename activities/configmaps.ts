import type { V1ConfigMap } from '@kubernetes/client-node';
import { KEELSON_PREFIX, packageConfigMapName, safeLabelValue, type JobContext, type Package } from '../model';
import { mergePatch, type Clients } from './clients';
import { isConflict, kube } from './kube-errors';

// The ConfigMaps a stage pod mounts (§3.1): the node metadata (the Node's labels and annotations, and the package
// list the agent reads) and the package's configMap. Upserted before the Job is created; a real kubelet would
// otherwise hold the pod in ContainerCreating.

async function upsert(clients: Clients, namespace: string, body: V1ConfigMap): Promise<void> {
  const name = body.metadata!.name!;
  try {
    await clients.core.createNamespacedConfigMap({ namespace, body });
  } catch (err) {
    if (!isConflict(err)) {
      await kube('create', `configmap ${namespace}/${name}`, () => Promise.reject(err));
    }
    await kube('patch', `configmap ${namespace}/${name}`, () =>
      clients.core.patchNamespacedConfigMap(
        { name, namespace, body: { data: body.data, metadata: { labels: body.metadata?.labels } } },
        mergePatch,
      ),
    );
  }
}

export async function upsertStageConfigMaps(
  clients: Clients,
  ctx: JobContext,
  pkg: Package,
  agentImage: string,
): Promise<void> {
  const agentVersion = (pkg.agentImageOverride ?? agentImage).split(':').pop() ?? '';
  const node = await kube('get', `node ${ctx.node}`, () => clients.core.readNode({ name: ctx.node }));
  const labels = { [`${KEELSON_PREFIX}rollout`]: safeLabelValue(ctx.rollout) };
  const packages = {
    [pkg.name]: {
      name: pkg.name,
      version: pkg.version,
      image: pkg.image,
      agentImageOverride: pkg.agentImageOverride,
      interrupt: pkg.interrupt,
      configInterrupts: pkg.configInterrupts,
    },
  };
  await upsert(clients, ctx.namespace, {
    metadata: {
      name: ctx.nodeMetadataConfigMap,
      labels: { ...labels, [`${KEELSON_PREFIX}node`]: safeLabelValue(ctx.node) },
    },
    data: {
      'labels.json': JSON.stringify(node.metadata?.labels ?? {}),
      'annotations.json': JSON.stringify(node.metadata?.annotations ?? {}),
      'packages.json': JSON.stringify({ agentVersion, packages }),
    },
  });
  if (Object.keys(pkg.configMap ?? {}).length > 0) {
    await upsert(clients, ctx.namespace, {
      metadata: { name: packageConfigMapName(ctx.rollout, pkg), labels },
      data: { ...pkg.configMap },
    });
  }
}
