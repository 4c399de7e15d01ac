import {
  grantPermits,
  newPermitState,
  reconcilePermits,
  releasePermit,
  requestPermit,
  snapshotPermits,
  type PermitLease,
  type PermitState,
} from '../../workflows/interrupt-permits';

// The rollout's permit books against what the node workflows say they hold (G13: permits are leases).

const oneCompartment = () => ({ name: 'all', ceiling: 1 });
const holds = (node: string, permit: string): PermitLease => ({ node, running: true, phase: 'granted', permit });
const waits = (node: string): PermitLease => ({ node, running: true, phase: 'requested', permit: null });
const idle = (node: string): PermitLease => ({ node, running: true, phase: null, permit: null });
const gone = (node: string): PermitLease => ({ node, running: false });

function granted(...nodes: string[]): PermitState {
  const p = newPermitState();
  for (const n of nodes) {
    requestPermit(p, n);
    grantPermits(p, () => ({ name: n, ceiling: 1 }));
  }
  return p;
}

test('G13 a permit held by a node workflow that is gone goes back to the budget, and the next node gets it', () => {
  const p = granted('a');
  requestPermit(p, 'b');
  expect(grantPermits(p, oneCompartment)).toEqual([]);
  reconcilePermits(p, snapshotPermits(p), [gone('a')]);
  expect(p.holders).toEqual({});
  expect(grantPermits(p, oneCompartment)).toEqual([{ node: 'b', permit: 'b#2' }]);
});

test('G13 a permit the node workflow does not hold (reset before the grant) goes back', () => {
  const p = granted('a');
  reconcilePermits(p, snapshotPermits(p), [idle('a')]);
  expect(p.holders).toEqual({});
});

test('G13 a request lost on the way is queued again; one the rollout knows is not queued twice', () => {
  const p = granted('a');
  requestPermit(p, 'b');
  reconcilePermits(p, snapshotPermits(p), [holds('a', 'a#1'), waits('b'), waits('c')]);
  expect(p.holders).toEqual({ a: 'a#1' });
  expect(p.queue).toEqual(['b', 'c']);
});

test('G13 a permit a node holds that the rollout forgot (a reset of the rollout) counts against the budget again', () => {
  const p = newPermitState();
  requestPermit(p, 'b');
  reconcilePermits(p, snapshotPermits(p), [holds('a', 'a#7'), waits('b')]);
  expect(p.holders).toEqual({ a: 'a#7' });
  expect(grantPermits(p, oneCompartment)).toEqual([]);
  releasePermit(p, 'a', 'a#7');
  expect(grantPermits(p, oneCompartment)).toEqual([{ node: 'b', permit: 'b#1' }]);
});

test('G13 what changed while the leases were read wins over the older reading', () => {
  // Read while a held a#1 and b was not known; meanwhile a released a#1 and was granted a#2, and b's request came.
  const p = granted('a');
  const before = snapshotPermits(p);
  releasePermit(p, 'a', 'a#1');
  requestPermit(p, 'a');
  expect(grantPermits(p, oneCompartment)).toEqual([{ node: 'a', permit: 'a#2' }]);
  requestPermit(p, 'b');
  reconcilePermits(p, before, [idle('a'), waits('b')]);
  // a#2 was not what was read, so it stays; b is queued once.
  expect(p.holders).toEqual({ a: 'a#2' });
  expect(p.queue).toEqual(['b']);
  // A node released and forgotten meanwhile is not brought back by the older reading of it.
  const q = granted('c');
  const read = snapshotPermits(q);
  releasePermit(q, 'c', 'c#1');
  reconcilePermits(q, read, [holds('c', 'c#1')]);
  expect(q.holders).toEqual({});
});

test('a node workflow that did not answer changes nothing', () => {
  const p = granted('a');
  requestPermit(p, 'b');
  reconcilePermits(p, snapshotPermits(p), []);
  expect(p.holders).toEqual({ a: 'a#1' });
  expect(p.queue).toEqual(['b']);
});
