// The interruption budget as permits (DESIGN.md §2): a node asks before it cordons, and at most `ceiling` nodes of
// a compartment hold a permit at once. Plain data, so the rollout carries it across continue-as-new.

export interface PermitState {
  /** Node -> the permit it holds. */
  holders: Record<string, string>;
  /** Nodes waiting for a permit, first come first served. */
  queue: string[];
  issued: number;
}

export function newPermitState(): PermitState {
  return { holders: {}, queue: [], issued: 0 };
}

export function requestPermit(p: PermitState, node: string): void {
  if (!p.queue.includes(node)) p.queue.push(node);
}

/** Only the permit a node holds is released: a stale or duplicate release changes nothing. */
export function releasePermit(p: PermitState, node: string, permit: string): void {
  if (p.holders[node] === permit) delete p.holders[node];
}

/** Nodes that no longer take part (deleted, forgotten) lose their place and their permit. */
export function dropNode(p: PermitState, node: string): void {
  delete p.holders[node];
  p.queue = p.queue.filter((n) => n !== node);
}

/** Grants, in queue order, as long as the node's compartment holds fewer permits than its ceiling. */
export function grantPermits(
  p: PermitState,
  compartmentOf: (node: string) => { name: string; ceiling: number } | undefined,
): { node: string; permit: string }[] {
  const grants: { node: string; permit: string }[] = [];
  const held = (name: string) => Object.keys(p.holders).filter((n) => compartmentOf(n)?.name === name).length;
  for (const node of [...p.queue]) {
    const c = compartmentOf(node);
    if (!c || held(c.name) >= Math.max(1, c.ceiling)) continue;
    const permit = `${node}#${++p.issued}`;
    p.holders[node] = permit;
    p.queue = p.queue.filter((n) => n !== node);
    grants.push({ node, permit });
  }
  return grants;
}

/** What a node workflow says of its permit for one rollout, read by the permitLeases activity. */
export type PermitLease =
  | { node: string; running: false }
  | { node: string; running: true; phase: 'requested' | 'granted' | 'prepared' | null; permit: string | null };

/** The permits and queue as they stood when the leases were read. */
export interface PermitSnapshot {
  holders: Record<string, string>;
  queued: string[];
}

export function snapshotPermits(p: PermitState): PermitSnapshot {
  return { holders: { ...p.holders }, queued: [...p.queue] };
}

/**
 * Permits are leases (G13): what the node workflows hold is the truth, and the rollout's books follow it. A permit
 * whose node workflow is gone or no longer holds it goes back to the budget; a node that waits for a permit the
 * rollout never heard of (a request lost while the rollout was unreachable or reset) joins the queue; a permit a node
 * holds that the rollout forgot (a reset) is counted again. Only what was so both when the leases were read and now
 * changes: a grant, request or release handled meanwhile wins over the older reading.
 */
export function reconcilePermits(p: PermitState, before: PermitSnapshot, leases: PermitLease[]): void {
  const known = (node: string, s: PermitSnapshot) => s.holders[node] !== undefined || s.queued.includes(node);
  const now = snapshotPermits(p);
  for (const lease of leases) {
    const { node } = lease;
    const permit = before.holders[node];
    if (!lease.running) {
      if (permit !== undefined) releasePermit(p, node, permit);
      if (before.queued.includes(node)) p.queue = p.queue.filter((n) => n !== node);
      continue;
    }
    const holds = lease.phase === 'granted' || lease.phase === 'prepared';
    if (permit !== undefined && !(holds && lease.permit === permit)) releasePermit(p, node, permit);
    if (known(node, before) || known(node, now)) continue;
    if (lease.phase === 'requested') requestPermit(p, node);
    else if (holds && lease.permit) p.holders[node] = lease.permit;
  }
}
