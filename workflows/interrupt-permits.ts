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
