import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RolloutRef, StageResult, WorkflowSignal } from '../../activities/contract';
// The model by path, never model/index.ts: every workflow a worker caches instantiates what the node workflow imports,
// and the manifests' schemas are the rollout workflow's (docs/architecture.md, "Changing a workflow").
import { changedConfigKeys } from '../../model/config-changes';
import { drainRules, drainTimeoutSeconds } from '../../model/drain';
import { mayInterrupt, packageInterrupts, type MergedInterrupt } from '../../model/interrupt';
import { stageJobName } from '../../model/job';
import type { Package } from '../../model/manifests/skyhook';
import {
  decideNode,
  obsoleteRuns,
  parseRunKey,
  runKey,
  type DecisionView,
  type NodeIntent,
  type RunnableStage,
  type StageRunKey,
  type StoppingJob,
} from '../../model/node-decide';
import {
  decodeNodeState,
  entryKey,
  packageProgress,
  STAGES,
  type PackageEntry,
  type Stage,
  type Status,
} from '../../model/node-state';
import {
  applyVersionChanges,
  failInterruptWork,
  recordStageFailure,
  recordStageSuccess,
  rerunPackage,
  startInterrupt,
  startStage,
} from '../../model/stage-machine';
import { carriedForm, readCarried, type CarriedNode, type NodeCarried } from './carried';
import {
  desireSignal,
  forgetSignal,
  grantInterruptSignal,
  leaseCheckSignal,
  leaseReportSignal,
  nodeDisableSignal,
  nodeProgressSignal,
  nodeEnableSignal,
  nodePauseSignal,
  nodeResumeSignal,
  nodeStateQuery,
  releaseInterruptSignal,
  requestInterruptSignal,
  rerunUpdate,
  resetUpdate,
  type DesireArgs,
  type NodeControlArgs,
  type NodeProgress,
  type ReleaseArgs,
  type NodeWorkflowStart,
} from '../messages';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { kube, localCalls, longWait } from './activities';
import { NodeConditions } from './conditions';
import {
  applyNewSpec,
  byPriority,
  fixedStages,
  newNodeRollout,
  rolloutsOnNode,
  rolloutNodeStatus,
  stageTimeoutOf,
  type NodeRollout,
} from './node-rollout';
import { NodeStateWriter } from './state-writer';
import { nodeKey, packageKey, rolloutKey, stageKey, stateKey } from '../search-attributes';
import { StageRun } from './stage-run';
import { isPatched, PATCHES } from '../patches';
import { FAILURE_TYPES } from '../../model/failure-types';

// The node workflow: one per node, the only writer of that node's state (docs/architecture.md). Handlers only change
// state and wake the loop; the loop asks decideNode (model/node-decide.ts) what runs next and carries it out, so
// every decision sees every message before it.

export interface NodeWorkflowInput extends NodeWorkflowStart {
  /** Each rollout's entry in its carried form, as every build reads it (model/carried-rollout.ts). */
  carried?: CarriedNode;
}

const RETRY_PAUSE = '10 seconds';

