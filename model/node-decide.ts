import { interruptHeldFor } from './interrupt-hold';
import type { MergedInterrupt } from './interrupt';
import { stageJobName } from './job';
import { entryKey, type NodeState, type PackageEntry, type Stage } from './node-state';
import type { Package } from './manifests/skyhook';
import { isNodeComplete, planNode, type ConfigUpdates } from './stage-machine';

// What a node workflow does next, as a pure function of what it knows (docs/architecture.md, "The node workflow").
// The workflow's handlers only record events; its loop calls decideNode and carries out the intents in order. Two
// guarantees are decided here, so the model-based test can check them over any interleaving:
// - G11 one executor: a stage of a package starts only when no run of that package is in flight on the node and no
//   stopped run's Job of it may still be running (its deletion is confirmed only once the Job is gone).
// - G12 interrupts alone: the merged interrupt starts only when no stage run or stopped Job is left on the node, no
//   stage starts once it is due, and none starts while it runs (until the reboot is seen and the node is Ready).
// - G16 interrupting work on a cordoned node: a stage of a package that ends in an interrupt starts only while its
//   rollout's cordon is on the node, so not once the release that uncordons it has begun; and a release or forget
//   uncordons only when no stopped run's Job may still run (a stopped apply could otherwise start on a node just made
//   schedulable).

export type RunnableStage = Exclude<Stage, 'interrupt'>;

/** One stage run the workflow waits on: its Job may be unfinished. */
export interface StageRunKey {
  rollout: string;
  package: string;
  version: string;
  stage: RunnableStage;
}

/** What the node workflow holds for one rollout, as the decision needs it. */
export interface RolloutOnNode {
  name: string;
  packages: Readonly<Record<string, Package>>;
  state: NodeState;
  configUpdates: ConfigUpdates;
  paused: boolean;
  disabled: boolean;
  waiting: boolean;
  initialized: boolean;
  forgetting: boolean;
}

export interface DecisionView {
  node: string;
  /** In priority order (§5.5). */
  rollouts: readonly RolloutOnNode[];
  runs: readonly StageRunKey[];
  /**
   * Runs started before a continue-as-new that no wait follows yet: their Jobs may be unfinished. Each is adopted
   * (even in a paused, disabled or waiting rollout: adopting starts nothing) or, when its entry moved on, abandoned.
   */
  carried: readonly StageRunKey[];
  /** Jobs of stopped runs, by name, with their rollout and package: deleted, not yet confirmed gone. */
  stopping: ReadonlyMap<string, StoppingJob>;
  /** Finished Jobs waiting for the write that records them, then deletion: a run of the same name would adopt them. */
  finishedDeleting: ReadonlySet<string>;
  /** Tasks in flight (request, prepare, interrupt, release, init:<rollout>, forget:<rollout>, delete:<job>). */
  tasks: ReadonlySet<string>;
  interrupt: { rollout: string; phase: 'requested' | 'granted' | 'prepared' } | null;
  /** Continue-as-new is under way: nothing new starts. */
  draining: boolean;
  /**
   * The G11/G12 guards. False only when replaying histories recorded before them, which started stages beside running
   * ones and interrupts beside stage Jobs.
   */
  guards: boolean;
  /** The G16 cordon guards. False only when replaying histories recorded before them. */
  cordonGuards: boolean;
}

export interface StoppingJob {
  rollout: string;
  package: string;
  /** A stage of a package that ends in an interrupt, as the run was made (a later spec may have dropped it). */
  interrupting: boolean;
}

export type NodeIntent =
  | { kind: 'delete'; jobName: string }
  | { kind: 'forget'; rollout: string }
  | { kind: 'init'; rollout: string }
  | { kind: 'waiting'; rollout: string; waiting: boolean }
  | { kind: 'start'; rollout: string; package: Package; stage: RunnableStage }
  | { kind: 'abandon'; run: StageRunKey; jobName: string }
  | { kind: 'request'; rollout: string }
  | { kind: 'prepare'; rollout: string }
  | { kind: 'interrupt'; rollout: string; merged: MergedInterrupt }
  | { kind: 'release'; rollout: string; uncordon: boolean };

