import type { RolloutSpec } from './manifests/rollout-spec';

// Continue-as-new hands a workflow's state to its next run as input, and every build of the worker may have to read
// it: a rolling upgrade without worker versioning runs two builds side by side, and a rollback runs the older one
// again. So the carried form keeps the field name every build reads, `spec`; in memory the node workflow's entry per
// rollout and the rollout workflow's state name their RolloutSpec `rollout` (as `r.rollout.spec.packages` reads).

/** A holder of a RolloutSpec as continue-as-new carries it: the spec under `spec`. */
export type CarriedForm<T extends { rollout: RolloutSpec }> = Omit<T, 'rollout'> & { spec: RolloutSpec };

/** The holder as the workflow keeps it, from its carried form. */
export function fromCarried<T extends { rollout: RolloutSpec }>(carried: CarriedForm<T>): T {
  const { spec, ...rest } = carried;
  return { ...rest, rollout: spec } as unknown as T;
}

/** The holder's carried form, as every build reads it. */
export function toCarried<T extends { rollout: RolloutSpec }>(holder: T): CarriedForm<T> {
  const { rollout, ...rest } = holder;
  return { ...rest, spec: rollout } as CarriedForm<T>;
}
