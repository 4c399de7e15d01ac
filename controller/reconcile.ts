import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { jsonPatch, mergePatch } from '../activities/clients';
import { NotFoundError } from '../client/errors';
import type { KeelsonContext } from '../client/connect';
import { applyRollout, controlRollout, deleteRollout, rolloutStatus } from '../client/rollouts';
import { invalidResourceStatus, rolloutResourceStatus, controlsFor } from '../model/custom-resource/resource-status';
import type { RolloutResourceStatus } from '../model/custom-resource/status';
import { DeploymentPolicySchema, type DeploymentPolicy } from '../model/manifests/deployment-policy';
import { parseRolloutDocuments } from '../model/manifests/parse-documents';
import { canonicalJson } from '../client/canonical';
import { CLEANUP_FINALIZER, manifestOf, OPERATOR_FINALIZERS, type Collection, type RolloutResource } from './resources';

// One pass over one Skyhook or NodeWright resource: everything it needs comes from the resource and the rollout's
// workflow, so a restarted controller carries on from them. Delete runs the rollout's cleanup behind the finalizer;
// a spec the status has not yet seen (generation) is applied; the pause and disable annotations are signalled;
// the rollout's status is written back.

const ACTOR = 'keelson-controller';

export interface ReconcileDeps {
  kc: KubeConfig;
  keelson: KeelsonContext;
  /** The DeploymentPolicy resources known now, valid or not (an invalid one names no policy). */
  policies: () => unknown[];
  now?: () => string;
}

export async function reconcileResource(deps: ReconcileDeps, where: Collection, resource: RolloutResource) {
  const custom = deps.kc.makeApiClient(CustomObjectsApi);
  const { name, finalizers = [], resourceVersion } = resource.metadata;
  const target = { ...where, name };
  if (resource.metadata.deletionTimestamp) {
    const ours = [CLEANUP_FINALIZER, ...OPERATOR_FINALIZERS];
    if (!finalizers.some((f) => ours.includes(f))) return;
    await deleteRollout(deps.keelson, name, ACTOR).catch((err: unknown) => {
      if (!(err instanceof NotFoundError)) throw err;
    });
    // The finalizer stays until the rollout's run has ended, its nodes told to forget it: a cleanup that outlasts the
    // delete's wait (a large fleet, workers down) is looked at again at the next pass, not dropped.
    const ended = await rolloutStatus(deps.keelson, name).then(
      () => false,
      (err: unknown) => {
        if (err instanceof NotFoundError) return true;
        throw err;
      },
    );
    if (!ended) return;
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
  const generation = resource.metadata.generation ?? 0;
  const previous: RolloutResourceStatus = resource.status ?? {};
  const next = await desiredStatus(deps, resource, previous, generation, now);
  if (canonicalJson(next) !== canonicalJson(previous)) {
    await custom.patchClusterCustomObjectStatus(
      { ...target, body: [{ op: 'add', path: '/status', value: next }] },
      jsonPatch,
    );
  }
}

async function desiredStatus(
  deps: ReconcileDeps,
  resource: RolloutResource,
  previous: RolloutResourceStatus,
  generation: number,
  now: string,
): Promise<RolloutResourceStatus> {
  const policies = deps
    .policies()
    .map((p) => DeploymentPolicySchema.safeParse(p))
    .filter((p) => p.success)
    .map((p) => p.data as DeploymentPolicy);
  const parsed = parseRolloutDocuments([manifestOf(resource)], { policies });
  const spec = parsed.rollouts[0];
  if (parsed.errors.length > 0 || !spec) return invalidResourceStatus(previous, parsed.errors, generation, now);
  const name = spec.name;
  // A spec is applied once per generation; the rollout's own workflow is the record that it was (NotFound: again).
  let view = await rolloutStatus(deps.keelson, name).catch((err: unknown) => {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  });
  const validated = previous.conditions?.find((c) => c.type === 'Valid');
  if (!view || previous.observedGeneration !== generation || validated?.status !== 'True') {
    await applyRollout(deps.keelson, spec, ACTOR);
    view = await rolloutStatus(deps.keelson, name);
  }
  const controls = controlsFor(spec, view);
  for (const kind of controls) {
    const annotation = resource.metadata.annotations ?? {};
    await controlRollout(deps.keelson, name, kind, {
      actor: ACTOR,
      reason: `annotations ${JSON.stringify(annotation)}`,
    });
  }
  if (controls.length > 0) view = await rolloutStatus(deps.keelson, name);
  return rolloutResourceStatus(view, spec.spec.packages, generation, previous.conditions ?? [], now);
}
