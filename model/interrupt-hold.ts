import { entryKey, type NodeState } from './node-state';
import type { Package } from './manifests/skyhook';
import { hasInterrupt, isPackageComplete, type ConfigUpdates, type NodePlan } from './stage-machine';

// ONE merged interrupt per node (§3.5): the plan merges the interrupts of the packages on the dependsOn
// frontier only, so a package that interrupts but still waits for a dependency (A: reboot, dependsOn B) would get an
// interrupt of its own after the frontier's one. The node workflow holds the merged interrupt while such a package
// still has stages to run before its interrupt, unless it depends (transitively) on a package of the merged
// interrupt (holding would then never end) or on an erroring one (it cannot progress until someone acts).

/** The interrupting packages the merged interrupt of `plan` waits for, beyond `plan.interrupt.waitingFor`. */
export function interruptHeldFor(
  packages: Readonly<Record<string, Package>>,
  state: NodeState,
  configUpdates: ConfigUpdates,
  plan: NodePlan,
): string[] {
  const merged = plan.interrupt;
  if (!merged) return [];
  const inPlan = new Set([...merged.packages, ...plan.run.map((x) => x.name)]);
  const erroring = (name: string) => state[entryKey(name, packages[name]?.version ?? '')]?.state === 'erroring';
  const deps = (name: string, seen = new Set<string>()): Set<string> => {
    for (const dep of Object.keys(packages[name]?.dependsOn ?? {}))
      if (!seen.has(dep)) {
        seen.add(dep);
        deps(dep, seen);
      }
    return seen;
  };
  const held: string[] = [];
  for (const [name, pkg] of Object.entries(packages)) {
    if (inPlan.has(name) || !hasInterrupt(pkg, configUpdates) || isPackageComplete(pkg, state, configUpdates)) continue;
    const entry = state[entryKey(name, pkg.version)];
    if (entry && (entry.stage === 'interrupt' || entry.stage === 'post-interrupt')) continue;
    const upstream = [...deps(name)];
    if (upstream.some((d) => merged.packages.includes(d) || erroring(d))) continue;
    held.push(name);
  }
  return held;
}
