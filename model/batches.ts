import { z } from 'zod';
import type { Status } from './node-state';
import type { StrategyParams } from './manifests/deployment-policy';

// Batches within a compartment (§2.2.2-§2.2.4, §2.2.6): batch sizes per strategy, which nodes form the next batch,
// and how a finished batch updates the state.

export const BatchStateSchema = z.object({
  currentBatch: z.int().min(1),
  consecutiveFailures: z.int().min(0),
  completedNodes: z.int().min(0),
  failedNodes: z.int().min(0),
  shouldStop: z.boolean(),
  lastBatchSize: z.int().min(0),
  lastBatchFailed: z.boolean(),
});
export type BatchState = z.infer<typeof BatchStateSchema>;

/** Also the state a rollout reaching complete resets to (§2.2.6). */
export function initialBatchState(): BatchState {
  return {
    currentBatch: 1,
    consecutiveFailures: 0,
    completedNodes: 0,
    failedNodes: 0,
    shouldStop: false,
    lastBatchSize: 0,
    lastBatchFailed: false,
  };
}

function progressPercent(state: BatchState, total: number): number {
  return total === 0 ? 100 : Math.floor(((state.completedNodes + state.failedNodes) * 100) / total);
}

/** §2.2.3; at least 1 and at most the nodes not yet done. */
export function batchSize(strategy: StrategyParams, total: number, state: BatchState): number {
  const remaining = total - (state.completedNodes + state.failedNodes);
  const shrink = state.lastBatchFailed && progressPercent(state, total) < strategy.safetyLimit;
  let size = strategy.initialBatch;
  if (state.currentBatch > 1) {
    const last = state.lastBatchSize;
    if (strategy.type === 'linear') size = shrink ? Math.max(1, last - strategy.delta) : last + strategy.delta;
    if (strategy.type === 'exponential') {
      size = shrink
        ? Math.max(1, Math.floor(last / strategy.growthFactor))
        : Math.min(total, last * strategy.growthFactor);
    }
  }
  return Math.max(1, Math.min(size, remaining));
}

export interface NodeStatusEntry {
  name: string;
  status: Status;
}

export type NextBatch =
  { kind: 'halted'; nodes: [] } | { kind: 'in_progress'; nodes: string[] } | { kind: 'new'; nodes: string[] };

const PICK_ORDER: readonly Status[] = ['waiting', 'unknown', 'blocked', 'erroring'];

/**
 * §2.2.2: a halted compartment admits nothing; a batch in progress is a barrier; otherwise a new batch sized by the
 * strategy (the ceiling when there is none), picked waiting, then unknown, blocked, erroring, in list order.
 */
export function nextBatch(
  compartment: { strategy?: StrategyParams; ceiling: number },
  nodes: readonly NodeStatusEntry[],
  state: BatchState,
): NextBatch {
  if (state.shouldStop && compartment.strategy) return { kind: 'halted', nodes: [] };
  const running = nodes.filter((n) => n.status === 'in_progress').map((n) => n.name);
  if (running.length > 0) return { kind: 'in_progress', nodes: running };
  const size = compartment.strategy ? batchSize(compartment.strategy, nodes.length, state) : compartment.ceiling;
  const picked = PICK_ORDER.flatMap((s) => nodes.filter((n) => n.status === s).map((n) => n.name)).slice(0, size);
  return { kind: 'new', nodes: picked };
}

/**
 * §2.2.4, run when no node of the compartment is in progress. The batch result is the change in complete and
 * erroring nodes since the last checkpoint; `admitted` is the size of the batch that ran.
 */
export function evaluateBatch(
  strategy: StrategyParams | undefined,
  nodes: readonly NodeStatusEntry[],
  state: BatchState,
  admitted: number,
): BatchState {
  const count = (s: Status) => nodes.filter((n) => n.status === s).length;
  const complete = count('complete');
  const erroring = count('erroring');
  const blocked = count('blocked');
  const success = complete - state.completedNodes;
  const failure = erroring - state.failedNodes;
  // Nodes moved between compartments: re-checkpoint without judging a batch.
  if (success < 0 || failure < 0) return { ...state, completedNodes: complete, failedNodes: erroring };
  if (success === 0 && failure === 0 && (blocked === 0 || blocked === nodes.length)) return state;
  const batchThreshold = strategy?.batchThreshold ?? 100;
  const failed = (admitted > 0 ? Math.floor((success * 100) / admitted) : 0) < batchThreshold;
  const next: BatchState = {
    ...state,
    completedNodes: complete,
    failedNodes: erroring,
    consecutiveFailures: failed ? state.consecutiveFailures + 1 : 0,
    currentBatch: state.currentBatch + 1,
    lastBatchSize: admitted,
    lastBatchFailed: failed,
  };
  const threshold = strategy?.failureThreshold ?? null;
  next.shouldStop =
    threshold !== null &&
    progressPercent(next, nodes.length) < (strategy?.safetyLimit ?? 50) &&
    next.consecutiveFailures >= threshold;
  return next;
}

/**
 * The checkpoint a batch is judged from (§2.2.4) moved to the compartment's nodes as they stand, judging nothing:
 * `completedNodes` and `failedNodes` become its complete and erroring nodes.
 */
export function checkpointBatchState(state: BatchState, nodes: readonly NodeStatusEntry[]): BatchState {
  const count = (s: Status) => nodes.filter((n) => n.status === s).length;
  return { ...state, completedNodes: count('complete'), failedNodes: count('erroring') };
}

/**
 * The manual reset (§2.2.6, `rollout reset-batches`): batch 1, no failures, not halted, no last batch, as Skyhook's;
 * unlike Skyhook's, the checkpoint stays at the nodes' present counts, so the next batch is judged on its own nodes
 * and not credited with every node completed before the reset.
 */
export function resetBatchState(nodes: readonly NodeStatusEntry[]): BatchState {
  return checkpointBatchState(initialBatchState(), nodes);
}
