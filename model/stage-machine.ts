import { readyPackages } from './dependency-graph';
import { mergeInterrupts, packageInterrupts, type MergedInterrupt } from './interrupt';
import { entryKey, type NodeState, type PackageEntry, type Stage } from './node-state';
import { compareVersions, isValidVersion } from './semver';
import type { Package } from './manifests/skyhook';

// The per-node package lifecycle (§3.3-§3.7) as pure functions over NodeState. Every transition returns a new
// state; the node workflow is the only caller, so these functions encode what a node may do next, nothing more.

type SpecPackages = Readonly<Record<string, Package>>;
/** Changed configMap keys per package in the current config cycle (Skyhook's status.configUpdates). */
export type ConfigUpdates = Readonly<Record<string, readonly string[]>>;

export function hasInterrupt(pkg: Package, configUpdates: ConfigUpdates = {}): boolean {
  return packageInterrupts(pkg, configUpdates[pkg.name]).length > 0;
}

/** The stage after a completed one (§3.3), or undefined when the package is done. */
export function nextStage(stage: Stage, interrupts: boolean): Stage | undefined {
  switch (stage) {
    case 'uninstall':
      return 'apply';
    case 'apply':
    case 'upgrade':
      return 'config';
    case 'config':
      return interrupts ? 'interrupt' : undefined;
    case 'interrupt':
      return interrupts ? 'post-interrupt' : undefined;
    case 'post-interrupt':
      return undefined;
  }
}

export function isPackageComplete(pkg: Package, state: NodeState, configUpdates: ConfigUpdates = {}): boolean {
  const entry = state[entryKey(pkg.name, pkg.version)];
  const last: Stage = hasInterrupt(pkg, configUpdates) ? 'post-interrupt' : 'config';
  return entry !== undefined && entry.state === 'complete' && entry.stage === last;
}

/** Every spec package complete at its spec version, and nothing left to uninstall (§3.3). */
export function isNodeComplete(packages: SpecPackages, state: NodeState, configUpdates: ConfigUpdates = {}): boolean {
  return (
    Object.values(packages).every((p) => isPackageComplete(p, state, configUpdates)) &&
    !Object.values(state).some((e) => e.stage === 'uninstall')
  );
}

function newEntry(pkg: Package, stage: Stage, state: PackageEntry['state']): PackageEntry {
  return {
    name: pkg.name,
    version: pkg.version,
    image: pkg.image,
    ...(pkg.containerSHA && { containerSHA: pkg.containerSHA }),
    stage,
    state,
  };
}

export interface VersionChanges {
  state: NodeState;
  /** Packages whose version changed or that were removed: their config updates are cleared (§3.7). */
  changed: string[];
}

/**
 * Upgrade: a new `upgrade/in_progress` entry beside the old one. Downgrade: the old entry goes to
 * `uninstall/in_progress` and the new one waits as `uninstall/skipped`. Removal: `uninstall/in_progress` (§3.7).
 */
export function applyVersionChanges(
  packages: SpecPackages,
  state: NodeState,
  dropStalePlaceholders = true,
): VersionChanges {
  const next: Record<string, PackageEntry> = { ...state };
  const changed = new Set<string>();
  for (const [key, entry] of Object.entries(state)) {
    const pkg = packages[entry.name];
    if (pkg && pkg.version === entry.version) continue;
    // A downgrade's placeholder (`uninstall/skipped`, or `complete` once the old version is gone) whose version the
    // spec no longer wants: kept, it would hold the node incomplete for ever.
    if (
      dropStalePlaceholders &&
      entry.stage === 'uninstall' &&
      (entry.state === 'skipped' || entry.state === 'complete')
    ) {
      delete next[key];
      changed.add(entry.name);
      continue;
    }
    if (!pkg) {
      if (entry.stage !== 'uninstall') next[key] = { ...entry, stage: 'uninstall', state: 'in_progress' };
      changed.add(entry.name);
      continue;
    }
    if (entry.stage === 'uninstall' || state[entryKey(pkg.name, pkg.version)]) continue;
    changed.add(pkg.name);
    // A version Keelson cannot order (a foreign writer's) is treated as older: upgrade, never uninstall by guess.
    const downgrade = isValidVersion(entry.version) && compareVersions(pkg.version, entry.version) < 0;
    if (downgrade) {
      next[key] = { ...entry, stage: 'uninstall', state: 'in_progress' };
      next[entryKey(pkg.name, pkg.version)] = newEntry(pkg, 'uninstall', 'skipped');
    } else {
      next[entryKey(pkg.name, pkg.version)] = newEntry(pkg, 'upgrade', 'in_progress');
    }
  }
  return { state: next, changed: [...changed].sort() };
}