export async function nodeWorkflow(input: NodeWorkflowInput): Promise<void> {
  const { cluster, node } = input;
  const s: NodeCarried = input.carried
    ? readCarried(input.carried)
    : {
        rollouts: {},
        previous: {},
        cordonedBy: null,
        interrupt: null,
        bootId: null,
      };
  const conditions = new NodeConditions();
  const local = localCalls(() => isPatched(PATCHES.localCallsInTurn), conditions);
  /** The short calls, local unless the history was recorded before the local-node-calls patch. */
  const shortCalls = () => (isPatched(PATCHES.localNodeCalls) ? local : kube);
  const writer = new NodeStateWriter(cluster, node, s.previous, s, local, conditions);
  const runs = new Map<string, StageRun>();
  const tasks = new Set<string>();
  const forgetting = new Set<string>(s.forgetting);
  /** Desires of rollouts started again under a name being forgotten: they start once the forget is done. */
  const reborn = new Map<string, DesireArgs>(Object.entries(s.reborn ?? {}));
  /** Stopped runs by Job name: their Job is deleted only once their wait, and its runStage attempt, is over (G11). */
  const stoppedRuns = new Map<string, StageRun>();
  /**
   * Jobs of stopped runs (name -> rollout, package, interrupting) whose deletion is not yet confirmed: the package waits
   * for them (G11), and an interrupting one holds its rollout's cordon (G16).
   */
  const pendingDeletes = new Map<string, StoppingJob>();
  let live = 0;
  let wake = true;
  let draining = false;
  let shownAttributes = '';
  let uiDue = false;
  const poke = () => void (wake = true);

  const refOf = (name: string): RolloutRef => {
    const r = s.rollouts[name]!;
    return {
      rollout: name,
      kind: r.rollout.kind,
      generation: r.generation,
      ...(r.rolloutUid && { rolloutUid: r.rolloutUid }),
    };
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

  /**
   * The UI is brought up to date once per pass of the loop, not at each transition: a stage's end and the next one's
   * start, in one workflow task, upsert the search attributes once. Patched: histories before it upserted at each.
   */
  function showInUi(): void {
    if (isPatched(PATCHES.localNodeCalls)) uiDue = true;
    else refreshUi();
  }

  function refreshUi(): void {
    uiDue = false;
    // A rollout is shown once the node has read its state (its init publishes): a node starts with one upsert, not a
    // "waiting" one the first stage replaces in the same workflow task. One being forgotten before its read holds
    // nothing back. Patched: histories before it showed it at once.
    const unread = Object.entries(s.rollouts).some(([n, r]) => !r.initialized && !forgetting.has(n));
    if (unread && isPatched(PATCHES.uiAfterInit)) return;
    const names = byPriority(s.rollouts);
    const active = names.find((n) => rolloutNodeStatus(s.rollouts[n]!) !== 'complete');
    const running = [...runs.values()].map(
      (r) => `${r.input.package.name}@${r.input.package.version} ${r.input.stage}`,
    );
    // The stage changes at every stage: with local-node-calls it is in the details only, and the attributes change
    // with the rollouts, packages and status (a command less per stage). Histories before it upserted the stage too.
    const withStage = !isPatched(PATCHES.localNodeCalls);
    const attrs = {
      rollouts: names,
      packages: [...new Set(names.flatMap((n) => Object.keys(s.rollouts[n]!.rollout.spec.packages)))].sort(),
      ...(withStage && { stage: running.length > 0 ? running.map((r) => r.split(' ')[1]!).join(',') : 'idle' }),
      state: active ? rolloutNodeStatus(s.rollouts[active]!) : 'complete',
    };
    const details = [
      `**node** ${node}`,
      ...names.map((n) => `- rollout **${n}**: ${rolloutNodeStatus(s.rollouts[n]!)}`),
      ...running.map((r) => `- running ${r}`),
      s.interrupt ? `- interrupt permit (${s.interrupt.rollout}): ${s.interrupt.phase}` : '',
    ].join('\n');
    // Not a command: the Web UI reads the details through a query.
    if (!withStage) setCurrentDetails(details);
    const shown = JSON.stringify(attrs);
    if (shown === shownAttributes) return;
    shownAttributes = shown;
    upsertSearchAttributes([
      { key: nodeKey, value: node },
      { key: rolloutKey, value: attrs.rollouts },
      { key: packageKey, value: attrs.packages },
      ...(attrs.stage !== undefined ? [{ key: stageKey, value: attrs.stage }] : []),
      { key: stateKey, value: attrs.state },
    ]);
    if (withStage) setCurrentDetails(details);
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

  /** A run is over for good (result recorded, or stopped): its start time and ID go with it. */
  function endRun(name: string, key: string): void {
    runs.delete(key);
    delete s.rollouts[name]?.stageStarted[key];
    delete s.rollouts[name]?.stageRunIds?.[key];
    delete s.rollouts[name]?.stageClocks?.[key];
  }

  /** Stops a run whose result no longer counts; its Job goes, and its package waits until it is gone (G11). */
  function stopRun(name: string, key: string, run: StageRun): void {
    run.stop();
    endRun(name, key);
    pendingDeletes.set(run.jobName, {
      rollout: name,
      package: run.input.package.name,
      interrupting: run.input.cordoned === true,
    });
    stoppedRuns.set(run.jobName, run);
  }

  /** A run carried over a continue-as-new that no wait follows any more: its Job goes (G11). */
  function abandon(name: string, k: StageRunKey): void {
    endRun(name, runKey(k));
    // Its spec may be gone with the run before the continue-as-new: it counts as interrupting (G16).
    pendingDeletes.set(stageJobName({ ...k, node }), { rollout: name, package: k.package, interrupting: true });
  }

  /** Stops every run of the entries a rerun, reset or forget removes, and deletes their Jobs before anything reruns. */
  function stopPackage(name: string, pkg: Pick<Package, 'name' | 'version'>): void {
    for (const [key, run] of runsOf(name)) if (run.input.package.name === pkg.name) stopRun(name, key, run);
    for (const stage of STAGES.filter((st) => st !== 'interrupt')) {
      const job = stageJobName({ rollout: name, package: pkg.name, version: pkg.version, stage, node });
      // Its Jobs were made from this version's spec; an entry of another version counts as interrupting.
      const spec = s.rollouts[name]?.rollout.spec.packages[pkg.name];
      const interrupting = spec?.version === pkg.version ? mayInterrupt(spec) : true;
      pendingDeletes.set(job, { rollout: name, package: pkg.name, interrupting });
    }
  }

  /** A failed stage the new spec fixes runs again; its failed Job goes first, or the new run would adopt it by name. */
  function rerunFixed(name: string, failed: PackageEntry[]): void {
    const r = s.rollouts[name]!;
    for (const e of failed) {
      // A configMap change may have moved the entry on to config already: that stage has a Job of its own.
      if (r.state[entryKey(e.name, e.version)]?.stage !== e.stage) continue;
      pendingDeletes.set(stageJobName({ rollout: name, package: e.name, version: e.version, stage: e.stage, node }), {
        rollout: name,
        package: e.name,
        interrupting: mayInterrupt(r.rollout.spec.packages[e.name]!),
      });
      r.state = rerunPackage(r.state, r.rollout.spec.packages[e.name]!, e.stage);
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

  setHandler(desireSignal, (args) => {
    const { rollout, spec: desired, generation, settings } = args;
    // A permit that came with the desire (a field no history before permit-with-admission had).
    const permit = args.permit !== undefined && isPatched(PATCHES.permitWithAdmission) ? args.permit : undefined;
    // A desire that comes while its name is being forgotten is a rollout started again under the name (the deleted
    // one sends nothing after its forget): it starts afresh once the forget is done. Patched: histories before it
    // took the desire as the old rollout's and cancelled the forget.
    if (forgetting.has(rollout) && isPatched(PATCHES.freshAfterForget)) {
      reborn.set(rollout, args);
      if (permit) handBack(rollout, permit);
      return;
    }
    const r = s.rollouts[rollout];
    // Another rollout under the same name (its forget lost, or not sent): the old one is forgotten first.
    if (r?.rolloutUid && args.rolloutUid && r.rolloutUid !== args.rolloutUid && isPatched(PATCHES.freshAfterForget)) {
      forgetRollout(rollout);
      reborn.set(rollout, args);
      if (permit) handBack(rollout, permit);
      poke();
      return;
    }
    forgetting.delete(rollout);
    if (!r) s.rollouts[rollout] = newNodeRollout(desired, generation, settings, args.rolloutUid);
    else if (generation > r.generation) {
      const before = r.rollout.spec.packages;
      const fixed = fixedStages(before, desired.spec.packages, r.state);
      const guards = isPatched(PATCHES.oneExecutorPerPackage);
      applyNewSpec(r, desired, generation, settings, guards);
      // Patched: histories before it left a fixed package erroring until a rerun.
      if (fixed.length > 0 && isPatched(PATCHES.rerunFixedStages)) rerunFixed(rollout, fixed);
      if (guards) {
        // G11: a run the new spec moved on from (version change, removal, config cycle) stops, and its Job goes
        // before the package's next stage starts. Histories before it ran the new stage beside the old one.
        const configChanged = Object.values(desired.spec.packages)
          .filter((p) => changedConfigKeys(before[p.name], p).length > 0)
          .map((p) => p.name);
        const mine = runsOf(rollout);
        const running = mine.map(([, run]) => ({ key: runKeyOf(run), package: run.input.package }));
        // Runs carried over a continue-as-new (or stopped for one) were made from the spec before this one.
        const carried = Object.keys(r.stageStarted)
          .filter((key) => !runs.has(key))
          .map(parseRunKey)
          .flatMap((k) => (before[k.package]?.version === k.version ? [{ key: k, package: before[k.package]! }] : []));
        const stale = obsoleteRuns([...running, ...carried], desired.spec.packages, r.state, configChanged).map(runKey);
        for (const [key, run] of mine) if (stale.includes(key)) stopRun(rollout, key, run);
        for (const k of carried) if (stale.includes(runKey(k.key))) abandon(rollout, k.key);
      }
      for (const [, run] of runsOf(rollout)) run.changeTimeout(stageTimeoutOf(r, run.input.package.name));
      publish(rollout);
    }
    // The same desire delivered again (its activity retried) hands nothing over: the permit may be released by now.
    const entry = s.rollouts[rollout]!;
    if (permit && entry.admissionPermit !== permit) {
      entry.admissionPermit = permit;
      takeGrant(rollout, permit);
    }
    poke();
  });
  function forgetRollout(rollout: string): void {
    forgetting.add(rollout);
    for (const [key, run] of runsOf(rollout)) stopRun(rollout, key, run);
  }

  setHandler(forgetSignal, ({ rollout }) => {
    if (!s.rollouts[rollout]) return;
    forgetRollout(rollout);
    poke();
  });
  setHandler(nodePauseSignal, control('pause', { paused: true }));
  setHandler(nodeResumeSignal, control('resume', { paused: false }));
  setHandler(nodeDisableSignal, control('disable', { disabled: true }));
  setHandler(nodeEnableSignal, control('enable', { disabled: false }));
  /** Hands a permit straight back to its rollout: nobody on this node waits for it. */
  function handBack(rollout: string, permit: string): void {
    spawn(`stray:${permit}`, () =>
      signalRollout(rollout, (id) => getExternalWorkflowHandle(id).signal(releaseInterruptSignal, { node, permit })),
    );
  }

  /**
   * A permit from the rollout, asked for or not: the rollout grants with the admission when the request would buy
   * nothing (workflows/rollout/interrupt-permits.ts, requestWithAdmission), on the desire or after it. A node that
   * holds no permit takes it for a rollout it runs; one that finds no use for it releases it (decideNode). Patched:
   * histories before it handed back every grant it had not asked for.
   */
  function takeGrant(rollout: string, permit: string): void {
    const held = s.interrupt;
    const runs = s.rollouts[rollout] !== undefined && !forgetting.has(rollout);
    if (
      (held?.rollout === rollout && held.phase === 'requested') ||
      (!held && runs && isPatched(PATCHES.permitWithAdmission))
    ) {
      s.interrupt = { rollout, phase: 'granted', permit };
    } else if (held?.rollout === rollout && held.permit && isPatched(PATCHES.regrantKeepsOnePermit)) {
      // A second grant to a node that holds one: the rollout lost the first (a reset). The node keeps the newer one and
      // hands back the older, unless they are the same (a reset rollout numbers its grants again), so the rollout's
      // books and the node stay in step and the budget counts this node once (G13).
      const old = held.permit;
      held.permit = permit;
      if (old !== permit) handBack(rollout, old);
    } else {
      // A grant nobody waits for any more (a forgotten rollout), or one while another rollout's interrupt holds the
      // node: hand it straight back.
      handBack(rollout, permit);
    }
    poke();
  }
  setHandler(grantInterruptSignal, ({ rollout, permit }) => takeGrant(rollout, permit));
  setHandler(leaseCheckSignal, ({ rollout, epoch, asOf, booked, queued, status }) => {
    if (status !== undefined && isPatched(PATCHES.reportOnLeaseCheck)) reportIfUnheard(rollout, status);
    const held = s.interrupt?.rollout === rollout ? s.interrupt : null;
    const agrees = held ? (held.phase === 'requested' ? queued : held.permit === booked) : booked === null && !queued;
    if (!agrees) {
      const report = { node, epoch, asOf, phase: held?.phase ?? null, permit: held?.permit ?? null };
      spawn(`lease:${rollout}`, () =>
        signalRollout(rollout, (id) => getExternalWorkflowHandle(id).signal(leaseReportSignal, report)),
      );
    }
    // Woken, the loop also sees the history these checks add, and continues as new in time.
    poke();
  });
  /**
   * G13: the rollout holds another status for this node than its settled one, whose state is on the Node: the report
   * that said so was lost (a reset of the rollout drops the signals after its point), and the rollout would wait for
   * it for ever. The node tells it again, ordered after every report it sent.
   */
  function reportIfUnheard(name: string, held: Status): void {
    const r = s.rollouts[name];
    if (!r?.initialized || forgetting.has(name) || !writer.idle()) return;
    const status = rolloutNodeStatus(r);
    if (status === held || (status !== 'complete' && status !== 'erroring')) return;
    s.reports = (s.reports ?? 0) + 1;
    const report: NodeProgress = {
      node,
      generation: r.generation,
      status,
      state: packageProgress(r.state),
      order: [Date.now(), s.reports],
    };
    spawn(`report:${name}`, () =>
      signalRollout(name, (id) => getExternalWorkflowHandle(id).signal(nodeProgressSignal, report)),
    );
  }

  setHandler(
    rerunUpdate,
    ({ rollout, package: name, stage, actor }) => {
      log.info(`rerun ${rollout} ${name}`, { actor, stage });
      const r = s.rollouts[rollout]!;
      const pkg = r.rollout.spec.packages[name]!;
      stopPackage(rollout, pkg);
      r.state = rerunPackage(r.state, pkg, stage);
      publish(rollout);
      poke();
    },
    {
      validator: ({ rollout, package: name }) => {
        const r = s.rollouts[rollout];
        if (!r) throw ApplicationFailure.nonRetryable(`node ${node} has no rollout ${rollout}`, FAILURE_TYPES.notFound);
        if (!r.rollout.spec.packages[name]) {
          throw ApplicationFailure.nonRetryable(`rollout ${rollout} has no package ${name}`, FAILURE_TYPES.notFound);
        }
      },
    },
  );
  setHandler(
    resetUpdate,
    ({ rollout, actor }) => {
      log.info(`reset ${rollout}`, { actor });
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
          throw ApplicationFailure.nonRetryable(`node ${node} has no rollout ${rollout}`, FAILURE_TYPES.notFound);
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
    const { nodeState } = await shortCalls().readNode({ ...refOf(name), node });
    const r = s.rollouts[name];
    if (!r) return;
    // Migration (§5.7): the annotation an operator or an earlier Keelson wrote is where this node resumes from.
    const decoded = decodeNodeState(nodeState ?? undefined);
    if (decoded.ok) {
      r.state = decoded.state;
      // The annotation may hold other versions than the spec's (an operator's rollout of an older release): they
      // upgrade, downgrade or uninstall as a spec change would. Patched: histories before it applied them afresh.
      if (isPatched(PATCHES.versionChangesOnMigration)) {
        r.state = applyVersionChanges(r.rollout.spec.packages, r.state).state;
      }
    } else log.warn('node state annotation not readable; starting empty', { rollout: name, error: decoded.error });
    s.previous[name] = nodeState;
    r.initialized = true;
    publish(name);
  }

  /** Starts (or, after continue-as-new, re-adopts) a stage that decideNode found free to run. */
  function start(name: string, pkg: Package, stage: RunnableStage): void {
    const r = s.rollouts[name]!;
    const key = runKey({ rollout: name, package: pkg.name, version: pkg.version, stage });
    const jobName = stageJobName({ rollout: name, package: pkg.name, version: pkg.version, stage, node });
    if (runs.has(key)) return;
    r.state = startStage(r.state, pkg, stage);
    const startedAt = (r.stageStarted[key] ??= Date.now());
    const clock = ((r.stageClocks ??= {})[key] ??= { startedAt });
    const runId = guards() ? ((r.stageRunIds ??= {})[key] ??= nextRunId()) : undefined;
    /** The permit the node was prepared under when the run started (G16: a refusal releases only that one). */
    const permitAtStart = s.interrupt?.rollout === name ? s.interrupt.permit : null;
    const run = new StageRun(
      {
        ...refOf(name),
        node,
        package: pkg,
        stage,
        timeoutSeconds: stageTimeoutOf(r, pkg.name),
        additionalTolerations: r.rollout.spec.additionalTolerations,
        ...(runId && { runId }),
        ...(interruptingStage(r, pkg, stage) && { cordoned: true as const }),
      },
      jobName,
      clock,
      () => suspended(name),
      `${node}: ${name}/${pkg.name}@${pkg.version} ${stage}`,
      guards(),
      conditions,
    );
    runs.set(key, run);
    publish(name);
    live++;
    void (async () => {
      try {
        const result = await run.wait();
        if (run.cordonLost && runs.get(key) === run) {
          // G16: nothing was created; the stage starts again once the node is cordoned and drained again. Only the
          // permit the run started under goes back, and not mid-prepare: a late refusal of a run started before an
          // earlier refusal's release would otherwise hand back the permit the node was granted since.
          endRun(name, key);
          const held = s.interrupt;
          const same = held?.rollout === name && held.phase === 'prepared' && held.permit === permitAtStart;
          if (same && !tasks.has('prepare')) spawn('release', () => cordonLost(name));
          return;
        }
        if (!result || runs.get(key) !== run) return;
        endRun(name, key);
        // A failure the workflow made up (the Job never reported) leaves a Job that may still run: it goes, and the
        // package waits for it, before anything else of the package starts (G11).
        if (run.jobMayRun && guards()) {
          pendingDeletes.set(run.jobName, {
            rollout: name,
            package: pkg.name,
            interrupting: run.input.cordoned === true,
          });
        }
        await record(name, entryKey(pkg.name, pkg.version), stage, result);
      } catch (err) {
        // G13: no floating failure. The outcome is in state by now; only the old path's Job delete can fail here.
        if (!isCancellation(err))
          log.warn('stage outcome recorded, its Job not deleted', { job: jobName, error: String(err) });
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
    const ref = {
      jobName: result.jobName,
      ...(result.podNamespace && { podNamespace: result.podNamespace }),
      ...(result.unfinished && { unfinished: true as const }),
    };
    // The Job goes with the write that records its outcome, and the next stage need not wait for either; a run of
    // the same Job name waits for the delete (start). Patched: histories before it waited here for the write, then
    // deleted in an activity of its own.
    if (isPatched(PATCHES.deleteWithNodeStateWrite)) {
      if (result.outcome === 'complete') writer.deleteAfterWrite(ref);
      else if (isPatched(PATCHES.deleteFailedJobOnceRecorded)) writer.deleteAfterWrite({ ...ref, failed: true });
      return;
    }
    await writer.flush();
    if (result.outcome === 'complete') await kube.deleteStageJob(ref);
    else if (isPatched(PATCHES.deleteFailedJobOnceRecorded)) await kube.deleteStageJob({ ...ref, failed: true });
  }

  async function request(name: string): Promise<void> {
    await signalRollout(name, (id) => getExternalWorkflowHandle(id).signal(requestInterruptSignal, { node }));
  }

  async function prepare(name: string): Promise<void> {
    try {
      await cordonAndDrain(name);
    } catch (err) {
      // G13: the failure is recorded on the packages that waited for the permit, and the permit goes back. Patched:
      // histories before it tried again every 10 seconds, for ever, holding the permit.
      if (isCancellation(err) || !isPatched(PATCHES.failuresBecomeErroring)) throw err;
      const r = s.rollouts[name];
      if (!r) return;
      r.state = failInterruptWork(r.rollout.spec.packages, r.state, r.configUpdates, failureText(err));
      publish(name);
    }
  }

  /** The rollouts whose cordon is on the node; before the patch, only the last one to cordon was remembered. */
  const cordonHolders = (): string[] => [...new Set([...(s.cordons ?? []), ...(s.cordonedBy ? [s.cordonedBy] : [])])];
  const holdsCordon = (name: string) =>
    isPatched(PATCHES.cordonPerRollout) ? cordonHolders().includes(name) : s.cordonedBy === name;

  async function cordonAndDrain(name: string): Promise<void> {
    const r = s.rollouts[name]!;
    const selector = r.rollout.spec.podNonInterruptLabels;
    const guarded = Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions?.length ?? 0) > 0;
    const drainOptions = r.rollout.spec.drain;
    // The cordon's local activity also asks whether a drain would find anything to do: on a node with nothing to
    // evict, no drain activity (a workflow task and a hop fewer into the interrupt). Not when protected pods are waited
    // for between the two. Patched: histories before it always ran the drain activity.
    const checkDrain = !guarded && isPatched(PATCHES.drainCheckWithCordon);
    const cordoned = await shortCalls().cordon({
      ...refOf(name),
      node,
      ...(checkDrain && { drainRules: drainRules(drainOptions) }),
    });
    // Patched: histories before it let a second rollout's cordon take the first's place, so the first's cordon was
    // never let go (not by its rerun, not when it was deleted).
    if (isPatched(PATCHES.cordonPerRollout)) {
      s.cordons = [...cordonHolders().filter((n) => n !== name), name];
      s.cordonedBy = s.cordons[0]!;
    } else s.cordonedBy = name;
    const t = r.settings;
    while (
      guarded &&
      !(await longWait(t.protectedPodsTimeoutSeconds, `${node}: wait for protected pods`).waitForProtectedPods({
        node,
        selector,
        timeoutSeconds: t.protectedPodsTimeoutSeconds,
      }))
    ) {
      if (isPatched(PATCHES.failuresBecomeErroring)) {
        throw ApplicationFailure.nonRetryable(
          `pods matching podNonInterruptLabels still run on node ${node} after ${t.protectedPodsTimeoutSeconds}s`,
          FAILURE_TYPES.protectedPodsTimeout,
        );
      }
      log.info('protected pods still running; waiting again', { node });
    }
    const drainSeconds = drainTimeoutSeconds(drainOptions, t.drainTimeoutSeconds);
    if (!(checkDrain && cordoned?.nothingToDrain)) {
      await longWait(drainSeconds, `${node}: drain`).drain({
        node,
        timeoutSeconds: drainSeconds,
        onTimeout: t.drainOnTimeout,
        rules: drainRules(drainOptions),
      });
    }
    // Only the permit the prepare was for: a request made meanwhile (after a release) has none yet. Patched: histories
    // before it marked whatever the node held.
    const granted = s.interrupt?.phase === 'granted' || !isPatched(PATCHES.cordonGuards);
    if (s.interrupt?.rollout === name && granted) s.interrupt = { ...s.interrupt, phase: 'prepared' };
  }

  async function interrupt(name: string, merged: MergedInterrupt): Promise<void> {
    const r = s.rollouts[name]!;
    const owner = r.rollout.spec.packages[merged.owner]!;
    if (s.bootId === null) s.bootId = (await shortCalls().readNode({ ...refOf(name), node })).facts.bootId;
    r.state = startInterrupt(r.state, merged, r.rollout.spec.packages);
    publish(name);
    const timeoutSeconds = stageTimeoutOf(r, owner.name);
    const what = `${node}: ${name}/${owner.name}@${owner.version} interrupt ${merged.interrupt.type}`;
    // A run ID of its own: a rerun's interrupt is a new Job, and the agent's flags of the last one do not skip it.
    const runId = guards() ? nextRunId() : undefined;
    const rebootSeconds = r.settings.rebootTimeoutSeconds;
    const rebootInside = merged.interrupt.type === 'reboot' && isPatched(PATCHES.rebootInInterrupt);
    const onCordoned = isPatched(PATCHES.interruptOnCordonedNode);
    let result: StageResult;
    try {
      result = await longWait(timeoutSeconds + (rebootInside ? rebootSeconds : 0), what).runInterrupt({
        ...refOf(name),
        node,
        owner,
        interrupt: merged.interrupt,
        timeoutSeconds,
        additionalTolerations: r.rollout.spec.additionalTolerations,
        ...(runId && { runId }),
        ...(rebootInside && { reboot: { previousBootId: s.bootId, timeoutSeconds: rebootSeconds } }),
        ...(onCordoned && { cordoned: true as const }),
      });
    } catch (err) {
      if (onCordoned && failureType(err) === FAILURE_TYPES.notCordoned) return cordonLost(name);
      throw err;
    }
    let outcome = result;
    if (result.outcome === 'complete' && merged.interrupt.type === 'reboot' && !rebootInside) {
      try {
        await longWait(rebootSeconds, `${node}: wait for reboot`).waitForReboot({
          node,
          previousBootId: s.bootId,
          timeoutSeconds: rebootSeconds,
        });
      } catch (err) {
        // G13: a node that does not come back is an erroring interrupt, and the permit goes back. Patched: histories
        // before it waited again every 10 seconds, for ever.
        if (isCancellation(err) || !isPatched(PATCHES.failuresBecomeErroring)) throw err;
        outcome = { ...result, outcome: 'failed', reason: FAILURE_TYPES.rebootTimeout, logTail: failureText(err) };
      }
    }
    s.bootId = null;
    await record(name, entryKey(owner.name, owner.version), 'interrupt', outcome);
  }

  /**
   * G16: a stage of a package that ends in an interrupt needs the rollout's cordon on the node (runStage checks it
   * before creating the Job). Patched: histories before it created the Job whatever the node.
   */
  function interruptingStage(r: NodeRollout, pkg: Package, stage: RunnableStage): boolean {
    if (stage === 'uninstall' || !isPatched(PATCHES.cordonGuards)) return false;
    return packageInterrupts(pkg, r.configUpdates[pkg.name]).length > 0;
  }

  /**
   * The node lost this rollout's cordon before its interrupt or an interrupting stage ran (runInterrupt or runStage
   * refused it, creating nothing): the permit goes back, and the work starts over from its request, with a cordon and a
   * drain, under the budget (G16).
   */
  async function cordonLost(name: string): Promise<void> {
    log.warn('node lost its cordon before its interrupt: it asks for a permit, cordons and drains again', {
      node,
      rollout: name,
    });
    s.bootId = null;
    // Its cordon annotation goes with the permit: left on a node made schedulable by hand, it would keep the node
    // cordoned after another rollout's release, with no permit counting it.
    await release(name, true);
  }

  /**
   * An interrupt that failed runs again as a new Job, which reboots the node again: its wait must compare with the boot
   * ID read before that Job, not before the first. Patched: histories before it kept the first one.
   */
  function forgetBootId(err: unknown): never {
    if (!isCancellation(err) && isPatched(PATCHES.rebootInInterrupt)) s.bootId = null;
    throw err;
  }

  async function release(name: string, uncordon: boolean): Promise<void> {
    // Only this rollout's permit: another rollout's prepared interrupt is not this release's to end.
    const heldPermit = () =>
      s.interrupt?.rollout === name || !isPatched(PATCHES.cordonPerRollout) ? s.interrupt : null;
    let sent: string | null = null;
    if (uncordon && holdsCordon(name)) {
      // The uncordon's activity hands the permit back once it is done: no command, no event and no workflow task on
      // the node for it. Patched: histories before it signalled from here.
      const permit = isPatched(PATCHES.releaseWithUncordon) ? (heldPermit()?.permit ?? null) : null;
      await shortCalls().uncordon({ ...refOf(name), node, ...(permit && { release: releaseOf(name, permit) }) });
      sent = permit;
      s.cordons = cordonHolders().filter((n) => n !== name);
      s.cordonedBy = s.cordons[0] ?? null;
    }
    const held = heldPermit();
    if (held) s.interrupt = null;
    // A grant taken meanwhile (a reset rollout's regrant) replaced the permit the uncordon sent back: this one goes too.
    if (held?.permit && held.permit !== sent) {
      const permit = held.permit;
      await signalRollout(name, (id) => getExternalWorkflowHandle(id).signal(releaseInterruptSignal, { node, permit }));
    }
  }

  function releaseOf(name: string, permit: string): WorkflowSignal {
    const args: ReleaseArgs = { node, permit };
    return { workflowId: rolloutWorkflowId(cluster, name), signal: releaseInterruptSignal.name, args: [args] };
  }

  async function forget(name: string): Promise<void> {
    if (s.interrupt?.rollout === name || holdsCordon(name)) await release(name, true);
    if (isPatched(PATCHES.freshAfterForget)) {
      // What the deleted rollout wrote goes, after its last queued write, so a rollout of the name reads nothing.
      await writer.flush();
      await shortCalls().clearNodeState({ ...refOf(name), node });
      writer.forget(name);
    }
    delete s.rollouts[name];
    delete s.previous[name];
    forgetting.delete(name);
    const again = reborn.get(name);
    reborn.delete(name);
    if (again) s.rollouts[name] = newNodeRollout(again.spec, again.generation, again.settings, again.rolloutUid);
    showInUi();
  }

  // ---- decisions --------------------------------------------------------------------------------------------

  function nextRunId(): string {
    s.runSeq = (s.runSeq ?? 0) + 1;
    return `${workflowInfo().firstExecutionRunId.slice(0, 8)}-${s.runSeq}`;
  }

  function view(): DecisionView {
    return {
      node,
      rollouts: rolloutsOnNode(s.rollouts, forgetting),
      runs: [...runs.values()].map(runKeyOf),
      carried: Object.values(s.rollouts)
        .flatMap((r) => Object.keys(r.stageStarted))
        .filter((key) => !runs.has(key))
        .map(parseRunKey),
      stopping: pendingDeletes,
      finishedDeleting: writer.deletingJobs(),
      tasks,
      interrupt: s.interrupt,
      draining,
      guards: guards(),
      cordonGuards: isPatched(PATCHES.cordonGuards),
    };
  }

  function carryOut(intent: NodeIntent): void {
    switch (intent.kind) {
      case 'delete': {
        const job = intent.jobName;
        return spawn(`delete:${job}`, async () => {
          const stopped = stoppedRuns.get(job);
          if (stopped && guards()) await conditions.until(() => stopped.ended);
          stoppedRuns.delete(job);
          if (guards())
            await longWait(DELETE_WAIT_SECONDS, `${node}: delete ${job}`).deleteStageJob({
              jobName: job,
              untilGone: true,
            });
          else await kube.deleteStageJob({ jobName: job });
          pendingDeletes.delete(job);
        });
      }
      case 'forget':
        return spawn(`forget:${intent.rollout}`, () => forget(intent.rollout));
      case 'init':
        return spawn(`init:${intent.rollout}`, () => init(intent.rollout));
      case 'waiting':
        s.rollouts[intent.rollout]!.waiting = intent.waiting;
        return publish(intent.rollout);
      case 'start':
        return start(intent.rollout, intent.package, intent.stage);
      case 'abandon':
        return abandon(intent.run.rollout, intent.run);
      case 'request':
        s.interrupt = { rollout: intent.rollout, phase: 'requested', permit: null };
        return spawn('request', () => request(intent.rollout));
      case 'prepare':
        return spawn('prepare', () => prepare(intent.rollout));
      case 'interrupt':
        return spawn('interrupt', () => interrupt(intent.rollout, intent.merged).catch(forgetBootId));
      case 'release':
        return spawn('release', () => release(intent.rollout, intent.uncordon));
    }
  }

  function step(): void {
    for (const intent of decideNode(view())) carryOut(intent);
  }

  const idle = () => live === 0 && tasks.size === 0 && pendingDeletes.size === 0 && writer.idle();

  void writer.run();
  showInUi();
  const gone = () => Object.keys(s.rollouts).length === 0;
  // A node at rest (nothing runs, nothing is written or deleted) sends the report a stage's change held back, so the
  // rollout's view of it is what the Node says. Patched: histories before it held stage changes until the next one.
  const reportsAtRest = isPatched(PATCHES.reportAtRest);
  const heldAtRest = () => reportsAtRest && idle() && writer.holdsReports();
  for (;;) {
    await conditions.until(() => wake || uiDue || ((draining || gone()) && idle()) || heldAtRest());
    wake = false;
    const info = workflowInfo();
    const limit = Math.min(...Object.values(s.rollouts).map((r) => r.settings.historyEventLimit));
    if (!draining && (info.continueAsNewSuggested || info.historyLength > limit)) {
      // Waits are stopped, not their Jobs: the next run re-plans from the carried state and adopts them by name.
      draining = true;
      for (const run of runs.values()) {
        run.stop();
        stoppedRuns.set(run.jobName, run);
      }
      runs.clear();
    }
    if (draining && idle()) {
      // The held reports are not carried: a node at rest writes nothing in its next run to send them with.
      if (reportsAtRest) await writer.sendHeldReports();
      await conditions.until(allHandlersFinished);
      const carried = carriedForm(s, { forgetting, reborn });
      await continueAsNew<typeof nodeWorkflow>({ cluster, node, carried });
    }
    if (gone() && idle()) {
      await conditions.until(allHandlersFinished);
      if (gone()) return;
    }
    step();
    if (uiDue) refreshUi();
    if (heldAtRest()) spawn('report-at-rest', () => writer.sendHeldReports());
  }
}

/** G11/G12 (model/node-decide.ts): histories before it started stages beside running ones. */
const guards = () => isPatched(PATCHES.oneExecutorPerPackage);

/** An activity's failure comes wrapped in an ActivityFailure: its cause is what the activity threw. */
const rootOf = (err: unknown) => (err instanceof ActivityFailure && err.cause ? err.cause : err);

function failureType(err: unknown): string | undefined {
  const root = rootOf(err);
  return root instanceof ApplicationFailure ? (root.type ?? undefined) : undefined;
}

/** A failure as the node's annotation shows it: its type and its cause's message, bounded. */
function failureText(err: unknown): string {
  const root = rootOf(err);
  const type = root instanceof ApplicationFailure && root.type ? `${root.type}: ` : '';
  const text = `${type}${root instanceof Error ? root.message : String(root)}`;
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}

/** How long a stopped run's Job may take to go, pods included (their grace period, the API server's pace). */
const DELETE_WAIT_SECONDS = 600;

function runKeyOf(run: StageRun): StageRunKey {
  const { rollout, package: pkg, stage } = run.input;
  return { rollout, package: pkg.name, version: pkg.version, stage };
}
