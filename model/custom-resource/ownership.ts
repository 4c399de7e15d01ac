import { z } from 'zod';
import { API_GROUPS, ROLLOUT_KIND_NAMES, type RolloutKind } from '../wire';

// Who owns a rollout: recorded in its start's memo, since Skyhook/foo, NodeWright/foo and a rollout `foo` started
// through the API share one rollout name. Only the owner steers or deletes it; the others are told who owns it.

/** The owner of a rollout started through the API, the CLI or the client library. */
export const API_OWNER = 'api';

/** The actor the custom-resource controller records with every change it makes. */
export const CONTROLLER_ACTOR = 'keelson-controller';

/** The owner of a rollout a resource of this kind started: its kind and API group, as Kubernetes writes a GroupKind. */
export const resourceOwner = (kind: RolloutKind) => `${kind}.${API_GROUPS[kind]}`;

export const RolloutOwnerSchema = z.enum([API_OWNER, ...ROLLOUT_KIND_NAMES.map(resourceOwner)]);
export type RolloutOwner = z.infer<typeof RolloutOwnerSchema>;

/**
 * The owner of a rollout started before owners were recorded: the resource kind it runs when the controller started
 * it (its actor in the start's memo), else the API, so a resource never takes over a rollout someone started by hand.
 */
export function legacyOwner(startedBy: string | undefined, kind: RolloutKind): RolloutOwner {
  return startedBy === CONTROLLER_ACTOR ? resourceOwner(kind) : API_OWNER;
}

/** The owner as a person reads it: `the API` or `NodeWright/foo (nodewright.nvidia.com)`. */
export function describeOwner(owner: string, name: string): string {
  if (owner === API_OWNER) return 'the API (keelson rollout start or POST /v1/rollouts)';
  const dot = owner.indexOf('.');
  return dot < 0 ? owner : `${owner.slice(0, dot)}/${name} (${owner.slice(dot + 1)})`;
}

/** Why a resource steers nothing: another owner's rollout holds its name. */
export function nameTakenMessage(name: string, owner: string): string {
  return (
    `rollout ${name} is owned by ${describeOwner(owner, name)}: this resource does not steer it, and deleting ` +
    'this resource leaves it running; rename one of them, or delete the owner to hand the name over'
  );
}
