import {
  evaluateBatch,
  initialBatchState,
  nextBatch,
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
    batch.state = evaluateBatch(compartment.strategy, nodes, batch.state, batch.open.length);
    batch.open = null;
  }
  const next = nextBatch(compartment, nodes, batch.state);
  if (next.kind !== 'new') return [];
  const admit = next.nodes.filter((n) => !admitted(n) && status.get(n) !== 'blocked');
  if (admit.length > 0) batch.open = admit;
  return admit;
}
