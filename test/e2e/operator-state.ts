import { PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import { PREFIX, type NodeStateJson, type PackageEntry } from './e2e-stack';

// A node as a stopped Skyhook operator left it mid-rollout (docs/migration.md), for the migration files to take over.

/** A nodeState entry as the operator writes it, for a package of the simulator's images. */
export function operatorEntry(name: string, version: string, stage: string, state: string): PackageEntry {
  return { name, version, image: `registry.example/keelson/${name}`, stage, state };
}

/** The operator's marks of the rollout on the node: its nodeState, status annotation and label, operator version. */
export async function leaveOperatorState(
  core: CoreV1Api,
  node: string,
  rollout: string,
  state: NodeStateJson,
): Promise<void> {
  await core.patchNode(
    {
      name: node,
      body: {
        metadata: {
          labels: { [`${PREFIX}status_${rollout}`]: 'in_progress' },
          annotations: {
            [`${PREFIX}nodeState_${rollout}`]: JSON.stringify(state),
            [`${PREFIX}status_${rollout}`]: 'in_progress',
            [`${PREFIX}version_${rollout}`]: 'v0.13.0',
          },
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}
