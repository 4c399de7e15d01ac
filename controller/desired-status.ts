import { InvalidError } from '../client/errors';
import {
  applyRollout,
  controlRollout,
  currentSpec,
  type ControlKind,
  type RolloutStatusResult,
} from '../client/rollouts';
import { startRefusal } from '../client/start-refusal';
import { CONTROLLER_ACTOR, nameTakenMessage, resourceOwner } from '../model/custom-resource/ownership';
import {
  controlsFor,
  NOT_ACCEPTED_REASONS,
  notAcceptedStatus,
  rolloutFields,
  rolloutResourceStatus,
  validationMessage,
  VALID_CONDITION,
  type NotAcceptedReason,
} from '../model/custom-resource/resource-status';
import type { RolloutResourceStatus } from '../model/custom-resource/status';
import { manifestControls } from '../model/manifests/controls';
import { DeploymentPolicySchema, type DeploymentPolicy } from '../model/manifests/deployment-policy';
import { parseRolloutDocuments } from '../model/manifests/parse-documents';
import type { RolloutKind } from '../model/wire';
import type { ReconcileDeps } from './reconcile';
import { manifestOf, type RolloutResource } from './resources';
import { ownerOf, runningRollout } from './rollout-owner';

// The status a resource should have, and the calls that bring its rollout there. In order:
// - a rollout of its name that another owner started is left alone (Valid=False, NameTaken);
// - a generation not yet applied is validated and applied (started or updated), unless the worker refused it
//   (Valid=False, Refused: a start's run failed, or an update was refused, with the worker's reason), which is not
//   tried again until the spec changes; an invalid one is not applied (Valid=False, Invalid);
// - the pause and disable annotations are signalled to the running rollout whatever the validity of the spec;
// - the rollout's status is written in Skyhook's form.

interface NotAccepted {
  reason: NotAcceptedReason;
  message: string;
}

/**
 * The status the resource should have, and the status it was worked out from. `read` gets the resource from the
 * apiserver: the watch cache may not yet hold the status this controller wrote a moment ago, so before a spec is
 * applied (not idempotent for an update the worker refuses) the resource is read again and the pass made over that.
 */
export async function desiredStatus(
  deps: ReconcileDeps,
  kind: RolloutKind,
  resource: RolloutResource,
  now: string,
  read?: () => Promise<RolloutResource>,
): Promise<{ next: RolloutResourceStatus; previous: RolloutResourceStatus }> {
  const previous: RolloutResourceStatus = resource.status ?? {};
  const { name, annotations = {} } = resource.metadata;
  const generation = resource.metadata.generation ?? 0;
  const owner = resourceOwner(kind);
  const controls = manifestControls(kind, annotations, pauseField(resource));
  let rollout = await runningRollout(deps.keelson, name);
  if (rollout) {
    const holder = await ownerOf(deps.keelson, rollout);
    if (holder !== owner) {
      const message = nameTakenMessage(name, holder);
      return { next: notAcceptedStatus(previous, NOT_ACCEPTED_REASONS.nameTaken, message, generation, now), previous };
    }
  }

  const parsed = parseRolloutDocuments([manifestOf(resource)], { policies: knownPolicies(deps) });
  const spec = parsed.errors.length === 0 ? parsed.rollouts[0] : undefined;
  let notAccepted: NotAccepted | undefined;
  if (!spec) notAccepted = { reason: NOT_ACCEPTED_REASONS.invalid, message: validationMessage(parsed.errors) };
  else {
    const valid = previous.conditions?.find((c) => c.type === VALID_CONDITION);
    const seen = valid?.observedGeneration === generation;
    const applied = seen && valid?.status === 'True' && previous.observedGeneration === generation;
    const refused = seen && valid?.reason === NOT_ACCEPTED_REASONS.refused;
    // A refusal of this generation stands until the spec changes: an update is not sent again, and a refused start
    // (its run failed) is not started again.
    const refusal = !rollout && (applied || refused) ? await startRefusal(deps.keelson, name) : undefined;
    if (rollout && refused) notAccepted = { reason: NOT_ACCEPTED_REASONS.refused, message: valid!.message };
    else if (refusal?.owner === owner) notAccepted = refusedBy(refusal.message);
    // A spec is applied once per generation; the rollout's own workflow is the record that it was (none runs: again).
    else if (!rollout || !applied) {
      if (read) return desiredStatus(deps, kind, await read(), now);
      // A pause or disable that comes with the edit reaches the rollout before the new spec does, so no stage of the
      // new spec starts unpaused; and it holds even if the update then fails.
      if (rollout) rollout = await steer(deps, rollout, controls, HALTING_CONTROLS);
      try {
        await applyRollout(deps.keelson, spec, CONTROLLER_ACTOR, owner);
      } catch (err) {
        // The worker refused an update (its image policy): the rollout runs on with the spec it had.
        if (!(err instanceof InvalidError)) throw err;
        // The worker's reason comes under the path `spec`, and names each field itself.
        notAccepted = refusedBy(
          err.errors.map((e) => (e.path === 'spec' ? e.message : `${e.path}: ${e.message}`)).join('; '),
        );
      }
      rollout = await runningRollout(deps.keelson, name);
      if (!rollout && !notAccepted) {
        const refusedStart = await startRefusal(deps.keelson, name);
        if (!refusedStart) throw new Error(`rollout ${name} does not run after its start`);
        notAccepted = refusedBy(refusedStart.message);
      }
    }
  }

  if (rollout) rollout = await steer(deps, rollout, controls);
  if (!notAccepted) {
    const conditions = previous.conditions ?? [];
    return { next: rolloutResourceStatus(rollout!, spec!.spec.packages, generation, conditions, now), previous };
  }
  // The rollout runs the spec last applied: its fields are shown with that spec's images.
  const base = rollout
    ? rolloutFields(
        rollout,
        (await currentSpec(deps.keelson, name)).rollout.spec.packages,
        previous.observedGeneration ?? 0,
        previous.conditions ?? [],
        now,
      )
    : previous;
  return { next: notAcceptedStatus(base, notAccepted.reason, notAccepted.message, generation, now), previous };
}

const refusedBy = (message: string): NotAccepted => ({
  reason: NOT_ACCEPTED_REASONS.refused,
  message: `the worker refused this spec: ${message}`,
});

/** The valid DeploymentPolicy resources known now. */
function knownPolicies(deps: ReconcileDeps): DeploymentPolicy[] {
  return deps
    .policies()
    .map((p) => DeploymentPolicySchema.safeParse(p))
    .filter((p) => p.success)
    .map((p) => p.data as DeploymentPolicy);
}

const pauseField = (resource: RolloutResource) => (resource.spec as { pause?: unknown } | undefined)?.pause;

/** The controls that stop work: sent before a new spec, the others after it. */
const HALTING_CONTROLS: readonly ControlKind[] = ['pause', 'disable'];

/** Signals the pause, resume, disable and enable (or `only` those) that bring the rollout to what the resource asks. */
async function steer(
  deps: ReconcileDeps,
  rollout: RolloutStatusResult,
  wanted: { paused: boolean; disabled: boolean },
  only?: readonly ControlKind[],
): Promise<RolloutStatusResult> {
  const controls = controlsFor(wanted, rollout).filter((c) => !only || only.includes(c));
  for (const control of controls) {
    await controlRollout(deps.keelson, rollout.name, control, {
      actor: CONTROLLER_ACTOR,
      reason: `the resource asks: ${JSON.stringify(wanted)}`,
    });
  }
  return controls.length > 0 ? ((await runningRollout(deps.keelson, rollout.name)) ?? rollout) : rollout;
}
