import type { V1Job } from '@kubernetes/client-node';
import { initialBatchState } from '../../model';
import { standInController } from '../../harness/kube';
import { deploymentPolicy } from '../../harness/manifests';
import { useE2E, jobNodeName, skyhook, type StatusJson } from './e2e-stack';

// §7 deployment-policy: legacy-compatibility, linear-strategy, multi-compartment, overlapping-selectors,
// batch-state-reset; cli/deployment-policy (`dp reset`). Batches are barriers (§2.2.2) sized by each compartment's strategy (§2.2.3); what a batch was
// is read back from the Jobs' creation and completion times, and from the batch fields of `rollout status --json`.

// Deleting each rollout is one CLI call, and under load one call can take most of a minute.
const e2e = useE2E('policy', { stopTimeoutMs: 900_000 });

const FIXED_ONE = { fixed: { initialBatch: 1 } };

/** Generous: under load one CLI call can take most of a minute. */
const LONG = 400_000;
const HOLD = 'keelson-e2e/hold';

/** A pod that runs until deleted (the simulator ends only package stage pods), protected from `rollout`'s interrupts. */
async function holdPod(node: string, rollout: string): Promise<void> {
  await e2e.core.createNamespacedPod({
    namespace: e2e.namespace,
    body: {
      metadata: {
        name: `hold-${node.split('-').at(-1)}`,
        labels: { [HOLD]: rollout },
        // Managed, so the drain of another rollout evicts it rather than being blocked by a bare pod.
        ownerReferences: await standInController(e2e.core, e2e.namespace),
      },
      spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/keelson/app:1' }] },
    },
  });
}

/** Slow enough stages that the nodes of one batch all start before any of them ends. */
const packages = (version = '1.0.0') => ({ tune: { version, simSeconds: 2 } });

const seconds = (t: string | Date | undefined) => new Date(t!).getTime();

/**
 * The batches the nodes ran in, as lists of node names: a node opens a new batch when its first Job was created
 * after every node of the current batch had completed its last Job (batches are barriers).
 */
function batchesOf(nodes: readonly string[], version: string): string[][] {
  const spans = nodes.map((node) => {
    const jobs = [...e2e.workloads.jobs.values()].filter(
      (j: V1Job) => jobNodeName(j) === node && j.metadata?.labels?.['keelson.dev/version'] === version,
    );
    const ends = jobs.map((j) => e2e.workloads.stageEnd(j));
    if (jobs.length === 0 || ends.some((end) => end === undefined))
      throw new Error(`${node}: ${jobs.length} Jobs of ${version}, not all completed`);
    return {
      node,
      start: Math.min(...jobs.map((j) => seconds(j.metadata!.creationTimestamp))),
      end: Math.max(...(ends as number[])),
    };
  });
  spans.sort((a, b) => a.start - b.start);
  const batches: { nodes: string[]; end: number }[] = [];
  for (const s of spans) {
    const current = batches.at(-1);
    if (current && s.start < current.end) {
      current.nodes.push(s.node);
      current.end = Math.max(current.end, s.end);
    } else batches.push({ nodes: [s.node], end: s.end });
  }
  return batches.map((b) => b.nodes);
}

const sizes = (batches: string[][]) => batches.map((b) => b.length);

/** Polls `rollout status --json` until the rollout is complete, keeping every status seen on the way. */
async function followUntilComplete(name: string, timeoutMs = LONG): Promise<StatusJson[]> {
  const seen: StatusJson[] = [];
  await e2e.statusUntil(
    name,
    'complete',
    (s) => {
      seen.push(s);
      if (s.status !== 'complete') throw new Error(`status ${s.status}`);
    },
    timeoutMs,
  );
  return seen;
}

/** Every value a compartment's batchState field took, in order, without repeats. */
function fieldHistory(seen: StatusJson[], compartment: string, field: string): number[] {
  const values: number[] = [];
  for (const s of seen) {
    const v = s.compartmentStatuses?.[compartment]?.batchState?.[field] as number | undefined;
    if (v !== undefined && values.at(-1) !== v) values.push(v);
  }
  return values;
}

const maxInProgress = (seen: StatusJson[], compartment: string) =>
  Math.max(0, ...seen.map((s) => (s.compartmentStatuses?.[compartment]?.inProgress as number | undefined) ?? 0));

