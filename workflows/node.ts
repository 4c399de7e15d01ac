import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RolloutRef, StageResult } from '../activities/contract';
import {
  decodeNodeState,
  entryKey,
  planNode,
  recordStageFailure,
  recordStageSuccess,
  rerunPackage,
  stageJobName,
  startInterrupt,
  startStage,
  STAGES,
  type MergedInterrupt,
  type Package,
  type PackageEntry,
  type Stage,
} from '../model';
import {
  desireSignal,
  forgetSignal,
  grantInterruptSignal,
  nodeDisableSignal,
  nodeEnableSignal,
  nodePauseSignal,
  nodeResumeSignal,
  nodeStateQuery,
  releaseInterruptSignal,
  requestInterruptSignal,
  rerunUpdate,
  resetUpdate,
  rolloutWorkflowId,
  type NodeControlArgs,
  type NodeView,
  type NodeWorkflowStart,
} from './messages';
import { interruptHeldFor } from './interrupt-hold';
import { kube, longWait } from './node-activities';
import {
  applyNewSpec,
  byPriority,
  fixedStages,
  newNodeRollout,
  rolloutNodeStatus,
  stageTimeoutOf,
  type NodeRollout,
} from './node-rollout';
import { NodeStateWriter } from './node-state-writer';
import { nodeKey, packageKey, rolloutKey, stageKey, stateKey } from './search-attributes';
import { StageRun } from './stage-run';

// The node workflow: one per node, the only writer of that node's state (DESIGN.md §2). Handlers only change
// state and wake the loop; the loop decides what runs next, so every decision sees every message before it.

export interface NodeCarried {
  rollouts: Record<string, NodeRollout>;
  /** Per rollout, the annotation value last written (the writer's test-then-replace precondition). */
  previous: Record<string, string | null>;
  cordonedBy: string | null;
  interrupt: NodeView['interrupt'];
  /** The boot ID seen before the running interrupt, so a reboot is recognised even across continue-as-new. */
  bootId: string | null;
}

export interface NodeWorkflowInput extends NodeWorkflowStart {
  carried?: NodeCarried;
}

const RETRY_PAUSE = '10 seconds';

