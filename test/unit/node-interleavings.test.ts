import fc from 'fast-check';
import {
  decideNode,
  entryKey,
  obsoleteRuns,
  parseRunKey,
  runKey,
  recordStageFailure,
  recordStageSuccess,
  rerunPackage,
  RolloutSpecSchema,
  stageJobName,
  startInterrupt,
  startStage,
  STAGES,
  changedConfigKeys,
  isNodeComplete,
  mayInterrupt,
  packageInterrupts,
  type MergedInterrupt,
  type NodeIntent,
  type Package,
  type RolloutSpec,
  type RunnableStage,
  type StoppingJob,
} from '../../model';
import { DEFAULT_NODE_SETTINGS } from '../../workflows/messages';
import {
  applyNewSpec,
  byPriority,
  fixedStages,
  newNodeRollout,
  rolloutsOnNode,
  type NodeRollout,
} from '../../workflows/node/node-rollout';

// Model-based test of the node workflow's decisions (docs/architecture.md, "The node workflow"): random interleavings
// of every event a node sees, carried out the way workflows/node/workflow.ts carries out decideNode's intents, against a
// cluster whose Jobs finish, are observed late (watch lag) and go late after a delete. After every event:
// - G11 one executor: per package at most one stage Job is unfinished on the node;
// - G12 interrupts alone: no stage Job is unfinished while the interrupt Job runs, and none starts while it runs.
// - G16 interrupting work on a cordoned node: a stage Job of a package that ends in an interrupt is created only while
//   its rollout's cordon is on the node (not while the release's uncordon runs, nor after it).

const NODE = 'node-0';
const RUNS = Number(process.env.KEELSON_MODEL_RUNS ?? 10_000);

/** How often the interleavings reach the states that matter, so a generator that never gets there fails the test. */
const reached = {
  stageJobs: 0,
  interrupts: 0,
  stoppedRuns: 0,
  adoptedAfterContinueAsNew: 0,
  permitsUnasked: 0,
  desiresWhileReleasing: 0,
  stagesRefused: 0,
  releasesLost: 0,
};

type JobPhase = 'running' | 'succeeded' | 'failed';
interface ClusterJob {
  rollout: string;
  package: string;
  /** A stage of a package that ends in an interrupt: it runs only under its rollout's cordon (G16). */
  interrupting: boolean;
  stage: RunnableStage;
  runId: string;
  phase: JobPhase;
  deleting: boolean;
}
interface Run {
  rollout: string;
  pkg: Package;
  stage: RunnableStage;
  jobName: string;
  runId: string;
  /** Its runStage attempt has created (or adopted) the Job; until then the attempt may still create it. */
  created: boolean;
  /** An interrupting stage: its runStage creates the Job only under the rollout's cordon (G16, `cordoned`). */
  interrupting: boolean;
  /** runStage is asked to check the cordon (the workflow's cordon guards). */
  checksCordon: boolean;
  /** The permit the node held for the run's rollout when it started. */
  permitAtStart: number | null;
}

const PACKAGE_POOL: Record<string, (version: string, config: string) => Package> = {
  // 0.9.0 has no interrupt: a spec update to it drops the interrupt of a Job that may still run.
  drv: (version) =>
    ({
      name: 'drv',
      version,
      image: 'img/drv',
      ...(version !== '0.9.0' && { interrupt: { type: 'reboot' } }),
    }) as Package,
  tune: (version, config) => ({ name: 'tune', version, image: 'img/tune', configMap: { conf: config } }) as Package,
  svc: (version, config) =>
    ({
      name: 'svc',
      version,
      image: 'img/svc',
      configMap: { conf: config },
      interrupt: { type: 'service', services: ['svc'] },
      configInterrupts: { conf: { type: 'service', services: ['svc'] } },
    }) as Package,
};
const NAMES = Object.keys(PACKAGE_POOL);
const VERSIONS = ['1.0.0', '1.1.0', '0.9.0'];

const parsedSpecs = new Map<string, RolloutSpec>();