test('legacy-compatibility: interruptionBudget count 3 without a policy is one __default__ compartment of batches of 3', async () => {
  const nodes = await e2e.addNodes(4);
  const name = 'legacy';
  await e2e.start_(name, [skyhook({ name, nodes, budget: { count: 3 }, packages: packages() })]);
  const seen = await followUntilComplete(name);
  expect(sizes(batchesOf(nodes, '1.0.0'))).toEqual([3, 1]);
  expect(maxInProgress(seen, '__default__')).toBeLessThanOrEqual(3);
  const s = seen.at(-1)!;
  expect(Object.keys(s.compartmentStatuses)).toEqual(['__default__']);
  expect(s.compartmentStatuses.__default__).toMatchObject({ matched: 4, ceiling: 3, completed: 4, inProgress: 0 });
  expect(s.completeNodes).toBe('4/4');
}, 400_000);

test('multi-compartment and linear-strategy: fixed, linear and exponential compartments batch by their own strategies and budgets', async () => {
  const fixed = await e2e.addNodes(3, () => ({ 'keelson-e2e/tier': 'fixed' }));
  const linear = await e2e.addNodes(4, () => ({ 'keelson-e2e/tier': 'linear' }));
  const exponential = await e2e.addNodes(4, () => ({ 'keelson-e2e/tier': 'exponential' }));
  const all = [...fixed, ...linear, ...exponential];
  const name = 'tiers';
  const tiers = deploymentPolicy({
    name: 'tiers',
    default: { budget: { percent: 100 }, strategy: FIXED_ONE },
    compartments: [
      {
        name: 'fixed',
        matchLabels: { 'keelson-e2e/tier': 'fixed' },
        budget: { count: 2 },
        strategy: { fixed: { initialBatch: 2 } },
      },
      {
        name: 'linear',
        matchLabels: { 'keelson-e2e/tier': 'linear' },
        budget: { percent: 50 },
        strategy: { linear: { initialBatch: 1, delta: 1 } },
      },
      {
        name: 'exponential',
        matchLabels: { 'keelson-e2e/tier': 'exponential' },
        budget: { count: 1 },
        strategy: { exponential: { initialBatch: 1, growthFactor: 3 } },
      },
    ],
  });
  await e2e.start_(name, [tiers, skyhook({ name, nodes: all, deploymentPolicy: 'tiers', packages: packages() })]);
  const seen = await followUntilComplete(name);

  // Each node went to the compartment its labels select; nothing was left for __default__.
  const last = seen.at(-1)!;
  for (const [compartment, nodes] of [
    ['fixed', fixed],
    ['linear', linear],
    ['exponential', exponential],
  ] as const) {
    for (const n of nodes) expect(last.nodes[n].compartment).toBe(compartment);
  }
  expect(last.compartmentStatuses).toMatchObject({
    fixed: { matched: 3, ceiling: 2, completed: 3, inProgress: 0, progressPercent: 100 },
    linear: { matched: 4, ceiling: 2, completed: 4, inProgress: 0, progressPercent: 100 },
    exponential: { matched: 4, ceiling: 1, completed: 4, inProgress: 0, progressPercent: 100 },
  });
  expect(last.compartmentStatuses.__default__).toMatchObject({ matched: 0 });

  // fixed: 2 then what is left; linear: 1, 2, then what is left; exponential: 1, then 1 x 3. The ceiling only
  // reports: a strategy's batch may be larger (§2.2.1).
  expect(sizes(batchesOf(fixed, '1.0.0'))).toEqual([2, 1]);
  expect(sizes(batchesOf(linear, '1.0.0'))).toEqual([1, 2, 1]);
  expect(sizes(batchesOf(exponential, '1.0.0'))).toEqual([1, 3]);
  expect(maxInProgress(seen, 'exponential')).toBeLessThanOrEqual(3);
  expect(maxInProgress(seen, 'linear')).toBeLessThanOrEqual(2);
  // While it ran, the status showed the linear batches only going forward, never failing; at completion the
  // policy's resetBatchStateOnCompletion (true by default) put every compartment back at batch 1.
  const running = seen.filter((s) => s.status !== 'complete');
  const batches = fieldHistory(running, 'linear', 'currentBatch');
  expect(batches).toEqual([...batches].sort((a, b) => a - b));
  expect(Math.max(...batches)).toBeLessThanOrEqual(4);
  expect(Math.max(0, ...fieldHistory(running, 'linear', 'consecutiveFailures'))).toBe(0);
  for (const c of ['fixed', 'linear', 'exponential'])
    expect(last.compartmentStatuses[c].batchState).toMatchObject({ currentBatch: 1, completedNodes: 0 });
}, 500_000);

