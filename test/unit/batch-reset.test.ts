import fc from 'fast-check';
import {
  evaluateBatch,
  initialBatchState,
  nextBatch,
  resetBatchState,
  type AssignedCompartment,
  type BatchState,
  type NodeStatusEntry,
  type Status,
  type StrategyParams,
} from '../../model';
import { admitNext, newCompartmentBatch, resetCompartmentBatch } from '../../workflows/rollout/batch-admission';

// The manual batch reset (§2.2.6, `rollout reset-batches`): what resets, what does not, and that admission after a
// reset keeps the barrier and starts again from batch 1.

const strategy = (p: Partial<StrategyParams> = {}): StrategyParams =>
  ({
    type: 'fixed',
    initialBatch: 1,
    batchThreshold: 100,
    failureThreshold: 1,
    safetyLimit: 100,
    ...p,
  }) as StrategyParams;
const nodes = (...statuses: Status[]): NodeStatusEntry[] => statuses.map((status, i) => ({ name: `n${i}`, status }));
const compartment = (s: StrategyParams, names: string[]): AssignedCompartment => ({
  name: 'c',
  budget: { count: 1 },
  strategy: s,
  ceiling: 1,
  nodes: names,
});

describe('resetBatchState', () => {
  test('batch 1, no failures, not halted, no last batch; the checkpoint is the complete and erroring nodes now', () => {
    const now = nodes('complete', 'complete', 'erroring', 'waiting', 'in_progress', 'blocked');
    expect(resetBatchState(now)).toEqual({
      currentBatch: 1,
      consecutiveFailures: 0,
      completedNodes: 2,
      failedNodes: 1,
      shouldStop: false,
      lastBatchSize: 0,
      lastBatchFailed: false,
    });
  });

  test('a halted compartment admits again, a batch of initialBatch', () => {
    const s = strategy({ initialBatch: 2 });
    const now = nodes('complete', 'erroring', 'waiting', 'waiting', 'waiting');
    const halted: BatchState = { ...initialBatchState(), currentBatch: 3, consecutiveFailures: 1, shouldStop: true };
    expect(nextBatch({ strategy: s, ceiling: 1 }, now, halted)).toEqual({ kind: 'halted', nodes: [] });
    expect(nextBatch({ strategy: s, ceiling: 1 }, now, resetBatchState(now))).toEqual({
      kind: 'new',
      nodes: ['n2', 'n3'],
    });
  });

  test('the first batch after a reset is judged on its own nodes, not credited with those completed before', () => {
    const before = nodes('complete', 'complete', 'complete', 'waiting');
    const after = nodes('complete', 'complete', 'complete', 'erroring');
    const judged = evaluateBatch(strategy(), after, resetBatchState(before), 1);
    expect(judged).toMatchObject({ currentBatch: 2, consecutiveFailures: 1, lastBatchFailed: true, failedNodes: 1 });
  });
});