function spec(name: string, priority: number, packages: Package[]): RolloutSpec {
  const key = JSON.stringify([name, priority, packages]);
  const known = parsedSpecs.get(key);
  if (known) return known;
  const parsed = RolloutSpecSchema.parse({
    name,
    kind: 'Skyhook',
    paused: false,
    disabled: false,
    spec: {
      nodeSelectors: {},
      priority,
      packages: Object.fromEntries(packages.map((p) => [p.name, p])),
    },
    policy: null,
    resetBatchStateOnCompletion: false,
  });
  parsedSpecs.set(key, parsed);
  return parsed;
}

/** The node workflow's bookkeeping and the cluster it runs on. */
class NodeSim {
  readonly rollouts: Record<string, NodeRollout> = {};
  readonly forgetting = new Set<string>();
  runs = new Map<string, Run>();
  readonly reborn = new Map<string, RolloutSpec>();
  /** runStage attempts of stopped waits that have not ended yet. */
  attempts: Run[] = [];
  readonly pendingDeletes = new Map<string, StoppingJob>();
  /** Finished Jobs recorded in state, to delete with the next node-state write. */
  readonly finishedDeleting = new Set<string>();
  readonly tasks = new Set<string>();
  interrupt: { rollout: string; phase: 'requested' | 'granted' | 'prepared'; permit: number | null } | null = null;
  /** Permits granted so far: each grant is a new one. */
  permits = 0;
  interruptJob: { rollout: string; merged: MergedInterrupt; phase: JobPhase } | null = null;
  /** Rollouts whose cordon is on the node (cordoned and drained, not yet uncordoned). */
  readonly cordonedFor = new Set<string>();
  /** The rollout whose release is uncordoning the node now. */
  releasing: string | null = null;
  readonly jobs = new Map<string, ClusterJob>();
  runIds: Record<string, string> = {};
  runSeq = 0;
  draining = false;
  readonly log: string[] = [];

  constructor(readonly guards: boolean) {}

  view() {
    return {
      node: NODE,
      rollouts: rolloutsOnNode(this.rollouts, this.forgetting),
      runs: [...this.runs.values()].map((x) => ({
        rollout: x.rollout,
        package: x.pkg.name,
        version: x.pkg.version,
        stage: x.stage,
      })),
      carried: Object.keys(this.runIds)
        .filter((key) => !this.runs.has(key))
        .map(parseRunKey),
      stopping: this.pendingDeletes,
      finishedDeleting: this.finishedDeleting,
      tasks: this.tasks,
      interrupt: this.interrupt,
      draining: this.draining,
      guards: this.guards,
      cordonGuards: this.guards,
    };
  }

  // ---- the workflow's handlers (workflows/node/workflow.ts) ----

  desire(name: string, next: RolloutSpec): void {
    if (this.releasing !== null) reached.desiresWhileReleasing++;
    if (this.guards && this.forgetting.has(name)) {
      this.reborn.set(name, next);
      return;
    }
    this.applyDesire(name, next);
  }

  /** A grant the node did not ask for (one with the admission): taken for a rollout it runs (takeGrant). */
  grantTo(name: string): void {
    if (this.interrupt || !this.rollouts[name] || this.forgetting.has(name)) return;
    reached.permitsUnasked++;
    this.interrupt = { rollout: name, phase: 'granted', permit: ++this.permits };
  }

  private applyDesire(name: string, next: RolloutSpec): void {
    const r = this.rollouts[name];
    this.forgetting.delete(name);
    if (!r) {
      this.rollouts[name] = { ...newNodeRollout(next, 1, DEFAULT_NODE_SETTINGS), initialized: true };
      return;
    }
    const before = r.rollout.spec.packages;
    const fixed = fixedStages(before, next.spec.packages, r.state);
    applyNewSpec(r, next, r.generation + 1, DEFAULT_NODE_SETTINGS, this.guards);
    for (const e of fixed) {
      if (r.state[entryKey(e.name, e.version)]?.stage !== e.stage) continue;
      const interrupting = mayInterrupt(next.spec.packages[e.name]!);
      this.pendingDeletes.set(this.jobName(name, e, e.stage as RunnableStage), {
        rollout: name,
        package: e.name,
        interrupting,
      });
      r.state = rerunPackage(r.state, next.spec.packages[e.name]!, e.stage);
    }
    if (!this.guards) return;
    const configChanged = Object.values(next.spec.packages)
      .filter((p) => changedConfigKeys(before[p.name], p).length > 0)
      .map((p) => p.name);
    const mine = [...this.runs.entries()].filter(([, x]) => x.rollout === name);
    const running = mine.map(([, x]) => ({
      key: { rollout: name, package: x.pkg.name, version: x.pkg.version, stage: x.stage },
      package: x.pkg,
    }));
    const stale = obsoleteRuns(running, next.spec.packages, r.state, configChanged).map(runKey);
    for (const [key, x] of mine) if (stale.includes(key)) this.stopRun(key, x);
  }