export function decideNode(view: DecisionView): NodeIntent[] {
  const intents: NodeIntent[] = [];
  const runs = [...view.runs];
  const carried: StageRunKey[] = [];
  let interrupt = view.interrupt;
  const interruptRunning = view.tasks.has('interrupt');
  /** G16: the release's uncordon has begun, so the cordon is going: nothing new that needs it starts. */
  const releasing = view.cordonGuards && view.tasks.has('release');
  /**
   * G16: a stopped or abandoned run of the rollout's interrupting work may still have its Job created or running, or a
   * continue-as-new stopped the waits (their Jobs run on, to be adopted by the next run): its cordon stays until they
   * are gone or adopted. Another rollout's Jobs, and packages without an interrupt, do not hold it (a delete that never
   * ends would hold the permit for good).
   */
  const jobsMayRun = (r: RolloutOnNode): boolean => {
    if (!view.cordonGuards) return false;
    if (view.draining || carried.some((k) => k.rollout === r.name)) return true;
    // As the run was made: a spec update may have dropped the interrupt of a Job that still runs.
    return [...view.stopping.values()].some((job) => job.rollout === r.name && job.interrupting);
  };

  const jobOf = (rollout: string, pkg: Pick<Package, 'name' | 'version'>, stage: RunnableStage) =>
    stageJobName({ rollout, package: pkg.name, version: pkg.version, stage, node: view.node });
  const mayStart = (rollout: string, pkg: Package, stage: RunnableStage): boolean => {
    const job = jobOf(rollout, pkg, stage);
    if (view.finishedDeleting.has(job)) return false;
    if (!view.guards) {
      return (
        !view.stopping.has(job) &&
        !runs.some(
          (r) => r.rollout === rollout && r.package === pkg.name && r.version === pkg.version && r.stage === stage,
        )
      );
    }
    if (interruptRunning) return false;
    const busy = (k: StageRunKey) => k.package === pkg.name;
    return !runs.some(busy) && !carried.some(busy) && ![...view.stopping.values()].some((j) => j.package === pkg.name);
  };
  const start = (rollout: string, pkg: Package, stage: RunnableStage) => {
    if (!mayStart(rollout, pkg, stage)) return;
    runs.push({ rollout, package: pkg.name, version: pkg.version, stage });
    intents.push({ kind: 'start', rollout, package: pkg, stage });
  };
  /** `yielding`: the rollout cannot use its permit now; unless its node is prepared, its other runs do not keep it. */
  const releaseIfDone = (r: RolloutOnNode, yielding = false) => {
    if (interrupt?.rollout !== r.name || interruptRunning) return;
    // Mid-drain the node is not yet what a release leaves behind: the permit goes once the drain has ended.
    if (view.guards && view.tasks.has('prepare')) return;
    const unused = yielding && interrupt.phase !== 'prepared';
    if (!unused && runs.some((x) => x.rollout === r.name)) return;
    // A node whose package failed stays cordoned, as in Skyhook; the permit goes back either way.
    const uncordon = !Object.values(r.state).some(isErroring);
    if (uncordon && jobsMayRun(r)) return;
    intents.push({ kind: 'release', rollout: r.name, uncordon });
  };

  const advance = (r: RolloutOnNode) => {
    const plan = planNode(r.packages, r.state, r.configUpdates);
    const erroring = (name: string) => isErroring(r.state[entryKey(name, r.packages[name]!.version)]);
    const interruptStuck = plan.interrupt?.packages.some(erroring) ?? false;
    const needsPermit =
      plan.run.some((x) => x.interrupting && !erroring(x.name)) || (plan.interrupt !== undefined && !interruptStuck);
    const prepared = interrupt?.rollout === r.name && interrupt.phase === 'prepared' && !releasing;
    const merged = plan.interrupt;
    const held = merged ? interruptHeldFor(r.packages, r.state, r.configUpdates, plan) : [];
    const interruptDue = merged !== undefined && merged.waitingFor.length === 0 && held.length === 0 && !interruptStuck;
    // G12: once the interrupt is due on a prepared node, nothing new starts; what runs is waited for.
    const quiet = view.guards && interruptDue && prepared;
    if (!quiet) for (const e of plan.uninstall) if (!isErroring(e)) start(r.name, packageOf(e), 'uninstall');
    if (needsPermit && !prepared) {
      if (!interrupt) {
        interrupt = { rollout: r.name, phase: 'requested' };
        intents.push({ kind: 'request', rollout: r.name });
      } else if (interrupt.rollout === r.name && interrupt.phase === 'granted') {
        intents.push({ kind: 'prepare', rollout: r.name });
      }
    }
    for (const x of plan.run) {
      if (quiet || erroring(x.name) || (x.interrupting && !prepared) || x.stage === 'interrupt') continue;
      start(r.name, r.packages[x.name]!, x.stage);
    }
    const nodeIdle = runs.length === 0 && carried.length === 0 && view.stopping.size === 0;
    if (merged && interruptDue && prepared && (!view.guards || nodeIdle)) {
      intents.push({ kind: 'interrupt', rollout: r.name, merged });
    }
    if (!needsPermit) releaseIfDone(r);
  };

  for (const jobName of view.stopping.keys()) intents.push({ kind: 'delete', jobName });
  for (const k of view.guards && !view.draining ? view.carried : []) {
    const r = view.rollouts.find((x) => x.name === k.rollout);
    const entry = r?.state[entryKey(k.package, k.version)];
    if (!r || r.forgetting || entry?.stage !== k.stage || entry.state !== 'in_progress') {
      intents.push({ kind: 'abandon', run: k, jobName: stageJobName({ ...k, node: view.node }) });
      carried.push(k);
      continue;
    }
    const spec = r.packages[k.package];
    runs.push(k);
    intents.push({
      kind: 'start',
      rollout: k.rollout,
      package: spec?.version === k.version ? spec : packageOf(entry),
      stage: k.stage,
    });
  }
  // A forget waits for a drain or an interrupt in flight: it would uncordon a node mid-reboot, or be written over.
  // G16: and it waits for the Jobs of its interrupting runs it stopped to be gone before its uncordon.
  const forgetNow = (r: RolloutOnNode) =>
    !view.guards || (!view.tasks.has('prepare') && !interruptRunning && !jobsMayRun(r));
  for (const r of view.rollouts) if (r.forgetting && forgetNow(r)) intents.push({ kind: 'forget', rollout: r.name });
  let blocked = false;
  for (const r of view.rollouts) {
    if (r.forgetting) continue;
    if (!r.initialized) {
      intents.push({ kind: 'init', rollout: r.name });
      blocked = true;
      continue;
    }
    const incomplete = !isNodeComplete(r.packages, r.state, r.configUpdates);
    const waiting = incomplete && !r.disabled && blocked;
    if (waiting !== r.waiting) intents.push({ kind: 'waiting', rollout: r.name, waiting });
    if (!incomplete) releaseIfDone(r);
    // A permit held by a rollout that cannot use it (a higher-priority one came, or it was disabled) goes back once
    // its runs are over, or the rollout ahead would wait for it for ever.
    else if (view.guards && (r.disabled || blocked)) releaseIfDone(r, true);
    // A disabled rollout neither runs nor holds others back; a paused one does hold them back (§5.5).
    if (r.disabled || !incomplete || blocked) continue;
    blocked = true;
    if (!r.paused && !view.draining) advance(r);
  }
  return intents;
}

