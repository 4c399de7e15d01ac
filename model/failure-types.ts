// The `type` of every ApplicationFailure Keelson raises, named once for the side that throws and the side that
// catches (workflows, the client's error mapping, metrics). Temporal matches these strings, so they never change.

export const FAILURE_TYPES = {
  /** A spec that does not validate, or names another rollout (start, update). */
  invalidSpec: 'InvalidSpec',
  /** A node, rollout or package that the workflow does not hold. */
  notFound: 'NotFound',
  /** Another writer changed Keelson's node state since it was read: never merged. */
  foreignNodeStateWrite: 'ForeignNodeStateWrite',
  /** The worker lacks what an activity needs (a caller's or deployer's bug): retrying cannot help. */
  misconfigured: 'KeelsonMisconfigured',
  invalidActivityInput: 'InvalidActivityInput',
  /** RBAC refuses a verb on a resource (403). */
  kubeForbidden: 'KubeForbidden',
  /** The API server refuses an object as invalid (422). */
  kubeInvalid: 'KubeInvalid',
  rebootTimeout: 'RebootTimeout',
  /** Pods matching podNonInterruptLabels outlasted their wait before an interrupt. */
  protectedPodsTimeout: 'ProtectedPodsTimeout',
  drainTimeout: 'DrainTimeout',
  /** An interrupt's node is no longer cordoned by its rollout (uncordoned by hand, or by a crashed worker's lost task). */
  notCordoned: 'NotCordoned',
  /** Pods the rollout's drain options do not let go (bare pods, emptyDir data), as kubectl drain refuses them. */
  drainBlocked: 'DrainBlocked',
  /** An activity attempt went longer than its heartbeat timeout without a beat: it may have been timed out. */
  heartbeatOverdue: 'HeartbeatOverdue',
} as const;