  stopRun(key: string, run: Run): void {
    reached.stoppedRuns++;
    // The stopped wait's runStage attempt lives on until its cancellation is delivered, and may create its Job.
    this.attempts.push(run);
    this.runs.delete(key);
    delete this.runIds[key];
    this.pendingDeletes.set(run.jobName, {
      rollout: run.rollout,
      package: run.pkg.name,
      interrupting: run.interrupting,
    });
  }

  stopPackage(name: string, pkg: Pick<Package, 'name' | 'version'>): void {
    for (const [key, x] of this.runs) if (x.rollout === name && x.pkg.name === pkg.name) this.stopRun(key, x);
    // As the workflow: the spec of the entry's version tells; another version's entry counts as interrupting.
    const spec = this.rollouts[name]?.rollout.spec.packages[pkg.name];
    const interrupting = spec?.version === pkg.version ? mayInterrupt(spec) : true;
    for (const stage of STAGES.filter((s) => s !== 'interrupt')) {
      this.pendingDeletes.set(this.jobName(name, pkg, stage as RunnableStage), {
        rollout: name,
        package: pkg.name,
        interrupting,
      });
    }
  }

  rerun(name: string, pkgName: string): void {
    const r = this.rollouts[name];
    const pkg = r?.rollout.spec.packages[pkgName];
    if (!r || !pkg) return;
    this.stopPackage(name, pkg);
    r.state = rerunPackage(r.state, pkg);
  }

  reset(name: string): void {
    const r = this.rollouts[name];
    if (!r) return;
    for (const e of Object.values(r.state)) this.stopPackage(name, e);
    r.state = {};
    r.configUpdates = {};
  }

  forget(name: string): void {
    if (!this.rollouts[name]) return;
    this.forgetting.add(name);
    for (const [key, x] of this.runs) if (x.rollout === name) this.stopRun(key, x);
  }

  grant(): void {
    if (this.interrupt?.phase === 'requested') {
      this.interrupt = { ...this.interrupt, phase: 'granted', permit: ++this.permits };
    }
  }

  // ---- the loop: decideNode's intents carried out ----

  step(): void {
    // Continue-as-new happens once a draining run is idle; the next run starts from the carried state.
    if (this.draining && this.idle()) this.draining = false;
    for (const intent of decideNode(this.view())) this.carryOut(intent);
  }

  idle(): boolean {
    return (
      this.runs.size === 0 &&
      this.attempts.length === 0 &&
      this.pendingDeletes.size === 0 &&
      this.finishedDeleting.size === 0 &&
      this.tasks.size === 0
    );
  }

