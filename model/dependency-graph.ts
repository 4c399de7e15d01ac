// The dependsOn graph of one rollout: vertices are package names (a spec holds one version per name).

export type DependencyGraph = Readonly<Record<string, { dependsOn?: Readonly<Record<string, string>> }>>;

function sortedDeps(graph: DependencyGraph, name: string): string[] {
  return Object.keys(graph[name]?.dependsOn ?? {}).sort();
}

/** A cycle as a path that starts and ends at the same package, or undefined when the graph is acyclic. */
export function findCycle(graph: DependencyGraph): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === 'done' || !(name in graph)) return undefined;
    if (state.get(name) === 'open') return [...stack.slice(stack.indexOf(name)), name];
    state.set(name, 'open');
    stack.push(name);
    for (const dep of sortedDeps(graph, name)) {
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(name, 'done');
    return undefined;
  };
  for (const name of Object.keys(graph).sort()) {
    const cycle = visit(name);
    if (cycle) return cycle;
  }
  return undefined;
}

/** Packages ordered so that each comes after its dependencies (ties by name); undefined for a cyclic graph. */
export function topologicalOrder(graph: DependencyGraph): string[] | undefined {
  const order: string[] = [];
  const done = new Set<string>();
  let ready = readyPackages(graph, done);
  while (ready.length > 0) {
    const next = ready[0]!;
    order.push(next);
    done.add(next);
    ready = readyPackages(graph, done);
  }
  return order.length === Object.keys(graph).length ? order : undefined;
}

/** Packages not yet complete whose dependencies all are, sorted by name: the ones that may run now (§3.4). */
export function readyPackages(graph: DependencyGraph, complete: ReadonlySet<string>): string[] {
  return Object.keys(graph)
    .filter((name) => !complete.has(name) && sortedDeps(graph, name).every((dep) => complete.has(dep)))
    .sort();
}