test('overlapping-selectors: a node in several compartments goes to the smaller ceiling; first batch 3 in progress, 3 waiting', async () => {
  const westOnly = await e2e.addNodes(2, () => ({ 'keelson-e2e/region': 'us-west' }));
  const prodOnly = await e2e.addNodes(2, () => ({ 'keelson-e2e/env': 'production' }));
  const both = await e2e.addNodes(2, () => ({ 'keelson-e2e/region': 'us-west', 'keelson-e2e/env': 'production' }));
  const all = [...westOnly, ...prodOnly, ...both];
  const name = 'overlap';
  // Same strategy everywhere, so the tie goes to the smaller ceiling: prod-us-west (count 1) for the nodes in all three.
  const overlap = deploymentPolicy({
    name: 'overlap',
    default: { budget: { percent: 100 }, strategy: FIXED_ONE },
    compartments: [
      { name: 'us-west', matchLabels: { 'keelson-e2e/region': 'us-west' }, budget: { count: 2 }, strategy: FIXED_ONE },
      {
        name: 'production',
        matchLabels: { 'keelson-e2e/env': 'production' },
        budget: { count: 2 },
        strategy: FIXED_ONE,
      },
      {
        name: 'prod-us-west',
        matchLabels: { 'keelson-e2e/region': 'us-west', 'keelson-e2e/env': 'production' },
        budget: { count: 1 },
        strategy: FIXED_ONE,
      },
    ],
  });
  // Each node runs `early`, then holds, in progress, before the noop interrupt of `late` while its hold pod is
  // there: the first batch stays in place until the test has looked at it.
  const manifest = skyhook({
    name,
    nodes: all,
    deploymentPolicy: 'overlap',
    packages: {
      early: { version: '1.0.0' },
      late: { version: '1.0.0', dependsOn: { early: '1.0.0' }, interrupt: { type: 'noop' } },
    },
  }) as { spec: Record<string, unknown> };
  manifest.spec.podNonInterruptLabels = { matchLabels: { [HOLD]: name } };
  for (const n of all) await holdPod(n, name);
  await e2e.start_(name, [overlap, manifest]);
  const first = await e2e.statusUntil(
    name,
    'first batch: 3 in_progress, 3 waiting',
    (s) => {
      const statuses = all.map((n) => s.nodes[n]?.status as string);
      expect(statuses.filter((x) => x === 'in_progress')).toHaveLength(3);
      expect(statuses.filter((x) => x === 'waiting')).toHaveLength(3);
    },
    LONG,
  );
  // One node of each compartment runs in the first batch.
  const running = all.filter((n) => first.nodes[n].status === 'in_progress');
  expect(running.map((n) => first.nodes[n].compartment as string).sort()).toEqual([
    'prod-us-west',
    'production',
    'us-west',
  ]);
  await e2e.core.deleteCollectionNamespacedPod({ namespace: e2e.namespace, labelSelector: `${HOLD}=${name}` });

  const seen = await followUntilComplete(name);
  const last = seen.at(-1)!;
  for (const n of westOnly) expect(last.nodes[n].compartment).toBe('us-west');
  for (const n of prodOnly) expect(last.nodes[n].compartment).toBe('production');
  for (const n of both) expect(last.nodes[n].compartment).toBe('prod-us-west');
  expect(last.compartmentStatuses).toMatchObject({
    'us-west': { matched: 2, ceiling: 2, completed: 2 },
    production: { matched: 2, ceiling: 2, completed: 2 },
    'prod-us-west': { matched: 2, ceiling: 1, completed: 2 },
  });
  for (const nodes of [westOnly, prodOnly, both]) expect(sizes(batchesOf(nodes, '1.0.0'))).toEqual([1, 1]);
  // No node was ever shown unknown.
  for (const s of [first, ...seen]) for (const n of all) expect(s.nodes[n]?.status).not.toBe('unknown');
}, 600_000);

