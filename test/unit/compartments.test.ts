import {
  assignCompartments,
  ceiling,
  effectivePolicy,
  legacyPolicySpec,
  parseRolloutDocuments,
  type DeploymentPolicySpec,
  type NodeInfo,
} from '../../model';

const policy = (compartments: unknown[]): DeploymentPolicySpec => {
  const { policies, errors } = parseRolloutDocuments([
    {
      apiVersion: 'skyhook.nvidia.com/v1alpha1',
      kind: 'DeploymentPolicy',
      metadata: { name: 'p' },
      spec: { default: { budget: { percent: 100 }, strategy: { exponential: {} } }, compartments },
    },
  ]);
  expect(errors).toEqual([]);
  return policies[0]!.spec;
};

describe('ceilings (§2.2.1)', () => {
  test.each([
    [{ count: 3 }, 1, 3],
    [{ count: 3 }, 0, 3],
    [{ percent: 50 }, 5, 2],
    [{ percent: 1 }, 5, 1],
    [{ percent: 50 }, 0, 0],
  ])('%j over %i nodes is %i', (budget, matched, expected) => {
    expect(ceiling(budget, matched)).toBe(expected);
  });
});

describe('legacy interruptionBudget (§2.3)', () => {
  test('fixed strategy sized by the budget, no failure threshold, no reset', () => {
    expect(legacyPolicySpec({ count: 3 }, 10).default.strategy.fixed).toEqual({
      initialBatch: 3,
      batchThreshold: 100,
      failureThreshold: null,
      safetyLimit: 50,
    });
    expect(legacyPolicySpec({ count: 30 }, 10).default.strategy.fixed!.initialBatch).toBe(10);
    expect(legacyPolicySpec({ percent: 25 }, 10).default.strategy.fixed!.initialBatch).toBe(2);
    expect(legacyPolicySpec(undefined, 10).default).toMatchObject({
      budget: { percent: 100 },
      strategy: { fixed: { initialBatch: 10 } },
    });
    expect(legacyPolicySpec({ percent: 1 }, 10).default.strategy.fixed!.initialBatch).toBe(1);
    expect(legacyPolicySpec({ count: 3 }, 10).resetBatchStateOnCompletion).toBe(false);
  });
  test('effectivePolicy names it legacy', () => {
    const { rollouts } = parseRolloutDocuments([
      {
        apiVersion: 'skyhook.nvidia.com/v1alpha1',
        kind: 'Skyhook',
        metadata: { name: 'r' },
        spec: { interruptionBudget: { count: 3 } },
      },
    ]);
    expect(effectivePolicy(rollouts[0]!, 8)).toMatchObject({
      name: 'legacy',
      spec: { default: { budget: { count: 3 } } },
    });
  });
});

describe('compartment assignment (§2.2.5)', () => {
  test('the overlapping-selectors e2e: safest strategy, then smaller ceiling, then name', () => {
    const spec = policy([
      {
        name: 'us-west',
        selector: { matchLabels: { region: 'us-west' } },
        budget: { count: 2 },
        strategy: { exponential: {} },
      },
      {
        name: 'production',
        selector: { matchLabels: { env: 'prod' } },
        budget: { count: 2 },
        strategy: { exponential: {} },
      },
      {
        name: 'prod-us-west',
        selector: { matchLabels: { env: 'prod', region: 'us-west' } },
        budget: { count: 1 },
        strategy: { exponential: {} },
      },
    ]);
    const nodes: NodeInfo[] = [
      { name: 'a', labels: { env: 'prod', region: 'us-west' } },
      { name: 'b', labels: { env: 'prod', region: 'us-west' } },
      { name: 'c', labels: { env: 'prod' } },
      { name: 'd', labels: { env: 'prod' } },
      { name: 'e', labels: { region: 'us-west' } },
      { name: 'f', labels: { region: 'us-west' } },
      { name: 'g', labels: {} },
    ];
    const result = assignCompartments(nodes, spec);
    expect(result.map((c) => [c.name, c.nodes, c.ceiling])).toEqual([
      ['us-west', ['e', 'f'], 2],
      ['production', ['c', 'd'], 2],
      ['prod-us-west', ['a', 'b'], 1],
      ['__default__', ['g'], 1],
    ]);
  });

  test('strategy safety beats ceiling; name breaks the last tie; no strategy ranks last', () => {
    const spec = policy([
      { name: 'zz-fixed', selector: { matchLabels: { a: 'x' } }, budget: { count: 9 }, strategy: { fixed: {} } },
      { name: 'aa-linear', selector: { matchLabels: { b: 'x' } }, budget: { count: 1 }, strategy: { linear: {} } },
      { name: 'bb-none', selector: { matchLabels: { c: 'x' } }, budget: { count: 1 } },
      { name: 'aa-none', selector: { matchLabels: { d: 'x' } }, budget: { count: 1 } },
    ]);
    const pick = (labels: Record<string, string>) =>
      assignCompartments([{ name: 'n', labels }], spec).find((c) => c.nodes.length)!.name;
    expect(pick({ a: 'x', b: 'x' })).toBe('zz-fixed');
    expect(pick({ b: 'x', c: 'x' })).toBe('aa-linear');
    expect(pick({ c: 'x', d: 'x' })).toBe('aa-none');
    expect(
      assignCompartments([{ name: 'n', labels: { c: 'x' } }], spec).find((c) => c.name === 'bb-none')!.strategy,
    ).toBeUndefined();
  });
});