  carryOut(intent: NodeIntent): void {
    switch (intent.kind) {
      case 'delete': {
        if (this.tasks.has(`delete:${intent.jobName}`)) return;
        this.tasks.add(`delete:${intent.jobName}`);
        // The guarded delete waits for the stopped run's attempt to end; the unguarded one did not.
        if (this.guards && this.attempts.some((a) => a.jobName === intent.jobName)) return;
        this.issueDelete(intent.jobName);
        return;
      }
      case 'forget':
        this.tasks.add(`forget:${intent.rollout}`);
        return;
      case 'init':
        this.rollouts[intent.rollout]!.initialized = true;
        return;
      case 'waiting':
        this.rollouts[intent.rollout]!.waiting = intent.waiting;
        return;
      case 'start':
        return this.start(intent.rollout, intent.package, intent.stage);
      case 'abandon':
        delete this.runIds[runKey(intent.run)];
        this.pendingDeletes.set(intent.jobName, {
          rollout: intent.run.rollout,
          package: intent.run.package,
          interrupting: true,
        });
        return;
      case 'request':
        this.interrupt = { rollout: intent.rollout, phase: 'requested', permit: null };
        return;
      case 'prepare':
        this.tasks.add('prepare');
        return;
      case 'interrupt': {
        if (this.tasks.has('interrupt')) return;
        this.tasks.add('interrupt');
        const r = this.rollouts[intent.rollout]!;
        r.state = startInterrupt(r.state, intent.merged, r.rollout.spec.packages);
        this.checkNoStageJobRunning('interrupt created');
        this.interruptJob = { rollout: intent.rollout, merged: intent.merged, phase: 'running' };
        reached.interrupts++;
        return;
      }
      case 'release': {
        // The uncordon is a call of its own, and the permit is let go once it is done; without one, at once.
        if (this.tasks.has('release')) return;
        if (intent.uncordon && this.cordonedFor.has(intent.rollout)) {
          this.tasks.add('release');
          this.releasing = intent.rollout;
          return;
        }
        if (this.interrupt?.rollout === intent.rollout) this.interrupt = null;
        return;
      }
    }
  }

  start(name: string, pkg: Package, stage: RunnableStage): void {
    const r = this.rollouts[name]!;
    const key = runKey({ rollout: name, package: pkg.name, version: pkg.version, stage });
    if (this.runs.has(key)) return;
    // A wait started while continuing as new would put it off for as long as the stage runs (or is paused).
    if (this.draining) throw new Error(`G13: ${pkg.name} ${stage} waited on while continuing as new`);
    if (this.tasks.has('interrupt')) throw new Error(`G12: ${pkg.name} ${stage} started under the interrupt`);
    r.state = startStage(r.state, pkg, stage);
    const runId = (this.runIds[key] ??= `run-${++this.runSeq}`);
    const jobName = this.jobName(name, pkg, stage);
    const interrupting = stage !== 'uninstall' && packageInterrupts(pkg, r.configUpdates[pkg.name]).length > 0;
    const run: Run = {
      rollout: name,
      pkg,
      stage,
      jobName,
      runId,
      created: false,
      interrupting,
      checksCordon: interrupting,
      permitAtStart: this.interrupt?.rollout === name ? this.interrupt.permit : null,
    };
    this.runs.set(key, run);
    const existing = this.jobs.get(jobName);
    // runStage: a Job of this run is adopted at once; a new one is created a moment later (createJob).
    if (existing && (existing.runId === runId || !this.guards)) {
      reached.adoptedAfterContinueAsNew++;
      run.created = true;
    }
  }

  /** A runStage attempt, live or of a stopped wait, creates its Job (a stale one of the name is replaced first). */
  createJob(index: number): void {
    const pending = [...this.runs.values(), ...this.attempts].filter((x) => !x.created);
    const run = pending[index % Math.max(1, pending.length)];
    if (!run) return;
    run.created = true;
    const existing = this.jobs.get(run.jobName);
    if (existing && (existing.runId === run.runId || !this.guards)) return;
    if (run.interrupting && !this.cordonedFor.has(run.rollout)) {
      if (!run.checksCordon) throw new Error(`G16: ${run.jobName} created on a node ${run.rollout} has not cordoned`);
      this.refuse(run);
      return;
    }
    reached.stageJobs++;
    if (this.interruptJob?.phase === 'running') throw new Error(`G12: ${run.jobName} created during the interrupt`);
    this.jobs.set(run.jobName, {
      rollout: run.rollout,
      interrupting: run.interrupting,
      package: run.pkg.name,
      stage: run.stage,
      runId: run.runId,
      phase: 'running',
      deleting: false,
    });
  }