/**
 * Whether a configMap change starts a config cycle for this entry (§3.6): only once the package is past its apply or
 * upgrade. Before that its own config stage takes the new configMap anyway.
 */
export function inConfigCycle(entry: PackageEntry | undefined): boolean {
  return (
    entry !== undefined && (entry.stage === 'config' || entry.stage === 'interrupt' || entry.stage === 'post-interrupt')
  );
}

/** A configMap change re-runs config (§3.6). */
export function applyConfigChange(state: NodeState, pkg: Package): NodeState {
  const key = entryKey(pkg.name, pkg.version);
  const entry = state[key];
  return entry ? { ...state, [key]: { ...entry, stage: 'config', state: 'in_progress' } } : state;
}

/** A stage (re)starts; attempts count the runs of the current stage. */
export function startStage(state: NodeState, pkg: Package, stage: Stage): NodeState {
  const key = entryKey(pkg.name, pkg.version);
  const prev = state[key];
  const attempts = prev && prev.stage === stage && prev.state !== 'complete' ? (prev.attempts ?? 0) + 1 : 1;
  return { ...state, [key]: { ...newEntry(pkg, stage, 'in_progress'), attempts } };
}

/** The owner runs the merged interrupt; every other interrupting package waits as `interrupt/skipped` (§3.5). */
export function startInterrupt(state: NodeState, merged: MergedInterrupt, packages: SpecPackages): NodeState {
  let next = state;
  for (const name of merged.packages) {
    const pkg = packages[name];
    if (!pkg) continue;
    next = startStage(next, pkg, 'interrupt');
    if (name !== merged.owner)
      next = { ...next, [entryKey(name, pkg.version)]: { ...next[entryKey(name, pkg.version)]!, state: 'skipped' } };
  }
  return next;
}

export interface StageOutcome {
  restarts?: number;
  lastError?: string;
}

function currentEntry(state: NodeState, key: string, stage: Stage): PackageEntry | undefined {
  const entry = state[key];
  return entry && entry.stage === stage && entry.state !== 'complete' ? entry : undefined;
}

/**
 * A stage succeeded. A result for an entry that is gone or has moved to another stage is ignored, so a late
 * completion never brings back what rerun, reset or uninstall removed (G5).
 */
export function recordStageSuccess(state: NodeState, key: string, stage: Stage, outcome: StageOutcome = {}): NodeState {
  const entry = currentEntry(state, key, stage);
  if (!entry) return state;
  const next: Record<string, PackageEntry> = { ...state };
  const done: PackageEntry = {
    ...entry,
    state: 'complete',
    ...(outcome.restarts !== undefined && { restarts: outcome.restarts }),
  };
  delete done.lastError;
  const sameName = Object.entries(state).filter(([k, e]) => e.name === entry.name && k !== key);
  if (stage === 'uninstall') {
    delete next[key];
    for (const [k, e] of sameName) {
      if (e.stage === 'uninstall' && e.state === 'skipped') next[k] = { ...e, state: 'complete' };
    }
  } else if (stage === 'upgrade') {
    next[key] = done;
    for (const [k] of sameName) delete next[k];
  } else if (stage === 'interrupt') {
    next[key] = done;
    for (const [k, e] of Object.entries(state)) {
      if (e.stage === 'interrupt' && e.state === 'skipped') next[k] = { ...e, state: 'complete' };
    }
  } else next[key] = done;
  return next;
}

export function recordStageFailure(state: NodeState, key: string, stage: Stage, outcome: StageOutcome): NodeState {
  const entry = currentEntry(state, key, stage);
  if (!entry) return state;
  return {
    ...state,
    [key]: {
      ...entry,
      state: 'erroring',
      ...(outcome.restarts !== undefined && { restarts: outcome.restarts }),
      ...(outcome.lastError !== undefined && { lastError: outcome.lastError }),
    },
  };
}

