import fc from 'fast-check';
import {
  batchSize,
  evaluateBatch,
  initialBatchState,
  nextBatch,
  type BatchState,
  type StrategyParams,
  type Status,
} from '../../model';

const common = { initialBatch: 1, batchThreshold: 100, failureThreshold: null, safetyLimit: 50 };
const fixed = (p: Partial<StrategyParams> = {}): StrategyParams =>
  ({ type: 'fixed', ...common, ...p }) as StrategyParams;
const linear = (p: Partial<StrategyParams> = {}): StrategyParams =>
  ({ type: 'linear', ...common, delta: 1, ...p }) as StrategyParams;
const exponential = (p: Partial<StrategyParams> = {}): StrategyParams =>
  ({ type: 'exponential', ...common, growthFactor: 2, ...p }) as StrategyParams;
const state = (p: Partial<BatchState> = {}): BatchState => ({ ...initialBatchState(), ...p });
const nodes = (...statuses: Status[]) => statuses.map((status, i) => ({ name: `n${i}`, status }));

describe('batch sizes (§2.2.3)', () => {
  test('fixed is initialBatch; first batches use initialBatch', () => {
    expect(batchSize(fixed({ initialBatch: 3 }), 10, state({ currentBatch: 4, lastBatchSize: 3 }))).toBe(3);
    expect(batchSize(linear({ initialBatch: 2 }), 10, state())).toBe(2);
    expect(batchSize(exponential({ initialBatch: 2 }), 10, state())).toBe(2);
  });

  // [case, strategy, total, state, expected size]
  test.each<[string, StrategyParams, number, Partial<BatchState>, number]>([
    ['linear grows by delta', linear({ delta: 2 }), 20, { currentBatch: 2, lastBatchSize: 3, completedNodes: 3 }, 5],
    [
      'linear shrinks after a failed batch below the safety limit',
      linear({ delta: 2 }),
      20,
      { currentBatch: 2, lastBatchSize: 3, failedNodes: 3, lastBatchFailed: true },
      1,
    ],
    [
      'linear past the safety limit ignores the failure',
      linear({ delta: 2 }),
      10,
      { currentBatch: 3, lastBatchSize: 3, completedNodes: 5, failedNodes: 1, lastBatchFailed: true },
      4,
    ],
    ['exponential multiplies', exponential(), 100, { currentBatch: 3, lastBatchSize: 4, completedNodes: 6 }, 8],
    [
      'exponential divides after a failure',
      exponential({ growthFactor: 3 }),
      100,
      { currentBatch: 2, lastBatchSize: 5, failedNodes: 5, lastBatchFailed: true },
      1,
    ],
    ['exponential capped at remaining', exponential(), 10, { currentBatch: 4, lastBatchSize: 8, completedNodes: 7 }, 3],
  ])('%s', (_case, strategy, total, s, expected) => {
    expect(batchSize(strategy, total, state(s))).toBe(expected);
  });

  test('property: every size is between 1 and the remaining nodes (when any remain)', () => {
    const strategyArb = fc.oneof(
      fc.record({ initialBatch: fc.integer({ min: 1, max: 50 }) }).map((p) => fixed(p)),
      fc
        .record({ initialBatch: fc.integer({ min: 1, max: 50 }), delta: fc.integer({ min: 1, max: 20 }) })
        .map((p) => linear(p)),
      fc
        .record({ initialBatch: fc.integer({ min: 1, max: 50 }), growthFactor: fc.integer({ min: 2, max: 5 }) })
        .map((p) => exponential(p)),
    );
    fc.assert(
      fc.property(
        strategyArb,
        fc.integer({ min: 1, max: 200 }),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 0, max: 200 }),
        fc.boolean(),
        (s, total, c, f, batch, last, failed) => {
          const completed = c % (total + 1);
          const failedNodes = f % (total - completed + 1);
          const size = batchSize(
            s,
            total,
            state({
              currentBatch: batch,
              lastBatchSize: last,
              completedNodes: completed,
              failedNodes,
              lastBatchFailed: failed,
            }),
          );
          const remaining = total - completed - failedNodes;
          expect(size).toBeGreaterThanOrEqual(1);
          expect(size).toBeLessThanOrEqual(Math.max(1, remaining));
          expect(size).toBeLessThanOrEqual(total);
        },
      ),
    );
  });

  test('property: a rollout with no failures admits every node, in growing or equal batches', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom('fixed', 'linear', 'exponential'),
        (total, initialBatch, type) => {
          const strategy =
            type === 'fixed'
              ? fixed({ initialBatch })
              : type === 'linear'
                ? linear({ initialBatch })
                : exponential({ initialBatch });
          const statuses: Status[] = Array.from({ length: total }, () => 'waiting');
          let s = initialBatchState();
          let previous = 0;
          for (let round = 0; round < total + 1 && statuses.includes('waiting'); round++) {
            const batch = nextBatch(
              { strategy, ceiling: 1 },
              statuses.map((status, i) => ({ name: String(i), status })),
              s,
            );
            expect(batch.kind).toBe('new');
            if (strategy.type !== 'fixed' && batch.nodes.length < total - s.completedNodes)
              expect(batch.nodes.length).toBeGreaterThanOrEqual(previous);
            previous = batch.nodes.length;
            for (const n of batch.nodes) statuses[Number(n)] = 'complete';
            s = evaluateBatch(
              strategy,
              statuses.map((status, i) => ({ name: String(i), status })),
              s,
              batch.nodes.length,
            );
            expect(s.lastBatchFailed).toBe(false);
          }
          expect(statuses.every((x) => x === 'complete')).toBe(true);
        },
      ),
    );
  });
});