  /**
   * runStage refused the run (NotCordoned), creating nothing: a stopped attempt just ends; a live run ends without a
   * result, and the workflow releases the permit and the cordon (cordonLost) to ask, cordon and drain again.
   */
  refuse(run: Run): void {
    reached.stagesRefused++;
    const attempt = this.attempts.indexOf(run);
    if (attempt >= 0) return this.attemptEnds(attempt);
    const key = runKey({ rollout: run.rollout, package: run.pkg.name, version: run.pkg.version, stage: run.stage });
    this.runs.delete(key);
    delete this.runIds[key];
    // Only the permit the run started under, and not mid-prepare (workflows/node/workflow.ts, start).
    const held = this.interrupt;
    const same = held?.rollout === run.rollout && held.phase === 'prepared' && held.permit === run.permitAtStart;
    if (same && !this.tasks.has('prepare')) this.carryOut({ kind: 'release', rollout: run.rollout, uncordon: true });
  }

  /** A stopped wait's cancellation is delivered: its attempt ends, and creates nothing more if it had not yet. */
  attemptEnds(index: number): void {
    const run = this.attempts[index % Math.max(1, this.attempts.length)];
    if (!run) return;
    this.attempts = this.attempts.filter((a) => a !== run);
    if (this.tasks.has(`delete:${run.jobName}`) && !this.attempts.some((a) => a.jobName === run.jobName)) {
      this.issueDelete(run.jobName);
    }
  }

  /** The watcher fails (or the Job cannot be controlled): the run ends failed while its Job may still run. */
  watcherFails(index: number): void {
    const live = [...this.runs.entries()].filter(([, x]) => x.created);
    const found = live[index % Math.max(1, live.length)];
    if (!found) return;
    const [key, x] = found;
    this.runs.delete(key);
    delete this.runIds[key];
    const r = this.rollouts[x.rollout];
    if (r) r.state = recordStageFailure(r.state, entryKey(x.pkg.name, x.pkg.version), x.stage, { lastError: 'x' });
    if (this.guards)
      this.pendingDeletes.set(x.jobName, { rollout: x.rollout, package: x.pkg.name, interrupting: x.interrupting });
  }

  issueDelete(jobName: string): void {
    const job = this.jobs.get(jobName);
    if (job) job.deleting = true;
    // The unguarded loop confirmed a delete as soon as the API server took it; its pods went later.
    if (!this.guards || !job) this.confirmDelete(jobName);
  }

  jobName(rollout: string, pkg: Pick<Package, 'name' | 'version'>, stage: RunnableStage): string {
    return stageJobName({ rollout, package: pkg.name, version: pkg.version, stage, node: NODE });
  }

  // ---- what the cluster and the activities do, in any order ----

  finishJob(index: number, ok: boolean): void {
    const running = [...this.jobs.values()].filter((j) => j.phase === 'running');
    const job = running[index % Math.max(1, running.length)];
    if (job) job.phase = ok ? 'succeeded' : 'failed';
  }

  /** A run's watcher sees its Job's end (late: the watch lags behind the Job). */
  observe(index: number): void {
    const done = [...this.runs.entries()].filter(([, x]) => {
      const job = this.jobs.get(x.jobName);
      return x.created && job !== undefined && job.phase !== 'running' && (job.runId === x.runId || !this.guards);
    });
    const found = done[index % Math.max(1, done.length)];
    if (!found) return;
    const [key, x] = found;
    this.runs.delete(key);
    delete this.runIds[key];
    const r = this.rollouts[x.rollout];
    if (!r) return;
    const k = entryKey(x.pkg.name, x.pkg.version);
    const job = this.jobs.get(x.jobName)!;
    r.state =
      job.phase === 'succeeded'
        ? recordStageSuccess(r.state, k, x.stage)
        : recordStageFailure(r.state, k, x.stage, { lastError: 'failed' });
    this.finishedDeleting.add(x.jobName);
  }

  /** The node-state write lands, and the finished Jobs it records are deleted with it. */
  writeNodeState(): void {
    for (const name of this.finishedDeleting) {
      const job = this.jobs.get(name);
      if (job) job.deleting = true;
    }
    this.finishedDeleting.clear();
  }

  /** A deleted Job's pods have terminated and the Job is gone; a guarded delete returns only now. */
  jobGone(index: number): void {
    const deleting = [...this.jobs.entries()].filter(([, j]) => j.deleting);
    const found = deleting[index % Math.max(1, deleting.length)];
    if (!found) return;
    this.jobs.delete(found[0]);
    if (this.pendingDeletes.has(found[0]) && this.guards) this.confirmDelete(found[0]);
  }