/** A stage run in flight and the package spec its Job was made from. */
export interface RunningStage {
  key: StageRunKey;
  package: Package;
}

/**
 * The runs a new spec leaves behind (G11), as Skyhook deletes in-flight pods that match no spec package (§3.8): the
 * Job's package changed (version, image, env, resources, ...) or is gone, or its entry moved on (reset by a config
 * cycle that restarts config). An uninstall of an old version is what the new spec asks for and keeps running. Their
 * Jobs must be gone before another stage of the package starts.
 */
export function obsoleteRuns(
  runs: readonly RunningStage[],
  packages: Readonly<Record<string, Package>>,
  state: NodeState,
  configChanged: readonly string[],
): StageRunKey[] {
  return runs
    .filter(({ key, package: pkg }) => {
      const entry = state[entryKey(key.package, key.version)];
      if (!entry || entry.stage !== key.stage || entry.state !== 'in_progress') return true;
      if (key.stage === 'uninstall') return false;
      const now = packages[key.package];
      if (!now || jobShape(now) !== jobShape(pkg)) return true;
      return configChanged.includes(key.package) && (key.stage === 'config' || key.stage === 'post-interrupt');
    })
    .map((run) => run.key);
}

/** What a stage Job is made of: a change here replaces the Job. ConfigMap changes run config (§3.6) instead. */
function jobShape(pkg: Package): string {
  const { version, image, containerSHA, agentImageOverride, env, resources, gracefulShutdown } = pkg;
  return JSON.stringify({ version, image, containerSHA, agentImageOverride, env, resources, gracefulShutdown });
}

/** The key a run is known by in the workflow's carried state. */
export function runKey(k: StageRunKey): string {
  return `${k.rollout}|${entryKey(k.package, k.version)}|${k.stage}`;
}

export function parseRunKey(key: string): StageRunKey {
  const [rollout, pkg, version, stage] = key.split('|') as [string, string, string, RunnableStage];
  return { rollout, package: pkg, version, stage };
}

export function packageOf(e: PackageEntry): Package {
  return { name: e.name, version: e.version, image: e.image, ...(e.containerSHA && { containerSHA: e.containerSHA }) };
}

function isErroring(e: PackageEntry | undefined): boolean {
  return e?.state === 'erroring';
}
