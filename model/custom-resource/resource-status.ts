import type { Stage, State, Status } from '../node-state';
import { entryKey } from '../node-state';
import type { Package } from '../manifests/skyhook';
import type { ValidationError } from '../manifests/validation-error';
import type { Condition, RolloutResourceStatus } from './status';

// What the custom-resource controller writes to `.status`, from the rollout's status: Skyhook's fields and forms,
// plus two conditions, `Valid` (the spec is what the rollout runs, or why not) and `Ready` (every target node
// complete).

/** The part of the rollout's status query answer (workflows/messages.ts RolloutStatusView) the resource shows. */
export interface RolloutStatusInput {
  status: Status;
  nodes: Record<
    string,
    { status: Status; packages: Record<string, { version: string; stage: Stage; state: State; restarts: number }> }
  >;
  nodesInProgress: number;
  completeNodes: string;
  packageList: string;
}

export const VALID_CONDITION = 'Valid';
export const READY_CONDITION = 'Ready';

/** The condition list with `next` set: its transition time kept when its status did not change. */
export function setCondition(
  conditions: readonly Condition[],
  next: Omit<Condition, 'lastTransitionTime'>,
  now: string,
): Condition[] {
  const previous = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : now;
  return [...conditions.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }];
}

// Condition reasons are CamelCase; statuses are snake_case.
const reasonOf = (status: Status) => status.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());

/** Why a resource's spec is not what its rollout runs (the `Valid=False` reasons). */
export const NOT_ACCEPTED_REASONS = {
  /** The manifest failed validation. */
  invalid: 'Invalid',
  /** The worker refused the spec at a start or an update (its image policy). */
  refused: 'Refused',
  /** Another owner's rollout holds the name. */
  nameTaken: 'NameTaken',
} as const;

/** The status of a valid resource whose rollout answered: its spec accepted at `generation`. */
export function rolloutResourceStatus(
  rollout: RolloutStatusInput,
  packages: Readonly<Record<string, Package>>,
  generation: number,
  previous: readonly Condition[],
  now: string,
): RolloutResourceStatus {
  const conditions = setCondition(
    previous,
    {
      type: VALID_CONDITION,
      status: 'True',
      reason: 'Accepted',
      message: 'the manifest is valid',
      observedGeneration: generation,
    },
    now,
  );
  return rolloutFields(rollout, packages, generation, conditions, now);
}

/**
 * Skyhook's fields and the `Ready` condition from the rollout's status, the other conditions kept: `packages` and
 * `appliedGeneration` are those of the spec the rollout runs.
 */
export function rolloutFields(
  rollout: RolloutStatusInput,
  packages: Readonly<Record<string, Package>>,
  appliedGeneration: number,
  previous: readonly Condition[],
  now: string,
): RolloutResourceStatus {
  const nodeState = Object.fromEntries(
    Object.entries(rollout.nodes).map(([node, view]) => [
      node,
      Object.fromEntries(
        Object.entries(view.packages).map(([name, p]) => [
          entryKey(name, p.version),
          {
            name,
            version: p.version,
            // A package being uninstalled is no longer in the spec: its image is not known here.
            image: packages[name]?.image ?? '',
            stage: p.stage,
            state: p.state,
            restarts: p.restarts,
          },
        ]),
      ),
    ]),
  );
  const conditions = setCondition(
    previous,
    {
      type: READY_CONDITION,
      status: rollout.status === 'complete' ? 'True' : 'False',
      reason: reasonOf(rollout.status),
      message: `${rollout.completeNodes} nodes complete`,
      observedGeneration: appliedGeneration,
    },
    now,
  );
  return {
    status: rollout.status,
    nodeState,
    nodeStatus: Object.fromEntries(Object.entries(rollout.nodes).map(([node, view]) => [node, view.status])),
    completeNodes: rollout.completeNodes,
    nodesInProgress: rollout.nodesInProgress,
    packageList: rollout.packageList,
    observedGeneration: appliedGeneration,
    conditions,
  };
}

/** Longest message a condition holds (metav1.Condition allows 32768 characters). */
const MAX_MESSAGE = 32_768;

export type NotAcceptedReason = (typeof NOT_ACCEPTED_REASONS)[keyof typeof NOT_ACCEPTED_REASONS];

/** `base` with `Valid=False`: this generation's spec is not what the rollout runs, and why. */
export function notAcceptedStatus(
  base: RolloutResourceStatus,
  reason: NotAcceptedReason,
  message: string,
  generation: number,
  now: string,
): RolloutResourceStatus {
  const conditions = setCondition(
    base.conditions ?? [],
    {
      type: VALID_CONDITION,
      status: 'False',
      reason,
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message,
      observedGeneration: generation,
    },
    now,
  );
  return { ...base, conditions };
}

/** The status of a resource that failed validation: the errors in the `Valid` condition; the rest from `base`. */
export function invalidResourceStatus(
  base: RolloutResourceStatus,
  errors: readonly ValidationError[],
  generation: number,
  now: string,
): RolloutResourceStatus {
  return notAcceptedStatus(base, NOT_ACCEPTED_REASONS.invalid, validationMessage(errors), generation, now);
}

/** Every validation error in one line, each naming its field. */
export const validationMessage = (errors: readonly ValidationError[]) =>
  errors.map((e) => `${e.path}: ${e.message}`).join('; ');

/** The pause, resume, disable and enable signals that bring a running rollout to the resource's annotations. */
export function controlsFor(
  wanted: { paused: boolean; disabled: boolean },
  running: { paused: boolean; disabled: boolean },
): ('pause' | 'resume' | 'disable' | 'enable')[] {
  const out: ('pause' | 'resume' | 'disable' | 'enable')[] = [];
  if (wanted.disabled !== running.disabled) out.push(wanted.disabled ? 'disable' : 'enable');
  if (wanted.paused !== running.paused) out.push(wanted.paused ? 'pause' : 'resume');
  return out;
}