export async function nodeWorkflow(input: NodeWorkflowInput): Promise<void> {
  const { cluster, node } = input;
  const s: NodeCarried = input.carried ?? {
    rollouts: {},
    previous: {},
    cordonedBy: null,
    interrupt: null,
    bootId: null,
  };
  const writer = new NodeStateWriter(cluster, node, s.previous);
  const runs = new Map<string, StageRun>();
  const tasks = new Set<string>();
  const forgetting = new Set<string>();
  const pendingDeletes = new Set<string>();
  let live = 0;
  let wake = true;
  let draining = false;
  let shownAttributes = '';
  const poke = () => void (wake = true);

  const refOf = (name: string): RolloutRef => {
    const r = s.rollouts[name]!;
    return { rollout: name, kind: r.spec.kind, generation: r.generation };
  };
  const suspended = (name: string) => {
    const r = s.rollouts[name];
    return !r || r.paused || r.disabled;
  };
  const runsOf = (name: string) => [...runs.entries()].filter(([, run]) => run.input.rollout === name);
  const signalRollout = async (name: string, send: (id: string) => Promise<void>) => {
    try {
      await send(rolloutWorkflowId(cluster, name));
    } catch (err) {
      log.info('rollout workflow unreachable', { rollout: name, error: String(err) });
    }
  };

  function publish(name: string): void {
    const r = s.rollouts[name];
    if (!r?.initialized) return;
    writer.publish({ ...refOf(name), state: r.state, status: rolloutNodeStatus(r) });
    showInUi();
  }

  function showInUi(): void {
    const names = byPriority(s.rollouts);
    const active = names.find((n) => rolloutNodeStatus(s.rollouts[n]!) !== 'complete');
    const running = [...runs.values()].map(
      (r) => `${r.input.package.name}@${r.input.package.version} ${r.input.stage}`,
    );
    const attrs = {
      rollouts: names,
      packages: [...new Set(names.flatMap((n) => Object.keys(s.rollouts[n]!.spec.spec.packages)))].sort(),
      stage: running.length > 0 ? running.map((r) => r.split(' ')[1]!).join(',') : 'idle',
      state: active ? rolloutNodeStatus(s.rollouts[active]!) : 'complete',
    };
    const shown = JSON.stringify(attrs);
    if (shown === shownAttributes) return;
    shownAttributes = shown;
    upsertSearchAttributes([
      { key: nodeKey, value: node },
      { key: rolloutKey, value: attrs.rollouts },
      { key: packageKey, value: attrs.packages },
      { key: stageKey, value: attrs.stage },
      { key: stateKey, value: attrs.state },
    ]);
    setCurrentDetails(
      [
        `**node** ${node}`,
        ...names.map((n) => `- rollout **${n}**: ${rolloutNodeStatus(s.rollouts[n]!)}`),
        ...running.map((r) => `- running ${r}`),
        s.interrupt ? `- interrupt permit (${s.interrupt.rollout}): ${s.interrupt.phase}` : '',
      ].join('\n'),
    );
  }

  function spawn(name: string, fn: () => Promise<void>): void {
    if (tasks.has(name)) return;
    tasks.add(name);
    void (async () => {
      try {
        await fn();
      } catch (err) {
        log.warn('node task failed; it runs again', { task: name, error: String(err) });
        await sleep(RETRY_PAUSE);
      } finally {
        tasks.delete(name);
        poke();
      }
    })();
  }

  /** Stops every run of the entries a rerun, reset or forget removes, and deletes their Jobs before anything reruns. */
  function stopPackage(name: string, pkg: Pick<Package, 'name' | 'version'>): void {
    for (const [key, run] of runsOf(name)) {
      if (run.input.package.name !== pkg.name) continue;
      run.stop();
      runs.delete(key);
      delete s.rollouts[name]?.stageStarted[key];
    }
    for (const stage of STAGES.filter((st) => st !== 'interrupt')) {
      pendingDeletes.add(stageJobName({ rollout: name, package: pkg.name, version: pkg.version, stage, node }));
    }
  }

  /** A failed stage the new spec fixes runs again; its failed Job goes first, or the new run would adopt it by name. */
  function rerunFixed(name: string, failed: PackageEntry[]): void {
    const r = s.rollouts[name]!;
    for (const e of failed) {
      // A configMap change may have moved the entry on to config already: that stage has a Job of its own.
      if (r.state[entryKey(e.name, e.version)]?.stage !== e.stage) continue;
      pendingDeletes.add(stageJobName({ rollout: name, package: e.name, version: e.version, stage: e.stage, node }));
      r.state = rerunPackage(r.state, r.spec.spec.packages[e.name]!, e.stage);
    }
  }

  function control(verb: string, change: Partial<Pick<NodeRollout, 'paused' | 'disabled'>>) {
    return (args: NodeControlArgs) => {
      const r = s.rollouts[args.rollout];
      if (!r) return;
      log.info(`${verb} ${args.rollout}`, { actor: args.actor, reason: args.reason });
      Object.assign(r, change);
      if (suspended(args.rollout)) for (const [, run] of runsOf(args.rollout)) run.suspend();
      publish(args.rollout);
      poke();
    };
  }

  setHandler(desireSignal, ({ rollout, spec, generation, settings }) => {
    const r = s.rollouts[rollout];
    forgetting.delete(rollout);
    if (!r) s.rollouts[rollout] = newNodeRollout(spec, generation, settings);
    else if (generation > r.generation) {
      const fixed = fixedStages(r.spec.spec.packages, spec.spec.packages, r.state);
      applyNewSpec(r, spec, generation, settings);
      // Patched: histories before it left a fixed package erroring until a rerun.
      if (fixed.length > 0 && patched('rerun-fixed-stages')) rerunFixed(rollout, fixed);
      for (const [, run] of runsOf(rollout)) run.changeTimeout(stageTimeoutOf(r, run.input.package.name));
      publish(rollout);
    }
    poke();
  });
  setHandler(forgetSignal, ({ rollout }) => {
    if (!s.rollouts[rollout]) return;
    forgetting.add(rollout);
    for (const [key, run] of runsOf(rollout)) {
      run.stop();
      runs.delete(key);
      pendingDeletes.add(run.jobName);
    }
    poke();
  });
  setHandler(nodePauseSignal, control('pause', { paused: true }));
  setHandler(nodeResumeSignal, control('resume', { paused: false }));
  setHandler(nodeDisableSignal, control('disable', { disabled: true }));
  setHandler(nodeEnableSignal, control('enable', { disabled: false }));
  setHandler(grantInterruptSignal, ({ rollout, permit }) => {
    if (s.interrupt?.rollout === rollout && s.interrupt.phase === 'requested') {
      s.interrupt = { rollout, phase: 'granted', permit };
    } else {
      // A grant nobody waits for any more (rerun, forget, a request that lost its need): hand it straight back.
      spawn(`stray:${permit}`, () =>
        signalRollout(rollout, (id) => getExternalWorkflowHandle(id).signal(releaseInterruptSignal, { node, permit })),
      );
    }
    poke();
  });
  setHandler(
    rerunUpdate,
    ({ rollout, package: name, stage }) => {
      const r = s.rollouts[rollout]!;
      const pkg = r.spec.spec.packages[name]!;
      stopPackage(rollout, pkg);
      r.state = rerunPackage(r.state, pkg, stage);
      publish(rollout);
      poke();
    },
    {
      validator: ({ rollout, package: name }) => {
        const r = s.rollouts[rollout];
        if (!r) throw ApplicationFailure.nonRetryable(`node ${node} has no rollout ${rollout}`, 'NotFound');
        if (!r.spec.spec.packages[name]) {
          throw ApplicationFailure.nonRetryable(`rollout ${rollout} has no package ${name}`, 'NotFound');
        }
      },
    },
  );
  setHandler(
    resetUpdate,
    ({ rollout }) => {
      const r = s.rollouts[rollout]!;
      for (const e of Object.values(r.state)) stopPackage(rollout, e);
      r.state = {};
      r.configUpdates = {};
      publish(rollout);
      poke();
    },
    {
      validator: ({ rollout }) => {
        if (!s.rollouts[rollout])
          throw ApplicationFailure.nonRetryable(`node ${node} has no rollout ${rollout}`, 'NotFound');
      },
    },
  );
  setHandler(nodeStateQuery, () => ({
    node,
    rollouts: Object.fromEntries(
      Object.entries(s.rollouts).map(([name, r]) => [
        name,
        {
          status: rolloutNodeStatus(r),
          generation: r.generation,
          paused: r.paused,
          disabled: r.disabled,
          packages: r.state,
        },
      ]),
    ),
    cordonedBy: s.cordonedBy,
    interrupt: s.interrupt,
  }));

  // ---- tasks ------------------------------------------------------------------------------------------------

  async function init(name: string): Promise<void> {
    const { nodeState } = await kube.readNode({ ...refOf(name), node });
    const r = s.rollouts[name];
    if (!r) return;
    // Migration (§5): the annotation an operator or an earlier Keelson wrote is where this node resumes from.
    const decoded = decodeNodeState(nodeState ?? undefined);
    if (decoded.ok) r.state = decoded.state;
    else log.warn('node state annotation not readable; starting empty', { rollout: name, error: decoded.error });
    s.previous[name] = nodeState;
    r.initialized = true;
    publish(name);
  }

  function start(name: string, pkg: Package, stage: Exclude<Stage, 'interrupt'>): void {
    const r = s.rollouts[name]!;
    const key = `${name}|${entryKey(pkg.name, pkg.version)}|${stage}`;
    const jobName = stageJobName({ rollout: name, package: pkg.name, version: pkg.version, stage, node });
    if (runs.has(key) || pendingDeletes.has(jobName) || writer.deleting(jobName)) return;
    r.state = startStage(r.state, pkg, stage);
    r.stageStarted[key] ??= Date.now();
    const run = new StageRun(
      {
        ...refOf(name),
        node,
        package: pkg,
        stage,
        timeoutSeconds: stageTimeoutOf(r, pkg.name),
        additionalTolerations: r.spec.spec.additionalTolerations,
      },
      jobName,
      r.stageStarted[key],
      () => suspended(name),
      `${node}: ${name}/${pkg.name}@${pkg.version} ${stage}`,
    );
    runs.set(key, run);
    publish(name);
    live++;
    void (async () => {
      try {
        const result = await run.wait();
        if (!result || runs.get(key) !== run) return;
        runs.delete(key);
        delete s.rollouts[name]?.stageStarted[key];
        await record(name, entryKey(pkg.name, pkg.version), stage, result);
      } finally {
        live--;
        poke();
      }
    })();
  }

  /** G3: the outcome is on the Node before its Job may go; failed Jobs stay for their logs unless retention is 0. */
  async function record(name: string, key: string, stage: Stage, result: StageResult): Promise<void> {
    const r = s.rollouts[name];
    if (!r) return;
    const outcome = { restarts: result.failedPods };
    r.state =
      result.outcome === 'complete'
        ? recordStageSuccess(r.state, key, stage, outcome)
        : recordStageFailure(r.state, key, stage, { ...outcome, lastError: `${result.reason}: ${result.logTail}` });
    publish(name);
    const ref = { jobName: result.jobName, ...(result.podNamespace && { podNamespace: result.podNamespace }) };
    // The Job goes with the write that records its outcome, and the next stage need not wait for either; a run of
    // the same Job name waits for the delete (start). Patched: histories before it waited here for the write, then
    // deleted in an activity of its own.
    if (patched('delete-with-node-state-write')) {
      if (result.outcome === 'complete') writer.deleteAfterWrite(ref);
      else if (patched('delete-failed-job-once-recorded')) writer.deleteAfterWrite({ ...ref, failed: true });
      return;
    }
    await writer.flush();
    if (result.outcome === 'complete') await kube.deleteStageJob(ref);
    else if (patched('delete-failed-job-once-recorded')) await kube.deleteStageJob({ ...ref, failed: true });
  }

  async function request(name: string): Promise<void> {
    await signalRollout(name, (id) => getExternalWorkflowHandle(id).signal(requestInterruptSignal, { node }));
  }

  async function prepare(name: string): Promise<void> {
    const r = s.rollouts[name]!;
    await kube.cordon({ ...refOf(name), node });
    s.cordonedBy = name;
    const selector = r.spec.spec.podNonInterruptLabels;
    const guarded = Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions?.length ?? 0) > 0;
    const t = r.settings;
    while (
      guarded &&
      !(await longWait(t.protectedPodsTimeoutSeconds, `${node}: wait for protected pods`).waitForProtectedPods({
        node,
        selector,
        timeoutSeconds: t.protectedPodsTimeoutSeconds,
      }))
    ) {
      log.info('protected pods still running; waiting again', { node });
    }
    await longWait(t.drainTimeoutSeconds, `${node}: drain`).drain({
      node,
      timeoutSeconds: t.drainTimeoutSeconds,
      onTimeout: t.drainOnTimeout,
    });
    if (s.interrupt?.rollout === name) s.interrupt = { ...s.interrupt, phase: 'prepared' };
  }

  async function interrupt(name: string, merged: MergedInterrupt): Promise<void> {
    const r = s.rollouts[name]!;
    const owner = r.spec.spec.packages[merged.owner]!;
    if (s.bootId === null) s.bootId = (await kube.readNode({ ...refOf(name), node })).facts.bootId;
    r.state = startInterrupt(r.state, merged, r.spec.spec.packages);
    publish(name);
    const timeoutSeconds = stageTimeoutOf(r, owner.name);
    const what = `${node}: ${name}/${owner.name}@${owner.version} interrupt ${merged.interrupt.type}`;
    const result = await longWait(timeoutSeconds, what).runInterrupt({
      ...refOf(name),
      node,
      owner,
      interrupt: merged.interrupt,
      timeoutSeconds,
      additionalTolerations: r.spec.spec.additionalTolerations,
    });
    if (result.outcome === 'complete' && merged.interrupt.type === 'reboot') {
      const t = r.settings.rebootTimeoutSeconds;
      await longWait(t, `${node}: wait for reboot`).waitForReboot({
        node,
        previousBootId: s.bootId,
        timeoutSeconds: t,
      });
    }
    s.bootId = null;
    await record(name, entryKey(owner.name, owner.version), 'interrupt', result);
  }

  async function release(name: string, uncordon: boolean): Promise<void> {
    if (uncordon && s.cordonedBy === name) {
      await kube.uncordon({ ...refOf(name), node });
      s.cordonedBy = null;
    }
    const held = s.interrupt;
    s.interrupt = null;
    if (held?.permit) {
      const permit = held.permit;
      await signalRollout(name, (id) => getExternalWorkflowHandle(id).signal(releaseInterruptSignal, { node, permit }));
    }
  }

  async function forget(name: string): Promise<void> {
    if (s.interrupt?.rollout === name || s.cordonedBy === name) await release(name, true);
    delete s.rollouts[name];
    delete s.previous[name];
    forgetting.delete(name);
    showInUi();
  }

  // ---- decisions --------------------------------------------------------------------------------------------

  function advance(name: string, r: NodeRollout): void {
    const plan = planNode(r.spec.spec.packages, r.state, r.configUpdates);
    const erroring = (pkgName: string) =>
      r.state[entryKey(pkgName, r.spec.spec.packages[pkgName]!.version)]?.state === 'erroring';
    for (const e of plan.uninstall) if (e.state !== 'erroring') start(name, packageOf(e), 'uninstall');
    const interruptStuck = plan.interrupt?.packages.some(erroring) ?? false;
    const needsPermit =
      plan.run.some((x) => x.interrupting && !erroring(x.name)) || (plan.interrupt !== undefined && !interruptStuck);
    const prepared = s.interrupt?.rollout === name && s.interrupt.phase === 'prepared';
    if (needsPermit && !prepared) {
      if (!s.interrupt) {
        s.interrupt = { rollout: name, phase: 'requested', permit: null };
        spawn('request', () => request(name));
      } else if (s.interrupt.rollout === name && s.interrupt.phase === 'granted') spawn('prepare', () => prepare(name));
    }
    for (const x of plan.run) {
      if (erroring(x.name) || (x.interrupting && !prepared) || x.stage === 'interrupt') continue;
      start(name, r.spec.spec.packages[x.name]!, x.stage);
    }
    const merged = plan.interrupt;
    const held = merged ? interruptHeldFor(r.spec.spec.packages, r.state, r.configUpdates, plan) : [];
    if (merged && merged.waitingFor.length === 0 && held.length === 0 && prepared && !interruptStuck) {
      spawn('interrupt', () => interrupt(name, merged));
    }
    if (!needsPermit) releaseIfDone(name, r);
  }

  function releaseIfDone(name: string, r: NodeRollout): void {
    if (s.interrupt?.rollout !== name || runsOf(name).length > 0 || tasks.has('interrupt')) return;
    const anyErroring = Object.values(r.state).some((e) => e.state === 'erroring');
    // A node whose package failed stays cordoned, as in Skyhook; the permit goes back either way.
    spawn('release', () => release(name, !anyErroring));
  }

  function step(): void {
    for (const job of pendingDeletes) {
      spawn(`delete:${job}`, async () => {
        await kube.deleteStageJob({ jobName: job });
        pendingDeletes.delete(job);
      });
    }
    for (const name of forgetting) spawn(`forget:${name}`, () => forget(name));
    let blocked = false;
    for (const name of byPriority(s.rollouts)) {
      const r = s.rollouts[name]!;
      if (forgetting.has(name)) continue;
      if (!r.initialized) {
        spawn(`init:${name}`, () => init(name));
        blocked = true;
        continue;
      }
      const incomplete = rolloutNodeStatus({ ...r, paused: false, disabled: false, waiting: false }) !== 'complete';
      const waiting = incomplete && !r.disabled && blocked;
      if (waiting !== r.waiting) {
        r.waiting = waiting;
        publish(name);
      }
      // A disabled rollout neither runs nor holds others back; a paused one does hold them back (§5.5).
      if (!incomplete) releaseIfDone(name, r);
      if (r.disabled || !incomplete || blocked) continue;
      blocked = true;
      if (!r.paused && !draining) advance(name, r);
    }
  }

  const idle = () => live === 0 && tasks.size === 0 && pendingDeletes.size === 0 && writer.idle();

  void writer.run();
  showInUi();
  const gone = () => Object.keys(s.rollouts).length === 0;
  for (;;) {
    await condition(() => wake || ((draining || gone()) && idle()));
    wake = false;
    const info = workflowInfo();
    const limit = Math.min(...Object.values(s.rollouts).map((r) => r.settings.historyEventLimit));
    if (!draining && (info.continueAsNewSuggested || info.historyLength > limit)) {
      // Waits are stopped, not their Jobs: the next run re-plans from the carried state and adopts them by name.
      draining = true;
      for (const run of runs.values()) run.stop();
      runs.clear();
    }
    if (draining && idle()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof nodeWorkflow>({ cluster, node, carried: s });
    }
    if (gone() && idle()) {
      await condition(allHandlersFinished);
      if (gone()) return;
    }
    step();
  }
}

function packageOf(e: PackageEntry): Package {
  return { name: e.name, version: e.version, image: e.image, ...(e.containerSHA && { containerSHA: e.containerSHA }) };
}
