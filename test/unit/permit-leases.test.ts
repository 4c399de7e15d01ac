import {
  grantPermits,
  newPermitState,
  reconcileLease,
  releasePermit,
  requestPermit,
  type PermitState,
} from '../../workflows/rollout/interrupt-permits';

// The rollout's permit books against what its nodes answer to a lease check (G13: permits are leases).

const oneCompartment = () => ({ name: 'all', ceiling: 1 });
const holds = (node: string, permit: string, asOf: number) => ({ node, asOf, phase: 'granted' as const, permit });
const waits = (node: string, asOf: number) => ({ node, asOf, phase: 'requested' as const, permit: null });
const idle = (node: string, asOf: number) => ({ node, asOf, phase: null, permit: null });

function granted(...nodes: string[]): PermitState {
  const p = newPermitState();
  for (const n of nodes) {
    requestPermit(p, n);
    grantPermits(p, () => ({ name: n, ceiling: 1 }), true);
  }
  return p;
}

test('G13 a permit the node does not hold (its workflow reset to before the grant) goes back to the budget', () => {
  const p = granted('a');
  requestPermit(p, 'b');
  expect(grantPermits(p, oneCompartment, true)).toEqual([]);
  reconcileLease(p, idle('a', p.issued));
  expect(p.holders).toEqual({});
  expect(grantPermits(p, oneCompartment, true)).toEqual([{ node: 'b', permit: 'b#2' }]);
});

test('G13 a request lost on the way is queued again; one the rollout knows is not queued twice', () => {
  const p = granted('a');
  requestPermit(p, 'b');
  reconcileLease(p, holds('a', 'a#1', 1));
  reconcileLease(p, waits('b', 1));
  reconcileLease(p, waits('c', 1));
  expect(p.holders).toEqual({ a: 'a#1' });
  expect(p.queue).toEqual(['b', 'c']);
});

test('G13 a node that waits while the books give it a permit (its workflow started again) keeps it until re-granted', () => {
  const p = granted('a');
  requestPermit(p, 'b');
  reconcileLease(p, waits('a', 1));
  // a stays counted: b is not granted beside it; a is granted again in place of its old permit.
  expect(p.queue).toEqual(['b', 'a']);
  expect(grantPermits(p, oneCompartment, true)).toEqual([{ node: 'a', permit: 'a#2' }]);
  expect(p.holders).toEqual({ a: 'a#2' });
  // Without regranting holders (histories before leases), a holder's own permit blocks it.
  const old = granted('x');
  requestPermit(old, 'x');
  expect(grantPermits(old, oneCompartment)).toEqual([]);
});

test('G13 a permit a node holds that the rollout forgot (a reset of the rollout) counts against the budget again', () => {
  const p = newPermitState();
  requestPermit(p, 'b');
  reconcileLease(p, holds('a', 'a#7', 0));
  expect(p.holders).toEqual({ a: 'a#7' });
  expect(grantPermits(p, oneCompartment, true)).toEqual([]);
  // Later checks ask after it, so a lost release of it is found too.
  expect(p.issued).toBe(7);
  reconcileLease(p, idle('a', p.issued));
  expect(grantPermits(p, oneCompartment, true)).toEqual([{ node: 'b', permit: 'b#8' }]);
});

test('G13 a node holding another permit than the books say: the books take the node’s', () => {
  const p = granted('a');
  reconcileLease(p, holds('a', 'a#0', 1));
  expect(p.holders).toEqual({ a: 'a#0' });
});

test('G13 a grant issued after the check is not undone by its answer', () => {
  const p = newPermitState();
  requestPermit(p, 'a');
  const asOf = p.issued;
  expect(grantPermits(p, oneCompartment, true)).toEqual([{ node: 'a', permit: 'a#1' }]);
  reconcileLease(p, waits('a', asOf));
  reconcileLease(p, idle('a', asOf));
  expect(p.holders).toEqual({ a: 'a#1' });
  expect(p.queue).toEqual([]);
});

test('a stale or duplicate release changes nothing', () => {
  const p = granted('a');
  releasePermit(p, 'a', 'a#0');
  expect(p.holders).toEqual({ a: 'a#1' });
});
