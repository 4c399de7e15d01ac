import type { V1ConfigMap, V1Node } from '@kubernetes/client-node';
import { buildStageConfigMaps, type JobContext, type Package } from '../model';
import { applyPatch, type Clients } from './clients';
import { kube } from './kube-errors';

// The ConfigMaps a stage pod mounts (model/job.ts buildStageConfigMaps), upserted before the Job is created: a real
// kubelet would otherwise hold the pod in ContainerCreating.

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

/** Writes the ConfigMaps a stage pod mounts from the Node as read now; returns that Node. */
export async function upsertStageConfigMaps(clients: Clients, ctx: JobContext, pkg: Package): Promise<V1Node> {
  const node = await kube('get', `node ${ctx.node}`, () => clients.core.readNode({ name: ctx.node }));
  const facts = { labels: node.metadata?.labels ?? {}, annotations: node.metadata?.annotations ?? {} };
  for (const body of buildStageConfigMaps(ctx, pkg, facts)) await upsert(clients, ctx.namespace, body);
  return node;
}
