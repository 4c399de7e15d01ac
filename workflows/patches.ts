import { patched } from '@temporalio/workflow';

// Every patch the workflows branch on (docs/architecture.md, "Changing a workflow"). A patch keeps histories recorded
// before a change replaying on the old branch; the new branch runs everywhere else. Each has a replay fixture recorded
// from the new branch (test/fixtures/histories; the replay test checks that every ID here has one).
//
// Retiring a patch: once no workflow that started before the Keelson release which added it is still open (on every
// cluster that runs Keelson: `temporal workflow count --query "ExecutionStatus='Running' AND StartTime < '<release>'"`
// answers 0), replace `patched(ID)` by `deprecatePatch(ID)` and delete the old branch; one release later, delete the
// `deprecatePatch` call and the ID, and re-record the fixtures that held its marker.

// A baseline stands for every patch released before it. A run that starts after it records one marker (and one
// TemporalChangeVersion upsert) instead of one per patch, which was a fifth of a node workflow's history; a history
// recorded before it has no baseline marker and branches on each patch as it did (`isPatched`). A patch added after
// a baseline goes in PATCHES, outside BASELINED_PATCHES, and is asked on its own until the next baseline. A next
// baseline is asked before this one, or a live run would record this one's marker again.

const BASELINED_PATCHES = {
  // Node workflow
  /** A failed stage that a new spec fixes (same version, other env/image/configMap) runs again. */
  rerunFixedStages: 'rerun-fixed-stages',
  /** A finished stage's Job is deleted by the write that records its outcome (G3), not by an activity of its own. */
  deleteWithNodeStateWrite: 'delete-with-node-state-write',
  /** With Job retention 0 a failed stage's Job is deleted once its failure is recorded. */
  deleteFailedJobOnceRecorded: 'delete-failed-job-once-recorded',
  /** Consecutive node-state snapshots of one rollout are written as one. */
  coalesceNodeStateWrites: 'coalesce-node-state-writes',
  /** G11/G12: decideNode's guards, stale runs stopped on a spec change, carried runs re-adopted. */
  oneExecutorPerPackage: 'one-executor-per-package',
  /** G13: drain, protected-pod and reboot failures end as erroring packages and return the permit. */
  failuresBecomeErroring: 'failures-become-erroring',
  /** A forgotten rollout's node state is cleared, and a desire during the forget starts the rollout afresh. */
  freshAfterForget: 'fresh-after-forget',
  /** A node migrated at another version of a package upgrades (or downgrades, or uninstalls) it, as §3.7 says. */
  versionChangesOnMigration: 'version-changes-on-migration',
  /** G14: a resumed stage keeps the time it had left; its Job's deadline is re-armed with it. */
  pauseKeepsTimeLeft: 'pause-keeps-time-left',
  /** G13: a grant to a node that holds a permit of the rollout (the rollout was reset) replaces the held one. */
  regrantKeepsOnePermit: 'regrant-keeps-one-permit',
  /** Each rollout's cordon is remembered and let go on its own; a second rollout's no longer takes the first's place. */
  cordonPerRollout: 'cordon-per-rollout',
  /**
   * Node-state writes and the short Kubernetes calls (read, cordon, uncordon, clear) run as local activities, and the
   * write's activity sends the progress report: one event each instead of six, and no signal command per write.
   */
  localNodeCalls: 'local-node-calls',
  // Rollout workflow
  /** The rollout records the worker's node timeouts and drain policy once, at its start. */
  rolloutNodeTimeouts: 'rollout-node-timeouts',
  /** Desires and control signals go to all nodes at once, not one after the other. */
  sendToNodesAtOnce: 'send-to-nodes-at-once',
  /** A spec update lists the nodes again. */
  relistOnSpecUpdate: 'relist-on-spec-update',
  /** A spec update reaches every in-flight node at once and keeps the batch barrier (G14). */
  specUpdateReachesInFlight: 'spec-update-reaches-in-flight',
  /** resetBatchStateOnCompletion resets the batch state when the rollout completes. */
  resetBatchesOnCompletion: 'reset-batches-on-completion',
  /** A wake that arrives while a pass runs is kept for the next pass. */
  rolloutWakeKept: 'rollout-wake-kept',
  /** A pass sends commands only for work: one relist timer, search attributes only on change (G15). */
  rolloutSteadyCommands: 'rollout-steady-commands',
  /** G13: permits are leases; each relist checks the books with the nodes, and a holder in the queue is re-granted. */
  leaseChecks: 'lease-checks',
  /** A taint blocks a node only before its admission: a node's own reboot (not-ready taints) never blocks it. */
  taintsBlockBeforeAdmission: 'taints-block-before-admission',
  /** The worker's image policy is read at start and at every spec update; a spec outside it is refused. */
  imagePolicy: 'image-policy',
  /**
   * On the server's suggestion alone, the rollout continues as new at a quiet point (no node in flight, no permit, no
   * message unsent), where no report can come in meanwhile and refuse it; past historyEventLimit, at once as before.
   */
  rolloutContinueWhenQuiet: 'rollout-continue-when-quiet',
  /**
   * Node-state writes (with the progress report their activity sends) are regular activities again, the other short
   * calls stay local: a local write lost with its workflow task in a worker crash ran again after a later write (G1).
   */
  nodeStateWritesRemote: 'node-state-writes-remote',
} as const;