  confirmDelete(jobName: string): void {
    this.pendingDeletes.delete(jobName);
    this.tasks.delete(`delete:${jobName}`);
  }

  prepared(): void {
    if (!this.tasks.delete('prepare')) return;
    if (!this.interrupt) return;
    // The cordon is on whatever the node holds; only a granted permit becomes prepared (the workflow's cordon guards).
    this.cordonedFor.add(this.interrupt.rollout);
    if (this.interrupt.phase === 'requested' && this.guards) return;
    if (this.interrupt.permit === null) throw new Error(`G16: ${this.interrupt.rollout} prepared without a permit`);
    this.interrupt = { ...this.interrupt, phase: 'prepared' };
  }

  /** The release's uncordon is done: the node is schedulable, and the permit goes back. */
  released(): void {
    if (!this.tasks.delete('release') || this.releasing === null) return;
    this.uncordoned(this.releasing, 'released');
    this.cordonedFor.delete(this.releasing);
    if (this.interrupt?.rollout === this.releasing) this.interrupt = null;
    this.releasing = null;
  }

  /** The interrupt Job ends, the node reboots and comes back Ready: the interrupt task records its outcome. */
  interruptDone(): void {
    const job = this.interruptJob;
    if (!job) return;
    this.interruptJob = null;
    this.tasks.delete('interrupt');
    const r = this.rollouts[job.rollout];
    if (!r) return;
    const owner = r.rollout.spec.packages[job.merged.owner];
    if (owner) r.state = recordStageSuccess(r.state, entryKey(owner.name, owner.version), 'interrupt');
  }

  forgetDone(name: string): void {
    if (!this.tasks.delete(`forget:${name}`)) return;
    if (this.interrupt?.rollout === name) this.interrupt = null;
    this.uncordoned(name, 'forgotten');
    this.cordonedFor.delete(name);
    delete this.rollouts[name];
    this.forgetting.delete(name);
    const again = this.reborn.get(name);
    this.reborn.delete(name);
    if (again) this.rollouts[name] = { ...newNodeRollout(again, 1, DEFAULT_NODE_SETTINGS), initialized: true };
  }

  /**
   * A worker crash after the release's uncordon ran (the node is schedulable, the permit back with the rollout) loses
   * the workflow task that ran it: the retried task has no release in flight, and the node still holds its permit as
   * prepared.
   */
  crashLosesRelease(): void {
    if (!this.tasks.delete('release') || this.releasing === null) return;
    reached.releasesLost++;
    this.uncordoned(this.releasing, 'released before a crash');
    this.cordonedFor.delete(this.releasing);
    this.releasing = null;
  }

  /** G16: the rollout's cordon goes only when none of its interrupting Jobs is running. */
  uncordoned(rollout: string, how: string): void {
    if (!this.cordonedFor.has(rollout)) return;
    const running = [...this.jobs.entries()].filter(
      ([, j]) => j.rollout === rollout && j.interrupting && j.phase === 'running',
    );
    if (running.length > 0) throw new Error(`G16: ${rollout} uncordoned (${how}) while ${running[0]![0]} runs`);
  }

  /** The history bound is reached: waits stop (not their Jobs), nothing new starts until the run is idle. */
  continueAsNew(): void {
    if (this.draining) return;
    this.draining = true;
    this.attempts.push(...this.runs.values());
    this.runs = new Map();
  }

  /** Every pause and disable lifted, then the cluster catches up until nothing changes. */
  settle(): void {
    for (const r of Object.values(this.rollouts)) Object.assign(r, { paused: false, disabled: false });
    let last = '';
    for (let round = 0; round < 60; round++) {
      catchUp.run({}, this);
      const now = this.signature();
      if (now === last) return;
      last = now;
    }
  }

  signature(): string {
    const states = Object.values(this.rollouts).map((r) => r.state);
    return JSON.stringify([states, [...this.runs.keys()], [...this.jobs.keys()], this.interrupt, [...this.tasks]]);
  }

  // ---- the invariants ----

