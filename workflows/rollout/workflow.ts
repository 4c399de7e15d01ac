import {
  ActivityCancellationType,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { msToNumber } from '@temporalio/common/lib/time';
import type { KeelsonActivities } from '../../activities/contract';
import {
  assignCompartments,
  effectivePolicy,
  initialBatchState,
  metadataPrefix,
  nodeMetadataKeys,
  RolloutSpecSchema,
  RUNTIME_REQUIRED_TAINT,
  type AssignedCompartment,
  type RolloutSpec,
  type Status,
} from '../../model';
import { fromCarried, toCarried, type CarriedForm } from '../../model/carried-rollout';
import { imagePolicyErrors, type ImagePolicy } from '../../model/image-policy';
import { parseTaint, sameTaint, taintToleration, untoleratedTaint, type Taint } from '../../model/taints';
import { SHORT_CALL_TIMEOUT } from '../activity-timeouts';
import { admitNext, newCompartmentBatch, resetCompartmentBatch, type AdmissionMode } from './batch-admission';
import {
  dropNode,
  grantPermits,
  newPermitState,
  reconcileLease,
  releasePermit,
  requestPermit,
  requestWithAdmission,
  withdrawUnasked,
} from './interrupt-permits';
import {
  DEFAULT_NODE_SETTINGS,
  desireSignal,
  disableSignal,
  enableSignal,
  forgetSignal,
  grantInterruptSignal,
  leaseCheckSignal,
  leaseReportSignal,
  nodeDisableSignal,
  nodeEnableSignal,
  nodePauseSignal,
  nodeProgressSignal,
  nodeResumeSignal,
  pauseSignal,
  releaseInterruptSignal,
  requestInterruptSignal,
  resetBatchesUpdate,
  resetBatchStateUpdate,
  resumeSignal,
  STARTED_BY_MEMO,
  statusQuery,
  updateSpecUpdate,
  type Actor,
  type ChangedBy,
  type DesireArgs,
  type LeaseCheckArgs,
  type NodeSettings,
} from '../messages';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { batchStatus, rolloutStatusView, type RolloutView } from './status';
import { mirrorsHalt, reportedProgress, takesReport } from './progress';
import { packageKey, rolloutKey, stateKey } from '../search-attributes';
import { isPatched, PATCHES } from '../patches';
import { FAILURE_TYPES } from '../../model/failure-types';

// The rollout workflow: the fleet coordinator of one rollout (docs/architecture.md). It lists nodes, admits them in
// batches, tells node workflows what they desire, hands out interrupt permits, and folds their progress into a
// Skyhook-compatible status. Handlers change state and queue messages; the loop sends them in order.

export interface RolloutOptions {
  admission: AdmissionMode;
  /** How often nodes are listed again, to configure new ones. */
  relistInterval: string;
  /**
   * When the only nodes left are blocked, the first relist comes this soon, each next one twice as late, up to
   * relistInterval (docs/architecture.md, "Blocked nodes left").
   */
  blockedRecheck: string;
  runtimeRequiredTaint: Taint;
  /** The node metadata key prefix the worker writes under; unset: by the rollout's kind. */
  keyPrefix?: string;
  node: NodeSettings;
  /** Continue as new once the history has this many events (the server's suggestion also counts). */
  historyEventLimit: number;
}

export const DEFAULT_ROLLOUT_OPTIONS: RolloutOptions = {
  admission: 'batches',
  relistInterval: '5 minutes',
  blockedRecheck: '15 seconds',
  runtimeRequiredTaint: parseTaint(RUNTIME_REQUIRED_TAINT)!,
  node: DEFAULT_NODE_SETTINGS,
  historyEventLimit: 10_000,
};

export interface RolloutCarried extends RolloutView {
  /** Messages to node workflows not sent yet. */
  outbox: Outgoing[];
  /** The status was complete when last looked at: reaching complete again resets the batches (§2.2.6). */
  complete?: boolean;
}

export interface RolloutInput {
  cluster: string;
  /** The spec the run starts with; a continued run's is its carried one (client/history-spec.ts reads it here). */
  spec: RolloutSpec;
  options?: Partial<RolloutOptions>;
  /** The state in its carried form, as every build reads it (model/carried-rollout.ts). */
  carried?: CarriedForm<RolloutCarried>;
}

type Outgoing =
  /** `permit`: a grant that rides on the desire (admit). */
  | { node: string; kind: 'desire'; permit?: string }
  | { node: string; kind: 'forget' }
  | { node: string; kind: 'pause' | 'resume' | 'disable' | 'enable'; actor: Actor }
  | { node: string; kind: 'grant'; permit: string }
  | { node: string; kind: 'leaseCheck'; check: LeaseCheckArgs };

const act = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: SHORT_CALL_TIMEOUT,
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

/**
 * A pass's desires in one activity: it heartbeats the nodes done and a retry resumes there; the rollout's
 * cancellation waits for it to stop, so its forgets go out after the last desire (no node takes the rollout back).
 */
const desireSends = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '20 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

const NODE_CONTROL = {
  pause: nodePauseSignal,
  resume: nodeResumeSignal,
  disable: nodeDisableSignal,
  enable: nodeEnableSignal,
};

/** Refuses a spec the schema or the worker's image policy does not allow, as a failure naming every field. */
function refuseSpec(spec: unknown, policy: ImagePolicy | undefined): void {
  const parsed = RolloutSpecSchema.safeParse(spec);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw ApplicationFailure.nonRetryable(`${issue.path.join('.')}: ${issue.message}`, FAILURE_TYPES.invalidSpec);
  }
  const errors = policy ? imagePolicyErrors(parsed.data, policy) : [];
  if (errors.length > 0) {
    throw ApplicationFailure.nonRetryable(
      errors.map((e) => `${e.path}: ${e.message}`).join('; '),
      FAILURE_TYPES.invalidSpec,
    );
  }
}