/** Every patch of BASELINED_PATCHES: a run recorded with it takes their new branches without asking each. */
const BASELINE = 'baseline-2026-12';

export const PATCHES = {
  ...BASELINED_PATCHES,
  baseline202612: BASELINE,
  // Changes made with the baseline, never released without it: the baseline's marker is theirs.
  /**
   * Interrupt permits ride on the admission (the desire) when every node in flight fits the compartment's ceiling; a
   * node asks for one only otherwise.
   */
  permitWithAdmission: BASELINE,
  /**
   * Node-state writes are local activities once more, each with an order that only grows (the node workflow's start
   * time, its count of writes) put on the Node with it: a write run again after a later one landed finds the higher
   * order there and writes nothing (G1), and the writer, after a timer, writes its snapshot again above it. Their
   * local activity is writeNodeStateOrdered: a build from before them fails to replay them.
   */
  orderedLocalWrites: BASELINE,
  /**
   * G13: a lease check carries the status the rollout holds for the node, and a node settled otherwise reports again
   * (a reset of the rollout dropped the report).
   */
  reportOnLeaseCheck: BASELINE,
  /** A reboot interrupt's activity waits for the node to come back itself: no waitForReboot activity after it. */
  rebootInInterrupt: BASELINE,
  /** A node's search attributes wait for its rollouts' first read of the Node: no "waiting" upsert at its start. */
  uiAfterInit: BASELINE,
  /** The node-state writer waits one round of the workflow's coroutines, so the node loop's next step joins a write. */
  writeAfterStep: BASELINE,
  /** The cordon's local activity tells whether a drain has anything to do: none, no drain activity. */
  drainCheckWithCordon: BASELINE,
  /** The desires a pass queues go out in one activity (ensureNodeWorkflows), not one activity per node. */
  desiresInOneActivity: BASELINE,
  /** A node at rest sends the progress report a stage's change held back (the view is not left a stage behind). */
  reportAtRest: BASELINE,
  /** The uncordon's local activity hands the interrupt permit back itself: no signal command, event or task after it. */
  releaseWithUncordon: BASELINE,
  /**
   * An interrupt's activity first checks that the node is still cordoned by its rollout; a node that lost its cordon
   * hands the permit back and asks again, to be cordoned and drained again.
   */
  interruptOnCordonedNode: BASELINE,
  /** A node workflow's local activities run one at a time, so their continuations replay in the order they ran. */
  localCallsInTurn: BASELINE,
  /**
   * G16: no stage of an interrupting package starts once the release that uncordons the node has begun, and runStage
   * creates its Job only on a node still cordoned by the rollout (a refusal hands back only the permit the run started
   * under); a release or forget uncordons only when no stopped run of the rollout's interrupting work may still have its
   * Job running and no continue-as-new is draining; a prepare marks only a granted permit prepared.
   */
  cordonGuards: BASELINE,
  // Added after the baseline: asked on their own.
  /** A settled rollout whose only nodes left are blocked lists them again soon, then less and less often. */
  relistSoonWhenBlocked: 'relist-soon-when-blocked',
  /** G14: a complete node's report of the rollout's pause or disable leaves it complete, not in flight. */
  settledUnderPause: 'settled-under-pause',
} as const;

export type PatchId = (typeof PATCHES)[keyof typeof PATCHES];

const BASELINED: ReadonlySet<string> = new Set(Object.values(BASELINED_PATCHES));

/** `patched(id)`, answered by the baseline marker for a patch it stands for (the header above). */
export function isPatched(id: PatchId): boolean {
  return (BASELINED.has(id) && patched(PATCHES.baseline202612)) || patched(id);
}