  /** G13 no wedge: settled, each rollout is complete unless it (or one ahead of it) has a failed package. */
  checkSettled(): void {
    for (const name of byPriority(this.rollouts)) {
      const r = this.rollouts[name]!;
      if (Object.values(r.state).some((e) => e.state === 'erroring')) return;
      if (!isNodeComplete(r.rollout.spec.packages, r.state, r.configUpdates)) {
        throw new Error(
          `G13: rollout ${name} wedged: ${JSON.stringify(r.state)}; runs ${[...this.runs.keys()].join(', ')}; deleting ${[...this.pendingDeletes.keys()].join(', ')}`,
        );
      }
    }
    if (this.interrupt) throw new Error(`G13: interrupt permit of ${this.interrupt.rollout} still held when settled`);
    if (this.pendingDeletes.size > 0)
      throw new Error(`G13: deletes never confirmed: ${[...this.pendingDeletes.keys()].join(', ')}`);
  }

  checkInvariants(): void {
    const unfinished = [...this.jobs.entries()].filter(([, j]) => j.phase === 'running');
    const byPackage = new Map<string, string[]>();
    for (const [name, j] of unfinished) byPackage.set(j.package, [...(byPackage.get(j.package) ?? []), name]);
    for (const [pkg, names] of byPackage) {
      if (names.length > 1) throw new Error(`G11: ${names.length} unfinished Jobs of ${pkg}: ${names.join(', ')}`);
    }
    if (this.interruptJob?.phase === 'running') this.checkNoStageJobRunning('interrupt running');
  }

  checkNoStageJobRunning(when: string): void {
    const unfinished = [...this.jobs.entries()].filter(([, j]) => j.phase === 'running').map(([n]) => n);
    if (unfinished.length > 0) throw new Error(`G12: ${when} beside unfinished stage Jobs ${unfinished.join(', ')}`);
  }
}

// ---- events as fast-check commands ----

type Model = Record<string, never>;
type Cmd = fc.Command<Model, NodeSim>;

const command = (label: string, act: (sim: NodeSim) => void): Cmd => ({
  check: () => true,
  run: (_m, sim) => {
    sim.log.push(label);
    act(sim);
    sim.step();
    sim.checkInvariants();
  },
  toString: () => label,
});

const packagesArb = fc
  .subarray(NAMES, { minLength: 1 })
  .chain((names) =>
    fc.tuple(
      ...names.map((n) =>
        fc
          .record({ version: fc.constantFrom(...VERSIONS), config: fc.constantFrom('x', 'y') })
          .map(({ version, config }) => PACKAGE_POOL[n]!(version, config)),
      ),
    ),
  );
const rolloutArb = fc.constantFrom('a', 'b');
const priorityOf = (name: string) => (name === 'a' ? 1 : 2);

const desire = fc
  .tuple(rolloutArb, packagesArb)
  .map(([r, pkgs]) =>
    command(`desire ${r} ${pkgs.map((p) => `${p.name}@${p.version}/${String(p.configMap?.conf)}`).join(' ')}`, (sim) =>
      sim.desire(r, spec(r, priorityOf(r), pkgs)),
    ),
  );

