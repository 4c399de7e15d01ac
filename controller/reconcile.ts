import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { jsonPatch, mergePatch } from '../activities/clients';
import type { KeelsonContext } from '../client/connect';
import { NotFoundError } from '../client/errors';
import { deleteRollout } from '../client/rollouts';
import { CONTROLLER_ACTOR, resourceOwner } from '../model/custom-resource/ownership';
import { canonicalJson } from '../client/canonical';
import { desiredStatus } from './desired-status';
import { CLEANUP_FINALIZER, OPERATOR_FINALIZERS, type RolloutCollection, type RolloutResource } from './resources';
import { ownerOf, runningRollout } from './rollout-owner';

// One pass over one Skyhook or NodeWright resource: everything it needs comes from the resource and the rollout's
// workflow, so a restarted controller carries on from them. Delete runs the cleanup of the rollout it owns behind
// the finalizer; otherwise the status it should have is worked out (desired-status.ts) and written back.

export interface ReconcileDeps {
  kc: KubeConfig;
  keelson: KeelsonContext;
  /** The DeploymentPolicy resources known now, valid or not (an invalid one names no policy). */
  policies: () => unknown[];
  now?: () => string;
}

export async function reconcileResource(deps: ReconcileDeps, collection: RolloutCollection, resource: RolloutResource) {
  const custom = deps.kc.makeApiClient(CustomObjectsApi);
  const { name, finalizers = [], resourceVersion } = resource.metadata;
  const target = { ...collection.where, name };
  if (resource.metadata.deletionTimestamp) {
    const ours = [CLEANUP_FINALIZER, ...OPERATOR_FINALIZERS];
    if (!finalizers.some((f) => ours.includes(f))) return;
    // Only the owner's delete deletes the rollout: a resource whose name another owner holds goes alone.
    const rollout = await runningRollout(deps.keelson, name);
    if (rollout && (await ownerOf(deps.keelson, rollout)) === resourceOwner(collection.kind)) {
      await deleteRollout(deps.keelson, name, CONTROLLER_ACTOR, resourceOwner(collection.kind)).catch(
        (err: unknown) => {
          if (!(err instanceof NotFoundError)) throw err;
        },
      );
      // The finalizer stays until the rollout's run has ended, its nodes told to forget it: a cleanup that outlasts
      // the delete's wait (a large fleet, workers down) is looked at again at the next pass, not dropped.
      if (await runningRollout(deps.keelson, name)) return;
    }
    const rest = finalizers.filter((f) => !ours.includes(f));
    await custom.patchClusterCustomObject(
      { ...target, body: { metadata: { finalizers: rest, resourceVersion } } },
      mergePatch,
    );
    return;
  }
  if (!finalizers.includes(CLEANUP_FINALIZER)) {
    // The resourceVersion makes a stale read fail (409) instead of dropping a finalizer added meanwhile.
    await custom.patchClusterCustomObject(
      { ...target, body: { metadata: { finalizers: [...finalizers, CLEANUP_FINALIZER], resourceVersion } } },
      mergePatch,
    );
  }
  const now = deps.now?.() ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const read = async () => (await custom.getClusterCustomObject(target)) as RolloutResource;
  const { next, previous } = await desiredStatus(deps, collection.kind, resource, now, read);
  if (canonicalJson(next) !== canonicalJson(previous)) {
    await custom.patchClusterCustomObjectStatus(
      { ...target, body: [{ op: 'add', path: '/status', value: next }] },
      jsonPatch,
    );
  }
}