describe('next batch (§2.2.2)', () => {
  test('a halted compartment admits nothing', () => {
    expect(nextBatch({ strategy: fixed(), ceiling: 2 }, nodes('waiting'), state({ shouldStop: true }))).toEqual({
      kind: 'halted',
      nodes: [],
    });
  });
  test('a batch in progress is a barrier', () => {
    expect(
      nextBatch(
        { strategy: fixed({ initialBatch: 5 }), ceiling: 5 },
        nodes('in_progress', 'waiting', 'in_progress'),
        state(),
      ),
    ).toEqual({ kind: 'in_progress', nodes: ['n0', 'n2'] });
  });
  test('new batch: pick order waiting, unknown, blocked, erroring; complete skipped; ceiling without strategy', () => {
    const ns = nodes('erroring', 'blocked', 'complete', 'unknown', 'waiting', 'waiting');
    expect(nextBatch({ strategy: fixed({ initialBatch: 5 }), ceiling: 1 }, ns, state())).toEqual({
      kind: 'new',
      nodes: ['n4', 'n5', 'n3', 'n1', 'n0'],
    });
    expect(nextBatch({ ceiling: 2 }, ns, state({ shouldStop: true }))).toEqual({ kind: 'new', nodes: ['n4', 'n5'] });
  });
});

describe('batch evaluation (§2.2.4)', () => {
  test('success resets consecutive failures and advances the batch', () => {
    const s = evaluateBatch(fixed(), nodes('complete', 'complete', 'waiting'), state({ consecutiveFailures: 1 }), 2);
    expect(s).toEqual({
      currentBatch: 2,
      consecutiveFailures: 0,
      completedNodes: 2,
      failedNodes: 0,
      shouldStop: false,
      lastBatchSize: 2,
      lastBatchFailed: false,
    });
  });
  test('batchThreshold decides failure', () => {
    const ns = nodes('complete', 'erroring', 'waiting', 'waiting');
    expect(evaluateBatch(fixed({ batchThreshold: 50 }), ns, state(), 2).lastBatchFailed).toBe(false);
    expect(evaluateBatch(fixed({ batchThreshold: 51 }), ns, state(), 2).lastBatchFailed).toBe(true);
  });
  test('failureThreshold stops below the safety limit only', () => {
    const ns = nodes('erroring', 'waiting', 'waiting', 'waiting', 'waiting');
    expect(evaluateBatch(fixed({ failureThreshold: 2 }), ns, state({ consecutiveFailures: 1 }), 1).shouldStop).toBe(
      true,
    );
    expect(evaluateBatch(fixed({ failureThreshold: 3 }), ns, state({ consecutiveFailures: 1 }), 1).shouldStop).toBe(
      false,
    );
    expect(evaluateBatch(fixed({ failureThreshold: null }), ns, state({ consecutiveFailures: 10 }), 1).shouldStop).toBe(
      false,
    );
    const late = nodes('complete', 'complete', 'complete', 'erroring', 'waiting');
    expect(evaluateBatch(fixed({ failureThreshold: 1 }), late, state({ completedNodes: 3 }), 1).shouldStop).toBe(false);
  });
  test('a negative difference re-checkpoints without judging', () => {
    const s = evaluateBatch(fixed(), nodes('complete', 'waiting'), state({ completedNodes: 3, currentBatch: 4 }), 1);
    expect(s).toEqual(state({ completedNodes: 1, currentBatch: 4 }));
  });
  test('blocked nodes: nothing changed counts as 0/0, all blocked skips', () => {
    expect(evaluateBatch(fixed(), nodes('blocked', 'waiting'), state(), 1)).toMatchObject({
      currentBatch: 2,
      lastBatchFailed: true,
    });
    expect(evaluateBatch(fixed(), nodes('blocked', 'blocked'), state(), 2)).toEqual(state());
    expect(evaluateBatch(fixed(), nodes('waiting'), state(), 1)).toEqual(state());
  });
});
