import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { ActivitySettings } from './settings';
import type { WorkloadInformer } from './workload-informer';
import { isJobFinished, isStaleRun, jobNode, ownedByJob, workloadIdentity } from './workloads';

// Legacy adoption (G2): before Keelson creates a stage Job, it looks for one that a Skyhook or NodeWright operator,
// or another Keelson worker (another namespace) for the same rollout, already started for the same package stage on
// the node, and waits on that instead; a Keelson Job of another run of the stage is never adopted (G11). Adopted: unfinished Jobs and Jobs that completed; raw Pods that still exist. A
// legacy Job that failed is not adopted, so a rerun is possible. The lookup reads the worker's watch caches, as a
// controller does: a workload created a moment before may be missed, so the operator is stopped before Keelson
// takes over (docs/migration.md).

export interface StageIdentity {
  /** Keelson's own Jobs are adopted only from the same rollout: another rollout's Job is not this stage's work. */
  rollout: string;
  node: string;
  package: string;
  version: string;
  stage: string;
  /** This run of the stage (G11): a Keelson Job of another run is never adopted. */
  runId?: string;
}

export type Adoptable = { kind: 'job' | 'pod'; namespace: string; name: string; family: string };

function matches(obj: V1Job | V1Pod, id: StageIdentity, prefixes: readonly string[]): boolean {
  const who = workloadIdentity(obj, prefixes);
  return who !== undefined && who.name === id.package && who.version === id.version && who.stage === id.stage;
}

/**
 * Looks in the worker's watch caches (no request): Keelson's own family first, then each operator family. `judged`
 * is the Job under the stage's own name, which the caller has already read directly: the cache may still show it.
 */
export async function findAdoptable(
  workloads: WorkloadInformer,
  settings: ActivitySettings,
  id: StageIdentity,
  judged: { namespace: string; name: string },
): Promise<Adoptable | undefined> {
  await workloads.ready();
  const prefixes = settings.legacyPrefixes;
  const adoptableJob = (j: V1Job) =>
    !j.metadata?.deletionTimestamp &&
    jobNode(j, prefixes) === id.node &&
    matches(j, id, prefixes) &&
    isJobFinished(j) !== 'Failed';
  const found = (kind: Adoptable['kind'], family: string, obj: V1Job | V1Pod | undefined) =>
    obj && { kind, family, namespace: obj.metadata!.namespace!, name: obj.metadata!.name! };
  const own = workloads.keelsonJobs
    .items()
    .find(
      (j) =>
        adoptableJob(j) &&
        workloadIdentity(j, prefixes)?.rollout === id.rollout &&
        !isStaleRun(j, id.runId) &&
        !(j.metadata?.namespace === judged.namespace && j.metadata?.name === judged.name),
    );
  if (own) return found('job', 'keelson', own);
  // The operators label their workloads `<prefix>package=<name>-<version>`.
  const operator = `${id.package}-${id.version}`;
  for (const [i, prefix] of prefixes.entries()) {
    const labelled = (o: V1Job | V1Pod) => o.metadata?.labels?.[`${prefix}package`] === operator;
    const job = workloads.legacyJobs[i]!.items().find((j) => labelled(j) && adoptableJob(j));
    if (job) return found('job', prefix, job);
    const pod = workloads.legacyPods[i]!.items().find(
      (p) =>
        labelled(p) &&
        p.spec?.nodeName === id.node &&
        !p.metadata?.deletionTimestamp &&
        p.status?.phase !== 'Failed' &&
        !ownedByJob(p) &&
        matches(p, id, prefixes),
    );
    if (pod) return found('pod', prefix, pod);
  }
  return undefined;
}
