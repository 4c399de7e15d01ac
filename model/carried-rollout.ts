import type { RolloutSpec } from './manifests/rollout-spec';

// Continue-as-new carries a workflow's state into its next run's input. The node workflow's entry per rollout and the
// rollout workflow's state hold their RolloutSpec under `rollout`; the code before that name carried it under `spec`,
// and a run it continued starts from that shape. Both shapes are read; only `rollout` is written.

/** A holder of a RolloutSpec as carried before the rename: the spec under `spec`, not `rollout`. */
export type CarriedUnderSpec<T extends { rollout: RolloutSpec }> = Omit<T, 'rollout'> & { spec: RolloutSpec };

/** The holder with its RolloutSpec under `rollout`, whichever of the two names it was carried under. */
export function withRolloutField<T extends { rollout: RolloutSpec }>(carried: T | CarriedUnderSpec<T>): T {
  if ('rollout' in carried) return carried as T;
  const { spec, ...rest } = carried as CarriedUnderSpec<T>;
  return { ...rest, rollout: spec } as unknown as T;
}