describe('resetCompartmentBatch with admitNext', () => {
  test('a batch in flight keeps its barrier and is not judged; the batch after it is batch 1 again', () => {
    const s = strategy({ type: 'linear', delta: 2, initialBatch: 1 } as Partial<StrategyParams>);
    const c = compartment(s, ['n0', 'n1', 'n2', 'n3', 'n4', 'n5']);
    const batch = newCompartmentBatch();
    batch.state = { ...initialBatchState(), currentBatch: 3, lastBatchSize: 3, completedNodes: 1 };
    batch.open = ['n1', 'n2'];
    const inFlight = nodes('complete', 'in_progress', 'in_progress', 'waiting', 'waiting', 'waiting');
    const admitted = (n: string) => ['n0', 'n1', 'n2'].includes(n);
    resetCompartmentBatch(batch, inFlight);
    expect(admitNext('batches', c, inFlight, admitted, batch)).toEqual([]);
    // n1 fails and n2 completes: judged, that batch would count a failure and halt the compartment.
    const settled = nodes('complete', 'erroring', 'complete', 'waiting', 'waiting', 'waiting');
    expect(admitNext('batches', c, settled, admitted, batch)).toEqual(['n3']);
    expect(batch.state).toMatchObject({ currentBatch: 1, consecutiveFailures: 0, shouldStop: false });
    expect(batch.state).toMatchObject({ completedNodes: 2, failedNodes: 1 });
  });

  test('a reset at completion, then a new generation: batch 1 is judged on its own nodes and the next one grows', () => {
    const c = compartment(strategy({ type: 'linear', delta: 1, failureThreshold: null } as Partial<StrategyParams>), [
      'n0',
      'n1',
      'n2',
    ]);
    const batch = newCompartmentBatch();
    batch.state = { ...initialBatchState(), currentBatch: 3, lastBatchSize: 2, completedNodes: 3 };
    resetCompartmentBatch(batch, nodes('complete', 'complete', 'complete'));
    expect(batch.state).toMatchObject({ currentBatch: 1, completedNodes: 3 });
    // The next generation: every node waits again.
    const none = () => false;
    expect(admitNext('batches', c, nodes('waiting', 'waiting', 'waiting'), none, batch)).toEqual(['n0']);
    const first = (n: string) => n === 'n0';
    expect(admitNext('batches', c, nodes('complete', 'waiting', 'waiting'), first, batch)).toEqual(['n1', 'n2']);
    expect(batch.state).toMatchObject({ currentBatch: 2, lastBatchSize: 1, completedNodes: 1, lastBatchFailed: false });
  });

  test('nodes in flight outside an open batch are held as one', () => {
    const c = compartment(strategy(), ['n0', 'n1', 'n2']);
    const batch = newCompartmentBatch();
    const now = nodes('in_progress', 'waiting', 'waiting');
    resetCompartmentBatch(batch, now);
    expect(batch.open).toEqual(['n0']);
    expect(admitNext('batches', c, now, (n) => n === 'n0', batch)).toEqual([]);
    expect(admitNext('batches', c, nodes('erroring', 'waiting', 'waiting'), (n) => n === 'n0', batch)).toEqual(['n1']);
    expect(batch.state.currentBatch).toBe(1);
  });
});

type Op = { kind: 'pass' } | { kind: 'settle'; pick: number; ok: boolean } | { kind: 'reset' };

test('property: with resets anywhere, no batch starts beside nodes in flight; after a reset batch 1 is at most initialBatch and a halt is lifted', () => {
  const strategyArb = fc.record({
    type: fc.constantFrom('fixed', 'linear', 'exponential'),
    initialBatch: fc.integer({ min: 1, max: 3 }),
    batchThreshold: fc.integer({ min: 1, max: 100 }),
    failureThreshold: fc.integer({ min: 1, max: 2 }),
    safetyLimit: fc.constant(100),
    delta: fc.integer({ min: 1, max: 2 }),
    growthFactor: fc.integer({ min: 2, max: 3 }),
  }) as fc.Arbitrary<StrategyParams>;
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { weight: 4, arbitrary: fc.constant({ kind: 'pass' as const }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), ok: fc.boolean() }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  );
  fc.assert(
    fc.property(strategyArb, fc.integer({ min: 1, max: 12 }), fc.array(opArb, { maxLength: 60 }), (s, n, ops) => {
      const names = Array.from({ length: n }, (_, i) => `n${i}`);
      const status = new Map<string, Status>(names.map((x) => [x, 'waiting']));
      const entries = () => names.map((x) => ({ name: x, status: status.get(x)! }));
      const c = compartment(s, names);
      const batch = newCompartmentBatch();
      let sinceReset: 'none' | 'reset' = 'none';
      for (const op of ops) {
        if (op.kind === 'reset') {
          resetCompartmentBatch(batch, entries());
          sinceReset = 'reset';
        } else if (op.kind === 'settle') {
          const running = names.filter((x) => status.get(x) === 'in_progress');
          if (running.length > 0) status.set(running[op.pick % running.length]!, op.ok ? 'complete' : 'erroring');
        } else {
          const before = entries();
          const inFlight = before.some((e) => e.status === 'in_progress');
          const admitted = admitNext('batches', c, before, (x) => status.get(x) !== 'waiting', batch);
          if (inFlight) expect(admitted).toEqual([]);
          for (const x of admitted) expect(status.get(x)).toBe('waiting');
          if (sinceReset === 'reset' && !inFlight) {
            // The halt is lifted and batch 1 is sized initialBatch.
            if (before.some((e) => e.status === 'waiting')) expect(admitted.length).toBeGreaterThan(0);
            expect(admitted.length).toBeLessThanOrEqual(s.initialBatch);
            sinceReset = 'none';
          }
          for (const x of admitted) status.set(x, 'in_progress');
        }
      }
    }),
    { numRuns: 2000 },
  );
});
