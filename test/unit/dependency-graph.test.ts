import fc from 'fast-check';
import { findCycle, readyPackages, topologicalOrder, type DependencyGraph } from '../../model';

const names = ['aa', 'bb', 'cc', 'dd', 'ee', 'ff', 'gg'];

// Edges only from later to earlier names: always acyclic.
const dagArb: fc.Arbitrary<DependencyGraph> = fc
  .array(fc.array(fc.boolean(), { minLength: names.length, maxLength: names.length }), {
    minLength: names.length,
    maxLength: names.length,
  })
  .map((matrix) =>
    Object.fromEntries(
      names.map((n, i) => [
        n,
        { dependsOn: Object.fromEntries(names.filter((_, j) => j < i && matrix[i]![j]).map((d) => [d, '1'])) },
      ]),
    ),
  );

describe('dependency graph (§3.4)', () => {
  test('topological order respects every edge in a DAG', () => {
    fc.assert(
      fc.property(dagArb, (graph) => {
        expect(findCycle(graph)).toBeUndefined();
        const order = topologicalOrder(graph)!;
        expect([...order].sort()).toEqual([...names].sort());
        for (const [n, { dependsOn }] of Object.entries(graph)) {
          for (const d of Object.keys(dependsOn ?? {})) expect(order.indexOf(d)).toBeLessThan(order.indexOf(n));
        }
      }),
    );
  });

  test('cycles are always rejected', () => {
    fc.assert(
      fc.property(
        dagArb,
        fc.integer({ min: 0, max: names.length - 1 }),
        fc.integer({ min: 0, max: names.length - 1 }),
        (graph, a, b) => {
          const [lo, hi] = [Math.min(a, b), Math.max(a, b)];
          // Close a cycle: a path hi -> ... -> lo exists once hi depends on lo; add lo -> hi.
          const g = JSON.parse(JSON.stringify(graph)) as Record<string, { dependsOn: Record<string, string> }>;
          g[names[hi]!]!.dependsOn[names[lo]!] = '1';
          g[names[lo]!]!.dependsOn[names[hi]!] = '1';
          const cycle = findCycle(g)!;
          expect(cycle).toBeDefined();
          expect(cycle[0]).toBe(cycle[cycle.length - 1]);
          for (let i = 0; i + 1 < cycle.length; i++) expect(g[cycle[i]!]!.dependsOn[cycle[i + 1]!]).toBeDefined();
          expect(topologicalOrder(g)).toBeUndefined();
        },
      ),
    );
  });

  test('ready packages: roots first, then those whose parents are all complete', () => {
    const g: DependencyGraph = { aa: {}, bb: {}, cc: { dependsOn: { aa: '1', bb: '1' } } };
    expect(readyPackages(g, new Set())).toEqual(['aa', 'bb']);
    expect(readyPackages(g, new Set(['aa']))).toEqual(['bb']);
    expect(readyPackages(g, new Set(['aa', 'bb']))).toEqual(['cc']);
    expect(readyPackages(g, new Set(['aa', 'bb', 'cc']))).toEqual([]);
  });
});