test('batch-state-reset: resetBatchStateOnCompletion resets the batch state at completion, a false override keeps it', async () => {
  const resetNodes = await e2e.addNodes(3);
  const keptNodes = await e2e.addNodes(3);
  const growing = deploymentPolicy({
    name: 'growing',
    default: { budget: { percent: 100 }, strategy: { linear: { initialBatch: 1, delta: 1 } } },
  });
  const inherits = (version: string) =>
    skyhook({ name: 'inherits', nodes: resetNodes, deploymentPolicy: 'growing', packages: packages(version) });
  await e2e.start_('inherits', [growing, inherits('1.0.0')]);
  await e2e.start_('keeps', [
    growing,
    skyhook({
      name: 'keeps',
      nodes: keptNodes,
      deploymentPolicy: 'growing',
      resetBatchStateOnCompletion: false,
      packages: packages(),
    }),
  ]);
  const inherited = (await followUntilComplete('inherits')).at(-1)!;
  const kept = (await followUntilComplete('keeps')).at(-1)!;
  expect(sizes(batchesOf(resetNodes, '1.0.0'))).toEqual([1, 2]);
  expect(sizes(batchesOf(keptNodes, '1.0.0'))).toEqual([1, 2]);
  // The policy's flag (true) is inherited: after completion the batch state is back at batch 1, counters zero.
  expect(inherited.compartmentStatuses.__default__.batchState).toEqual(initialBatchState());
  // The rollout's false override keeps where the batches got to.
  expect(kept.compartmentStatuses.__default__.batchState).toMatchObject({
    currentBatch: 3,
    completedNodes: 3,
    lastBatchSize: 2,
  });

  // A new generation of the reset rollout starts again from the first batch size.
  await e2e.apply('inherits', [growing, inherits('1.1.0')]);
  await e2e.statusUntil(
    'inherits',
    'generation 2 complete',
    (s) => {
      expect(s.generation).toBe(2);
      expect(s.status).toBe('complete');
    },
    LONG,
  );
  expect(sizes(batchesOf(resetNodes, '1.1.0'))).toEqual([1, 2]);
}, 500_000);

test('cli/deployment-policy: `dp reset` puts a batch state kept at completion back to batch 1; the next version starts again from the first batch size', async () => {
  const nodes = await e2e.addNodes(3);
  const growing = deploymentPolicy({
    name: 'growing',
    default: { budget: { percent: 100 }, strategy: { linear: { initialBatch: 1, delta: 1 } } },
  });
  const kept = (version: string) =>
    skyhook({
      name: 'dp-reset',
      nodes,
      deploymentPolicy: 'growing',
      resetBatchStateOnCompletion: false,
      packages: packages(version),
    });
  await e2e.start_('dp-reset', [growing, kept('1.0.0')]);
  const done = (await followUntilComplete('dp-reset')).at(-1)!;
  expect(sizes(batchesOf(nodes, '1.0.0'))).toEqual([1, 2]);
  expect(done.compartmentStatuses.__default__.batchState).toMatchObject({ currentBatch: 3, lastBatchSize: 2 });

  const out = await e2e.cliOk(['dp', 'reset', 'dp-reset', '--reason', 'next driver from one node', '--confirm']);
  expect(out).toBe(
    'rollout dp-reset: batches reset (next driver from one node)\n  __default__: batch 1, 3 complete, 0 failed\n',
  );
  const reset = await e2e.status('dp-reset');
  expect(reset.compartmentStatuses.__default__.batchState).toEqual({
    ...initialBatchState(),
    completedNodes: 3,
  });
  expect(reset.lastChange).toMatchObject({ action: 'reset-batches', reason: 'next driver from one node' });

  // Without the reset the next version would run as one batch of 3 (linear: the last batch of 2, plus 1).
  await e2e.apply('dp-reset', [growing, kept('1.1.0')]);
  await e2e.statusUntil(
    'dp-reset',
    'generation 2 complete',
    (s) => {
      expect(s.generation).toBe(2);
      expect(s.status).toBe('complete');
    },
    LONG,
  );
  expect(sizes(batchesOf(nodes, '1.1.0'))).toEqual([1, 2]);
}, 500_000);
