import {
  checkpointBatchState,
  evaluateBatch,
  initialBatchState,
  nextBatch,
  resetBatchState,
  type AssignedCompartment,
  type BatchState,
  type NodeStatusEntry,
} from '../../model';

// Which nodes of a compartment start next: Skyhook's batches (a barrier per batch, sized by the strategy, judged
// when it ends) or Keelson's sliding window (the next node starts as soon as one finishes, at most `ceiling` at once).

export type AdmissionMode = 'batches' | 'sliding-window';

export interface CompartmentBatch {
  state: BatchState;
  /** The nodes of the batch in flight, or null between batches. */
  open: string[] | null;
  /**
   * A manual reset came after the last batch opened: the batch in flight then is not judged, and until the next batch
   * opens the checkpoint follows the nodes (a new generation may have made every complete node waiting again).
   */
  resetSinceLastBatch?: boolean;
}

export function newCompartmentBatch(): CompartmentBatch {
  return { state: initialBatchState(), open: null };
}

/**
 * `nodes` carries each node's status as batches see it: not yet admitted is `waiting`, admitted and not settled is
 * `in_progress`. Returns the nodes to admit now; `batch` is updated in place.
 */
export function admitNext(
  mode: AdmissionMode,
  compartment: AssignedCompartment,
  nodes: readonly NodeStatusEntry[],
  admitted: (node: string) => boolean,
  batch: CompartmentBatch,
): string[] {
  const status = new Map(nodes.map((n) => [n.name, n.status]));
  if (mode === 'sliding-window') {
    const inFlight = nodes.filter((n) => n.status === 'in_progress').length;
    const room = Math.max(1, compartment.ceiling) - inFlight;
    return nodes
      .filter((n) => n.status === 'waiting' && !admitted(n.name))
      .slice(0, Math.max(0, room))
      .map((n) => n.name);
  }
  if (batch.open) {
    if (batch.open.some((n) => status.get(n) === 'in_progress')) return [];
    if (!batch.resetSinceLastBatch)
      batch.state = evaluateBatch(compartment.strategy, nodes, batch.state, batch.open.length);
    batch.open = null;
  }
  if (batch.resetSinceLastBatch) batch.state = checkpointBatchState(batch.state, nodes);
  const next = nextBatch(compartment, nodes, batch.state);
  if (next.kind !== 'new') return [];
  const admit = next.nodes.filter((n) => !admitted(n) && status.get(n) !== 'blocked');
  if (admit.length > 0) {
    batch.open = admit;
    delete batch.resetSinceLastBatch;
  }
  return admit;
}

/**
 * The manual reset (§2.2.6): the compartment starts again at batch 1. Nodes in flight are not interrupted and keep
 * the barrier; their outcomes are not judged, so the first batch after them is batch 1 again, sized `initialBatch`,
 * and judged on its own nodes. Nodes in flight outside an open batch (a completion or spec-update reset closed it)
 * are held as one.
 */
export function resetCompartmentBatch(batch: CompartmentBatch, nodes: readonly NodeStatusEntry[]): void {
  batch.state = resetBatchState(nodes);
  const inFlight = nodes.filter((n) => n.status === 'in_progress').map((n) => n.name);
  batch.open ??= inFlight.length > 0 ? inFlight : null;
  batch.resetSinceLastBatch = true;
}