const commands = [
  fc.nat().map((i) => command(`finish job ${i} ok`, (sim) => sim.finishJob(i, true))),
  fc.nat().map((i) => command(`finish job ${i} failed`, (sim) => sim.finishJob(i, false))),
  fc.nat().map((i) => command(`observe ${i}`, (sim) => sim.observe(i))),
  fc.constant(command('write node state', (sim) => sim.writeNodeState())),
  fc.nat().map((i) => command(`job gone ${i}`, (sim) => sim.jobGone(i))),
  desire,
  fc.tuple(rolloutArb, fc.boolean()).map(([r, paused]) =>
    command(`${paused ? 'pause' : 'resume'} ${r}`, (sim) => {
      const ro = sim.rollouts[r];
      if (ro) ro.paused = paused;
    }),
  ),
  fc.tuple(rolloutArb, fc.boolean()).map(([r, disabled]) =>
    command(`${disabled ? 'disable' : 'enable'} ${r}`, (sim) => {
      const ro = sim.rollouts[r];
      if (ro) ro.disabled = disabled;
    }),
  ),
  fc.tuple(rolloutArb, fc.constantFrom(...NAMES)).map(([r, p]) => command(`rerun ${r} ${p}`, (sim) => sim.rerun(r, p))),
  rolloutArb.map((r) => command(`reset ${r}`, (sim) => sim.reset(r))),
  rolloutArb.map((r) => command(`forget ${r}`, (sim) => sim.forget(r))),
  rolloutArb.map((r) => command(`forget done ${r}`, (sim) => sim.forgetDone(r))),
  fc.nat().map((i) => command(`runStage creates job ${i}`, (sim) => sim.createJob(i))),
  fc.nat().map((i) => command(`stopped attempt ends ${i}`, (sim) => sim.attemptEnds(i))),
  fc.nat().map((i) => command(`watcher fails ${i}`, (sim) => sim.watcherFails(i))),
  fc.constant(command('grant', (sim) => sim.grant())),
  rolloutArb.map((r) => command(`grant ${r} unasked`, (sim) => sim.grantTo(r))),
  rolloutArb.map((r) => command(`grant ${r} unasked`, (sim) => sim.grantTo(r))),
  fc.constant(command('prepared', (sim) => sim.prepared())),
  fc.constant(command('interrupt done', (sim) => sim.interruptDone())),
  fc.constant(command('released', (sim) => sim.released())),
  fc.constant(command('crash loses the release task', (sim) => sim.crashLosesRelease())),
  fc.constant(command('crash loses the release task', (sim) => sim.crashLosesRelease())),
  fc.constant(command('continue-as-new', (sim) => sim.continueAsNew())),
];
// The cluster catching up (every running Job succeeds and is seen, writes land, deletes finish, the permit comes):
// frequent enough that runs get through whole package lifecycles and reboots between the other events.
const catchUp = command('cluster catches up', (sim) => {
  for (let i = 0; i < 8; i++) {
    sim.createJob(0);
    sim.attemptEnds(0);
    for (const name of [...sim.forgetting]) sim.forgetDone(name);
    sim.finishJob(0, true);
    sim.observe(0);
    sim.writeNodeState();
    sim.jobGone(0);
    sim.step();
  }
  sim.grant();
  sim.prepared();
  sim.interruptDone();
  sim.released();
});
const weighted = [...commands, desire, desire, ...Array.from({ length: 6 }, () => fc.constant(catchUp))];

const seed = Number(process.env.KEELSON_MODEL_SEED ?? Date.now() % 2 ** 31);

function interleavings(guards: boolean, numRuns: number) {
  return fc.check(
    fc.property(fc.commands(weighted, { maxCommands: 60, size: 'large' }), (cmds) => {
      const sim = new NodeSim(guards);
      fc.modelRun(() => ({ model: {}, real: sim }), cmds);
      sim.settle();
      sim.checkSettled();
    }),
    { seed, numRuns },
  );
}

test(`G11 G12 G13 G16 hold over ${RUNS} random interleavings of node events (seed ${seed})`, () => {
  const result = interleavings(true, RUNS);
  if (result.failed) {
    throw new Error(
      `KEELSON_MODEL_SEED=${seed} reproduces it; shrunk counterexample:\n${String(result.counterexample?.[0])}\n${String(result.errorInstance)}`,
    );
  }
  expect(result.numRuns).toBe(RUNS);
  console.log(`node interleavings reached (seed ${seed}): ${JSON.stringify(reached)}`);
  expect(reached.interrupts).toBeGreaterThan(RUNS / 10);
  expect(reached.stoppedRuns).toBeGreaterThan(RUNS / 10);
  expect(reached.adoptedAfterContinueAsNew).toBeGreaterThan(RUNS / 100);
  expect(reached.permitsUnasked).toBeGreaterThan(RUNS / 10);
  expect(reached.desiresWhileReleasing).toBeGreaterThan(RUNS / 100);
  expect(reached.releasesLost).toBeGreaterThan(RUNS / 100);
  expect(reached.stagesRefused).toBeGreaterThan(RUNS / 5000);
});

test('the same interleavings find the defects of the unguarded decision (a second executor, a reboot under work)', () => {
  const result = interleavings(false, RUNS);
  expect(result.failed).toBe(true);
  expect(String(result.errorInstance)).toMatch(/G1[1236]:/);
});
