// The interruption budget as permits (§2.2.1): a node asks before it cordons, and at most `ceiling` nodes of
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

/**
 * Permits with admission: when every node of the compartment in flight (the ones just admitted among them) fits its
 * ceiling, each can hold a permit at once, so the admitted nodes are queued as if they had asked, to be granted in the
 * same pass; their request would buy nothing. Returns the nodes it queued: those not granted in the pass are withdrawn
 * (`withdrawUnasked`) and ask when their work needs a permit. A batch larger than the ceiling gets none.
 */
export function requestWithAdmission(
  p: PermitState,
  admitted: readonly string[],
  inFlight: number,
  ceiling: number,
): string[] {
  if (inFlight > Math.max(1, ceiling)) return [];
  const queued = admitted.filter((node) => p.holders[node] === undefined && !p.queue.includes(node));
  for (const node of queued) requestPermit(p, node);
  return queued;
}

/** Nodes queued with their admission that the pass did not grant leave the queue: they never asked. */
export function withdrawUnasked(p: PermitState, queued: readonly string[]): void {
  const unasked = new Set(queued);
  p.queue = p.queue.filter((node) => !unasked.has(node));
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

/**
 * Grants, in queue order, as long as the node's compartment holds fewer permits than its ceiling. With
 * `regrantHolders`, a queued node that holds a permit already (its request overtook its release, or its workflow was
 * started again) is granted a new one in place of the old, its own permit not counted against it.
 */
export function grantPermits(
  p: PermitState,
  compartmentOf: (node: string) => { name: string; ceiling: number } | undefined,
  regrantHolders = false,
): { node: string; permit: string }[] {
  const grants: { node: string; permit: string }[] = [];
  const held = (name: string, asking: string) =>
    Object.keys(p.holders).filter((n) => compartmentOf(n)?.name === name && !(regrantHolders && n === asking)).length;
  for (const node of [...p.queue]) {
    const c = compartmentOf(node);
    if (!c || held(c.name, node) >= Math.max(1, c.ceiling)) continue;
    const permit = `${node}#${++p.issued}`;
    p.holders[node] = permit;
    p.queue = p.queue.filter((n) => n !== node);
    grants.push({ node, permit });
  }
  return grants;
}

/** The issue number of a permit (`<node>#<n>`): which grants came before a lease check. */
function issueNumber(permit: string): number {
  return Number(permit.slice(permit.lastIndexOf('#') + 1));
}

/**
 * Permits are leases (G13): a node's answer to a lease check is the truth, and the rollout's books follow it. A node
 * that holds nothing loses the permit the books gave it before the check; a node holding a permit the books do not
 * have (the rollout was reset) has it counted; a node waiting for a permit the rollout never heard of (a request lost
 * to a reset) joins the queue. A grant issued after the check is not in the answer and stays as it is.
 */
export function reconcileLease(
  p: PermitState,
  report: { node: string; asOf: number; phase: 'requested' | 'granted' | 'prepared' | null; permit: string | null },
): void {
  const { node, asOf, phase, permit } = report;
  const booked = p.holders[node];
  if (booked !== undefined && issueNumber(booked) > asOf) return;
  if (phase === null) {
    if (booked !== undefined) delete p.holders[node];
  } else if (phase === 'requested') {
    // A node that waits keeps what the books give it (a node workflow started again after its predecessor was
    // terminated mid-reboot): it is granted again in its turn, and the budget counts it meanwhile.
    requestPermit(p, node);
  } else if (permit !== null) {
    p.holders[node] = permit;
    // Later checks then ask after it: a permit from before a reset may carry a number the rollout has not reached.
    p.issued = Math.max(p.issued, issueNumber(permit));
  }
}
