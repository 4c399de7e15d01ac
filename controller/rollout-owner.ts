import type { KeelsonContext } from '../client/connect';
import { NotFoundError } from '../client/errors';
import { currentSpec, rolloutStatus, type RolloutStatusResult } from '../client/rollouts';
import { legacyOwner } from '../model/custom-resource/ownership';

// The running rollout of a name and who owns it, as a pass over a resource reads them.

/** The running rollout's status; undefined when none runs under the name. */
export function runningRollout(keelson: KeelsonContext, name: string): Promise<RolloutStatusResult | undefined> {
  return rolloutStatus(keelson, name).catch((err: unknown) => {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  });
}

/**
 * Its owner from the start's memo; for a rollout started before owners were recorded, from who started it and the
 * kind it runs (read from its history, only then).
 */
export async function ownerOf(keelson: KeelsonContext, rollout: RolloutStatusResult): Promise<string> {
  if (rollout.owner !== undefined) return rollout.owner;
  const current = await currentSpec(keelson, rollout.name);
  return legacyOwner(rollout.startedBy, current.rollout.kind);
}