/** CLI `package rerun`: without a stage the entry is removed (full re-run); with one, that stage runs again. */
export function rerunPackage(state: NodeState, pkg: Package, stage?: Stage): NodeState {
  const key = entryKey(pkg.name, pkg.version);
  if (!state[key]) return state;
  if (stage) return { ...state, [key]: { ...newEntry(pkg, stage, 'in_progress') } };
  const next = { ...state };
  delete next[key];
  return next;
}

export interface StageToRun {
  name: string;
  version: string;
  stage: Stage;
  /** Its run ends in an interrupt: apply or upgrade needs the interrupt permit, cordon and drain first (§3.5). */
  interrupting: boolean;
}

export interface NodePlan {
  /** Entries to uninstall (old versions and removed packages); they run ahead of the others (§3.4). */
  uninstall: PackageEntry[];
  /** Runnable package stages other than the interrupt, in name order; they may run in parallel. */
  run: StageToRun[];
  /** The merged interrupt of the runnable packages, once one of them has reached it. */
  interrupt?: MergedInterrupt & { waitingFor: string[] };
  complete: boolean;
}

/** What a node can do now: the dependsOn frontier (§3.4), uninstalls first, and the merged interrupt (§3.5). */
export function planNode(packages: SpecPackages, state: NodeState, configUpdates: ConfigUpdates = {}): NodePlan {
  const uninstall = Object.values(state)
    .filter((e) => e.stage === 'uninstall' && e.state !== 'skipped' && e.state !== 'complete')
    .sort((a, b) => (entryKey(a.name, a.version) < entryKey(b.name, b.version) ? -1 : 1));
  const completed = new Set(
    Object.values(packages)
      .filter((p) => isPackageComplete(p, state, configUpdates))
      .map((p) => p.name),
  );
  const run: StageToRun[] = [];
  const atInterrupt: string[] = [];
  const interrupting: Record<string, ReturnType<typeof packageInterrupts>> = {};
  for (const name of readyPackages(packages, completed)) {
    const pkg = packages[name]!;
    const interrupts = packageInterrupts(pkg, configUpdates[name]);
    const entry = state[entryKey(name, pkg.version)];
    let stage: Stage | undefined = 'apply';
    if (entry) stage = entry.state === 'complete' ? nextStage(entry.stage, interrupts.length > 0) : entry.stage;
    if (!stage || (entry?.stage === 'uninstall' && entry.state === 'skipped')) continue;
    if (interrupts.length > 0) interrupting[name] = interrupts;
    if (stage === 'interrupt') atInterrupt.push(name);
    else run.push({ name, version: pkg.version, stage, interrupting: interrupts.length > 0 });
  }
  const merged = atInterrupt.length > 0 ? mergeInterrupts(interrupting) : undefined;
  return {
    uninstall,
    run,
    ...(merged && { interrupt: { ...merged, waitingFor: merged.packages.filter((p) => !atInterrupt.includes(p)) } }),
    complete: isNodeComplete(packages, state, configUpdates),
  };
}

/**
 * The packages waiting on the interrupt permit (an interrupting apply or upgrade, the merged interrupt once due) fail
 * with `lastError`: a drain, protected-pod wait or reboot that failed ends as a recorded state, and the permit goes
 * back (G13). A rerun of the package starts it again.
 */
export function failInterruptWork(
  packages: SpecPackages,
  state: NodeState,
  configUpdates: ConfigUpdates,
  lastError: string,
): NodeState {
  const plan = planNode(packages, state, configUpdates);
  const fail = (s: NodeState, pkg: Package, stage: Stage) =>
    recordStageFailure(startStage(s, pkg, stage), entryKey(pkg.name, pkg.version), stage, { lastError });
  let next = state;
  for (const x of plan.run) {
    if (!x.interrupting || state[entryKey(x.name, x.version)]?.state === 'erroring') continue;
    next = fail(next, packages[x.name]!, x.stage);
  }
  const merged = plan.interrupt;
  if (merged && merged.waitingFor.length === 0) {
    next = startInterrupt(next, merged, packages);
    const owner = packages[merged.owner]!;
    next = recordStageFailure(next, entryKey(owner.name, owner.version), 'interrupt', { lastError });
  }
  return next;
}