export async function rolloutWorkflow(input: RolloutInput): Promise<void> {
  const { cluster } = input;
  let options: RolloutOptions = { ...DEFAULT_ROLLOUT_OPTIONS, ...input.options };
  const name = input.spec.name;
  /** The spec updates' turns: each waits for the one accepted before it (its policy read, then its application). */
  let specUpdates: Promise<unknown> = Promise.resolve();
  const s: RolloutCarried = input.carried
    ? fromCarried(input.carried)
    : {
        generation: 1,
        rollout: input.spec,
        paused: input.spec.paused,
        disabled: input.spec.disabled,
        nodes: {},
        order: [],
        batches: {},
        permits: newPermitState(),
        outbox: [],
        listed: false,
      };
  let wake = true;
  let relistDue = input.carried === undefined;
  let shown = '';
  const poke = () => void (wake = true);
  // Assigned again only when the node list (a relist) or the spec (an update) is replaced, not on every pass: at
  // thousands of nodes a pass is otherwise mostly this.
  let assigned: { order: string[]; rollout: RolloutSpec; compartments: AssignedCompartment[] } | undefined;
  const compartments = (): AssignedCompartment[] => {
    if (assigned?.order !== s.order || assigned.rollout !== s.rollout) {
      const nodes = s.order.map((n) => ({ name: n, labels: s.nodes[n]!.labels }));
      const compartments = assignCompartments(nodes, effectivePolicy(s.rollout, s.order.length).spec);
      assigned = { order: s.order, rollout: s.rollout, compartments };
    }
    return assigned.compartments;
  };
  const admittedNodes = () => s.order.filter((n) => s.nodes[n]!.admittedGeneration > 0);

  function control(kind: 'pause' | 'resume' | 'disable' | 'enable', change: Partial<RolloutCarried>) {
    return (actor: Actor) => {
      log.info(`${kind} rollout ${name}`, { ...actor });
      Object.assign(s, change);
      s.lastChange = { action: kind, ...actor, generation: s.generation };
      for (const node of admittedNodes()) s.outbox.push({ node, kind, actor });
      poke();
    };
  }
  setHandler(pauseSignal, control('pause', { paused: true }));
  setHandler(resumeSignal, control('resume', { paused: false }));
  setHandler(disableSignal, control('disable', { disabled: true }));
  setHandler(enableSignal, control('enable', { disabled: false }));
  setHandler(nodeProgressSignal, (report) => {
    const n = s.nodes[report.node];
    if (n && takesReport(n.reported, report)) {
      const held = n.reported;
      n.reported = reportedProgress(report);
      // A complete node that only mirrors the rollout's pause or disable has no work in flight: counted in flight, a
      // spec update would reach it at once, outside its batch (G14).
      // Patched: histories before it took such a report as work; asked only here, so only such a run has its marker.
      if (held && mirrorsHalt(held, n.reported) && isPatched(PATCHES.settledUnderPause)) n.reported.status = 'complete';
    }
    poke();
  });
  setHandler(requestInterruptSignal, ({ node }) => {
    requestPermit(s.permits, node);
    poke();
  });
  setHandler(releaseInterruptSignal, ({ node, permit }) => {
    releasePermit(s.permits, node, permit);
    poke();
  });
  setHandler(leaseReportSignal, (report) => {
    // An answer to another run's check (before a reset, or of a rollout deleted under this name) speaks of other books.
    if (report.epoch !== workflowInfo().runId || !s.nodes[report.node]) return;
    reconcileLease(s.permits, report);
    poke();
  });
  function applySpec(spec: RolloutSpec, by: ChangedBy | undefined): { generation: number } {
    const parsed = RolloutSpecSchema.parse(spec);
    // Nodes with work in flight take the new spec at once (a new stageTimeout reaches running stages, G4) and stay
    // in their batch, which keeps its barrier (G14); settled nodes take it when their batch comes again. Patched:
    // histories before it looked for them after the generation changed, when none is in flight any more.
    const inFlight = isPatched(PATCHES.specUpdateReachesInFlight)
      ? admittedNodes().filter((node) => batchStatus(s, node) === 'in_progress')
      : [];
    s.generation++;
    s.rollout = parsed;
    if (by) {
      log.info(`update rollout ${name}`, { actor: by.actor, generation: s.generation });
      s.lastChange = { action: 'update', actor: by.actor, generation: s.generation };
    }
    if (parsed.resetBatchStateOnCompletion)
      for (const b of Object.values(s.batches)) Object.assign(b, newCompartmentBatch());
    for (const node of inFlight) {
      s.nodes[node]!.admittedGeneration = s.generation;
      s.outbox.push({ node, kind: 'desire' });
    }
    // New tolerations or selectors change which nodes are targeted or blocked (§5.2): list the nodes again now,
    // not at the next periodic relist. Patched: histories before it have no listNodes after an update.
    if (isPatched(PATCHES.relistOnSpecUpdate)) relistDue = true;
    poke();
    return { generation: s.generation };
  }
  setHandler(
    updateSpecUpdate,
    async (spec, by) => {
      // Patched: histories before it applied an update at once.
      if (!isPatched(PATCHES.imagePolicy)) return applySpec(spec, by);
      // The policy may have changed since the start: read it again, and refuse a spec outside it. Updates take their
      // turns in the order they were accepted, whatever order their policy reads end in: a later spec is never
      // overwritten by an earlier one.
      const turn = specUpdates.then(async () => {
        refuseSpec(spec, await act.imagePolicy());
        return applySpec(spec, by);
      });
      specUpdates = turn.catch(() => undefined);
      return turn;
    },
    {
      // Synchronous: the SDK ignores what an async validator returns.
      // Both parameters, so the handler's types include the optional second one.
      validator: (spec, _by?: ChangedBy) => {
        // The schema and the name only: the policy is the worker's now, read by the handler.
        refuseSpec(spec, undefined);
        if (spec.name !== name) {
          throw ApplicationFailure.nonRetryable(`spec is for ${spec.name}, not ${name}`, FAILURE_TYPES.invalidSpec);
        }
      },
    },
  );
  setHandler(resetBatchesUpdate, () => {
    for (const b of Object.values(s.batches)) Object.assign(b, { state: initialBatchState(), open: null });
    poke();
  });
  setHandler(
    resetBatchStateUpdate,
    (who) => {
      log.info(`reset the batches of rollout ${name}`, { ...who });
      const byName = new Map(compartments().map((c) => [c.name, c.nodes]));
      for (const [compartment, batch] of Object.entries(s.batches)) {
        const nodes = (byName.get(compartment) ?? []).map((n) => ({ name: n, status: batchStatus(s, n) }));
        resetCompartmentBatch(batch, nodes);
      }
      s.lastChange = { action: 'reset-batches', ...who, generation: s.generation };
      poke();
      const states = Object.entries(s.batches).map(([c, b]) => [c, b.state] as const);
      return { generation: s.generation, compartments: Object.fromEntries(states) };
    },
    {
      validator: (who) => {
        if (typeof who?.actor !== 'string' || who.actor === '') {
          throw ApplicationFailure.nonRetryable('actor: must name who resets the batches (the API token name)');
        }
      },
    },
  );
  setHandler(statusQuery, () => rolloutStatusView(s, compartments(), true));

  async function relist(): Promise<void> {
    const facts = await act.listNodes({ selector: s.rollout.spec.nodeSelectors });
    const t = options.runtimeRequiredTaint;
    const tolerations = [
      { key: 'node.kubernetes.io/unschedulable', operator: 'Exists' as const },
      ...s.rollout.spec.additionalTolerations,
      ...(s.rollout.spec.runtimeRequired ? [taintToleration(t)] : []),
    ];
    // The kind's ignore label, as Skyhook users set it, and the worker's own key prefix's too.
    const ignoreLabels = [metadataPrefix(s.rollout.kind), options.keyPrefix ?? metadataPrefix(s.rollout.kind)].map(
      (prefix) => nodeMetadataKeys(s.rollout.name, prefix).ignore,
    );
    for (const f of facts) {
      const prev = s.nodes[f.name];
      // Taints are judged when a node is picked (§5.2), not under work this rollout started: a node rebooting for it is
      // NotReady, tainted not-ready, and counted blocked its batch would close and the status show blocked until the
      // next relist. Patched: histories before it judged every node's taints at every relist.
      const tainted =
        untoleratedTaint(f.taints, tolerations) !== undefined &&
        !(prev?.admittedGeneration === s.generation && isPatched(PATCHES.taintsBlockBeforeAdmission));
      s.nodes[f.name] = {
        labels: f.labels,
        blocked: ignoreLabels.some((label) => f.labels[label] === 'true') || tainted,
        runtimeTainted: f.taints.some((x) => sameTaint(x, t)),
        admittedGeneration: prev?.admittedGeneration ?? 0,
        ...(prev?.reported && { reported: prev.reported }),
      };
    }
    const listed = new Set(facts.map((f) => f.name));
    for (const gone of s.order.filter((n) => !listed.has(n))) {
      if (s.nodes[gone]!.admittedGeneration > 0) s.outbox.push({ node: gone, kind: 'forget' });
      dropNode(s.permits, gone);
      delete s.nodes[gone];
    }
    s.order = facts.map((f) => f.name);
    s.listed = true;
  }

  /**
   * Permits are leases (G13): with each relist, the nodes that hold or wait for this rollout's permit, and those with
   * work in flight under its current spec, are told what the books say of them (a signal); a node that disagrees
   * answers with what it holds (leaseReport) and the books follow. A node with work in flight whose workflow is gone
   * is sent its desire again; its permit stays booked while the new workflow asks for it.
   */
  function checkLeases(): void {
    const working = (n: string) =>
      !s.nodes[n]!.blocked &&
      s.nodes[n]!.admittedGeneration === s.generation &&
      ['in_progress', 'erroring'].includes(batchStatus(s, n));
    const nodes = new Set([...Object.keys(s.permits.holders), ...s.permits.queue, ...s.order.filter(working)]);
    const epoch = workflowInfo().runId;
    for (const node of nodes) {
      if (!s.nodes[node]) continue;
      const booked = s.permits.holders[node] ?? null;
      s.outbox.push({
        node,
        kind: 'leaseCheck',
        check: {
          rollout: name,
          epoch,
          asOf: s.permits.issued,
          booked,
          queued: s.permits.queue.includes(node),
          ...(working(node) && isPatched(PATCHES.reportOnLeaseCheck) && { status: batchStatus(s, node) }),
        },
      });
    }
  }

  /**
   * A lease check found no node workflow: one with work in flight under the current spec starts again; any other
   * lets its permit go and is left to admission (a blocked node, one admitted under an older spec).
   */
  function nodeWorkflowGone(node: string): void {
    const n = s.nodes[node]!;
    const status = batchStatus(s, node);
    if (!n.blocked && n.admittedGeneration === s.generation && (status === 'in_progress' || status === 'erroring')) {
      log.warn('node workflow gone with work in flight: starting it again', { node });
      s.outbox.push({ node, kind: 'desire' });
    } else dropNode(s.permits, node);
  }

  /**
   * What every node's desire says. The rollout's own pause and disable, not the manifest's: a rollout started paused
   * and then resumed admits its nodes running (G14).
   */
  function desireShared(): Omit<DesireArgs, 'permit'> {
    return {
      rollout: name,
      spec: { ...s.rollout, paused: s.paused, disabled: s.disabled },
      generation: s.generation,
      settings: options.node,
      rolloutUid: workflowInfo().firstExecutionRunId,
    };
  }

  /** The desires first in their node's queue, sent in one activity (a batch's admission: one call, not one per node). */
  async function sendDesires(desires: Extract<Outgoing, { kind: 'desire' }>[]): Promise<void> {
    await desireSends.ensureNodeWorkflows({
      cluster,
      signal: desireSignal.name,
      shared: desireShared(),
      nodes: desires.map((m) => ({ node: m.node, ...(m.permit && { own: { permit: m.permit } }) })),
    });
    for (const m of desires) s.outbox.splice(s.outbox.indexOf(m), 1);
  }

  async function send(m: Outgoing): Promise<void> {
    if (m.kind === 'forget') return forgetOn(m.node);
    if (!s.nodes[m.node]) return;
    if (m.kind === 'desire') {
      const args = { ...desireShared(), ...(m.permit && { permit: m.permit }) };
      await act.ensureNodeWorkflow({ cluster, node: m.node, signal: desireSignal.name, args: [args] });
      return;
    }
    const handle = getExternalWorkflowHandle(nodeWorkflowId(cluster, m.node));
    try {
      if (m.kind === 'grant') await handle.signal(grantInterruptSignal, { rollout: name, permit: m.permit });
      else if (m.kind === 'leaseCheck') await handle.signal(leaseCheckSignal, m.check);
      else await handle.signal(NODE_CONTROL[m.kind], { rollout: name, ...m.actor });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // A node workflow that is gone (terminated by hand, say) never fails the rollout, and a permit granted to it
      // is returned at once (G13).
      log.warn('node workflow not reachable', { node: m.node, message: m.kind, error: String(err) });
      if (m.kind === 'grant') releasePermit(s.permits, m.node, m.permit);
      if (m.kind === 'leaseCheck') nodeWorkflowGone(m.node);
    }
  }

  /**
   * Sends what the handlers queued: in order for each node, the nodes at once. One at a time, a batch of 100 admitted
   * nodes waited 100 activity round trips through Temporal before the last one started. Patched: histories before it
   * sent one message at a time.
   */
  async function sendOutbox(): Promise<void> {
    if (!isPatched(PATCHES.sendToNodesAtOnce)) {
      while (s.outbox.length > 0) {
        await send(s.outbox[0]!);
        s.outbox.shift();
      }
      return;
    }
    while (s.outbox.length > 0) {
      const byNode = new Map<string, Outgoing[]>();
      for (const m of s.outbox) byNode.set(m.node, [...(byNode.get(m.node) ?? []), m]);
      // Patched: histories before it sent each desire in an activity of its own.
      if (isPatched(PATCHES.desiresInOneActivity)) {
        const desires = [...byNode.values()].flatMap((ms) => {
          const first = ms[0]!;
          return first.kind === 'desire' && s.nodes[first.node] ? [first] : [];
        });
        if (desires.length > 0) {
          await sendDesires(desires);
          continue;
        }
      }
      await Promise.all(
        [...byNode.values()].map(async (messages) => {
          for (const m of messages) {
            await send(m);
            s.outbox.splice(s.outbox.indexOf(m), 1);
          }
        }),
      );
    }
  }

  async function forgetOn(node: string): Promise<void> {
    try {
      await getExternalWorkflowHandle(nodeWorkflowId(cluster, node)).signal(forgetSignal, { rollout: name });
    } catch (err) {
      log.info('node workflow already gone', { node, error: String(err) });
    }
  }

  function admit(): void {
    if (s.paused || s.disabled) return;
    const queuedWithAdmission: string[] = [];
    for (const c of compartments()) {
      const batch = (s.batches[c.name] ??= newCompartmentBatch());
      const nodes = c.nodes.map((n) => ({ name: n, status: admissionStatus(n) }));
      const admitted = (n: string) => s.nodes[n]!.admittedGeneration === s.generation;
      const admitting = admitNext(options.admission, c, nodes, admitted, batch);
      for (const node of admitting) {
        s.nodes[node]!.admittedGeneration = s.generation;
        s.outbox.push({ node, kind: 'desire' });
      }
      if (admitting.length > 0 && interrupting() && withAdmission()) {
        const inFlight = nodes.filter((n) => n.status === 'in_progress').length + admitting.length;
        queuedWithAdmission.push(...requestWithAdmission(s.permits, admitting, inFlight, c.ceiling));
      }
    }
    const byNode = new Map(compartments().flatMap((c) => c.nodes.map((n) => [n, c] as const)));
    // Patched: histories before it never granted a node that held a permit already.
    for (const g of grantPermits(s.permits, (n) => byNode.get(n), isPatched(PATCHES.leaseChecks))) {
      // A grant to a node whose desire is not sent yet rides on it: the node holds its permit as it learns its work,
      // before its first decision would ask for one.
      const desire = s.outbox.find((m) => m.node === g.node && m.kind === 'desire' && !m.permit);
      if (desire?.kind === 'desire' && withAdmission()) desire.permit = g.permit;
      else s.outbox.push({ node: g.node, kind: 'grant', permit: g.permit });
    }
    withdrawUnasked(s.permits, queuedWithAdmission);
  }

  /**
   * A complete node whose permit is still booked is in flight for admission: its report, sent by the write's
   * activity, overtakes the release its workflow signals, and a batch admitted meanwhile would find its permit taken.
   */
  function admissionStatus(node: string): Status {
    const status = batchStatus(s, node);
    return status === 'complete' && s.permits.holders[node] !== undefined && withAdmission() ? 'in_progress' : status;
  }

  /** Patched: histories before it granted permits on request only (interrupt-permits.ts, requestWithAdmission). */
  const withAdmission = () => isPatched(PATCHES.permitWithAdmission);
  /** Only a spec with an interrupting package: otherwise a permit with the admission would only come back unused. */
  const interrupting = () => Object.values(s.rollout.spec.packages).some((p) => p.interrupt !== undefined);

  /** §2.2.6: on reaching complete, every compartment starts again at batch 1 when resetBatchStateOnCompletion holds. */
  function resetBatchesOnCompletion(): void {
    const complete = rolloutStatusView(s, compartments()).status === 'complete';
    // Patched: histories from before it kept the batch state at completion.
    if (
      complete &&
      !s.complete &&
      s.rollout.resetBatchStateOnCompletion &&
      isPatched(PATCHES.resetBatchesOnCompletion)
    ) {
      for (const b of Object.values(s.batches)) Object.assign(b, newCompartmentBatch());
    }
    s.complete = complete;
  }

  async function removeRuntimeTaints(): Promise<void> {
    if (!s.rollout.spec.runtimeRequired) return;
    const t = options.runtimeRequiredTaint;
    for (const node of s.order) {
      const n = s.nodes[node]!;
      if (!n.runtimeTainted || batchStatus(s, node) !== 'complete') continue;
      await act.removeTaint({ node, key: t.key, effect: t.effect });
      n.runtimeTainted = false;
    }
  }

  /**
   * The search attributes (a command each time they change) and the Web UI details (no command). With `steady`, the
   * attributes change only with the status or the package list, so a pass that only folds in progress reports sends
   * no command at all (docs/operations.md, "A worker crash and status queries").
   */
  function showInUi(steady: boolean): void {
    const view = rolloutStatusView(s, compartments());
    const packages = Object.keys(s.rollout.spec.packages).sort();
    const text = steady
      ? `${view.status} ${packages.join(',')}`
      : `${view.status} ${view.completeNodes} ${view.permits.join(',')}`;
    // Not a command: the details are read by the Web UI through a query.
    const details =
      `**rollout** ${name} (generation ${s.generation}): **${view.status}**, ${view.completeNodes} nodes complete\n` +
      `- interrupt permits held by: ${view.permits.join(', ') || 'none'}\n` +
      audit() +
      Object.entries(view.compartmentStatuses)
        .map(([c, v]) => `- compartment ${c}: batch ${v.batchState.currentBatch}, ${v.inProgress} in progress`)
        .join('\n');
    setCurrentDetails(details);
    if (text === shown) return;
    shown = text;
    upsertSearchAttributes([
      { key: rolloutKey, value: [name] },
      { key: packageKey, value: packages },
      { key: stateKey, value: view.status },
    ]);
  }

  /** Who started the rollout and who changed it last, for the Web UI's details. */
  function audit(): string {
    const startedBy = workflowInfo().memo?.[STARTED_BY_MEMO];
    const c = s.lastChange;
    return (
      (typeof startedBy === 'string' ? `- started by ${startedBy}\n` : '') +
      (c ? `- last change: ${c.action} by ${c.actor}${c.reason ? ` (${c.reason})` : ''}\n` : '')
    );
  }

  /** Lists the nodes again every relistInterval, however busy the rollout is: one timer per interval. */
  async function relistClock(): Promise<void> {
    try {
      for (;;) {
        await sleep(options.relistInterval);
        relistDue = true;
        poke();
      }
    } catch (err) {
      if (!isCancellation(err)) throw err;
    }
  }

  /**
   * No report, permit request or lease answer can come in while nothing is in flight: every admitted node has settled
   * (complete or blocked), no permit is held or asked for and nothing is unsent. A continue-as-new
   * completed while a signal comes in is refused by the server, and the worker replays the whole history before it
   * tries again (an eviction): under a steady stream of reports, again and again (issue 15).
   */
  function quiet(): boolean {
    const settled = (n: string) => ['complete', 'blocked', 'waiting'].includes(batchStatus(s, n));
    return (
      s.outbox.length === 0 &&
      Object.keys(s.permits.holders).length === 0 &&
      s.permits.queue.length === 0 &&
      admittedNodes().every(settled)
    );
  }

  /**
   * While only blocked nodes are left: the current wait (doubled after each relist it brings), when it ends (a wake
   * meanwhile does not push it back), and the nodes it waits on (one more starts the waits again from the first).
   */
  let blockedRecheck: { waitMs: number; dueAt: number | undefined; nodes: Set<string> } | undefined;
  /** Milliseconds until a relist of the blocked nodes left, or undefined when the relist clock will do. */
  function blockedRecheckDue(): number | undefined {
    const left = s.order.filter((n) => {
      const r = s.nodes[n]!.reported;
      return s.nodes[n]!.blocked && !(r?.generation === s.generation && r.status === 'complete');
    });
    const waitingOnBlocked = !s.paused && !s.disabled && left.length > 0 && quiet();
    // Patched: histories before it waited for the clock's relist. Asked only here, so only such a run has its marker.
    if (!waitingOnBlocked || !isPatched(PATCHES.relistSoonWhenBlocked)) {
      blockedRecheck = undefined;
      return undefined;
    }
    if (!blockedRecheck || left.some((n) => !blockedRecheck!.nodes.has(n))) {
      // At least a second: a zero wait would relist on every pass.
      blockedRecheck = {
        waitMs: Math.max(1000, msToNumber(options.blockedRecheck)),
        dueAt: undefined,
        nodes: new Set(),
      };
    }
    blockedRecheck.nodes = new Set(left);
    if (blockedRecheck.waitMs >= msToNumber(options.relistInterval)) return undefined;
    blockedRecheck.dueAt ??= Date.now() + blockedRecheck.waitMs;
    return Math.max(0, blockedRecheck.dueAt - Date.now());
  }
  /** The relist the blocked nodes waited for is due: the next wait is twice as long. */
  function blockedRecheckDone(): void {
    if (!blockedRecheck) return;
    blockedRecheck.waitMs *= 2;
    blockedRecheck.dueAt = undefined;
  }

  /** Continue-as-new on the server's suggestion, at a quiet point; past historyEventLimit the pass's end does it. */
  function quietContinueDue(): boolean {
    const info = workflowInfo();
    if (!info.continueAsNewSuggested || info.historyLength > options.historyEventLimit) return false;
    return isPatched(PATCHES.rolloutContinueWhenQuiet) && quiet();
  }

  // Whoever can start workflows can start this one (docs/operations.md, "Trust boundary"): the spec is checked, not
  // trusted, and the image policy is the worker's, never the starter's (options and carried state are trusted: the
  // namespace is root-equivalent). A spec the schema or the policy refuses fails
  // the rollout here, before it lists a node. Patched: histories before it trusted their input.
  // A continued run keeps the spec it accepted: a policy tightened since applies to new starts and updates, and never
  // fails a running rollout with its nodes admitted.
  if (input.carried === undefined && isPatched(PATCHES.imagePolicy)) {
    refuseSpec(input.spec, undefined);
    refuseSpec(s.rollout, await act.imagePolicy());
  }
  // Node timeouts and the drain policy are the worker's settings unless the starter gave them: read once, at the
  // first run (after the handlers are set, so status queries answer meanwhile), so history holds what this rollout
  // uses, and continue-as-new carries them in its options.
  if (input.options?.node === undefined && input.carried === undefined && isPatched(PATCHES.rolloutNodeTimeouts)) {
    const { runtimeRequiredTaint, keyPrefix, ...timeouts } = await act.nodeTimeouts();
    // What the starter gave wins over the worker's settings, as for the node settings.
    options = {
      ...options,
      node: { ...options.node, ...timeouts },
      ...(runtimeRequiredTaint && input.options?.runtimeRequiredTaint === undefined && { runtimeRequiredTaint }),
      ...(keyPrefix !== undefined && input.options?.keyPrefix === undefined && { keyPrefix }),
    };
  }
  // Passes send commands only for work (sends, activities, a changed status): no condition timer per pass, whose
  // start and cancel made up a quarter of the history, and which a pass that only folded in progress reports sent
  // anyway. Patched: histories before it started a relist timer on every pass and upserted on every count change.
  const steady = isPatched(PATCHES.rolloutSteadyCommands);
  if (steady) void relistClock();
  try {
    for (;;) {
      // A signal handled while a pass awaits (an activity, a send) starts the next pass at once; cleared only at the
      // end, such a wake-up was lost until the relist timer and a finished batch did not advance. Patched: histories
      // before it cleared it there.
      const wakeKept = isPatched(PATCHES.rolloutWakeKept);
      if (wakeKept) wake = false;
      // Before admission, which would put the next batch in flight: the quiet point between two batches. A relist
      // due goes first (the continued run does not list at its start).
      if (!relistDue && quietContinueDue()) {
        // A handler's bookkeeping ends after the main loop wakes; an update may still await its policy read, and the
        // spec it applies asks for a relist, which the continued run would not make until its clock.
        await condition(allHandlersFinished);
        if (!relistDue && quiet())
          await continueAsNew<typeof rolloutWorkflow>({ ...input, options, spec: s.rollout, carried: toCarried(s) });
      }
      if (relistDue) {
        // Cleared before the listing: a relist asked for while it runs (a spec update, the clock) is not lost.
        if (steady) relistDue = false;
        await relist();
        if (!steady) relistDue = false;
        // Patched: histories before it kept their books without asking the nodes.
        if (isPatched(PATCHES.leaseChecks)) checkLeases();
      }
      admit();
      resetBatchesOnCompletion();
      await sendOutbox();
      await removeRuntimeTaints();
      showInUi(steady);
      const info = workflowInfo();
      const pastLimit = info.historyLength > options.historyEventLimit;
      if (pastLimit || (info.continueAsNewSuggested && !isPatched(PATCHES.rolloutContinueWhenQuiet))) {
        await condition(allHandlersFinished);
        if (s.outbox.length === 0)
          await continueAsNew<typeof rolloutWorkflow>({ ...input, options, spec: s.rollout, carried: toCarried(s) });
      }
      // No condition timer when already woken: one started and cancelled in the same task is never sent.
      if (wakeKept && wake) continue;
      if (steady) {
        // Blocked nodes left: Skyhook's reconcile sees a Node's taint go when it goes; a rollout that only waited
        // for its relist clock would leave such a node for up to relistInterval (issue 15, N = 1,000).
        const recheck = blockedRecheckDue();
        if (recheck === undefined) await condition(() => wake);
        else if (!(await condition(() => wake, recheck))) {
          relistDue = true;
          blockedRecheckDone();
        }
        continue;
      }
      if (!wakeKept) wake = false;
      if (!(await condition(() => wake, options.relistInterval))) relistDue = true;
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Deletion: every node this rollout reached forgets it, releasing the permit and the cordon it holds for it.
    await CancellationScope.nonCancellable(async () => {
      for (const node of admittedNodes()) await forgetOn(node);
    });
    throw err;
  }
}
