import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  KEELSON_PREFIX,
  NODE_METADATA_FILES,
  packageConfigMapName,
  safeLabelValue,
  type JobContext,
  type Package,
} from '../model';
import { applyPatch, type Clients } from './clients';
import { kube } from './kube-errors';

// The ConfigMaps a stage pod mounts (§3.1): the node metadata (the Node's labels and annotations, and the package
// list the agent reads) and the package's configMap. Upserted before the Job is created; a real kubelet would
// otherwise hold the pod in ContainerCreating.

/** Server-side apply: one request whether the ConfigMap exists or not, and keys Keelson no longer writes go. */
async function upsert(clients: Clients, namespace: string, body: V1ConfigMap): Promise<void> {
  const name = body.metadata!.name!;
  await kube('patch', `configmap ${namespace}/${name}`, () =>
    clients.core.patchNamespacedConfigMap(
      {
        name,
        namespace,
        body: { apiVersion: 'v1', kind: 'ConfigMap', ...body, metadata: { ...body.metadata, namespace } },
        fieldManager: 'keelson',
        force: true,
      },
      applyPatch,
    ),
  );
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
      [NODE_METADATA_FILES.labels]: JSON.stringify(node.metadata?.labels ?? {}),
      [NODE_METADATA_FILES.annotations]: JSON.stringify(node.metadata?.annotations ?? {}),
      [NODE_METADATA_FILES.packages]: JSON.stringify({ agentVersion, packages }),
    },
  });
  if (Object.keys(pkg.configMap ?? {}).length > 0) {
    await upsert(clients, ctx.namespace, {
      metadata: { name: packageConfigMapName(ctx.rollout, pkg), labels },
      data: { ...pkg.configMap },
    });
  }
}
