import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { KEELSON_PREFIX, safeLabelValue } from '../model';
import { labelValueProblem } from '../model/label-selector';
import type { Clients } from './clients';
import { kube } from './kube-errors';
import type { ActivitySettings } from './settings';
import { isJobFinished, jobNode, ownedByJob, workloadIdentity } from './workloads';

// Legacy adoption (G2): before Keelson creates a stage Job, it looks for one that a Skyhook or NodeWright operator,
// or an earlier Keelson run (another namespace, another worker), already started for the same package stage on the
// node, and waits on that instead. Adopted: unfinished Jobs and Jobs that completed; raw Pods that still exist.
// A legacy Job that failed is not adopted, so a rerun is possible.

export interface StageIdentity {
  node: string;
  package: string;
  version: string;
  stage: string;
}

export type Adoptable = { kind: 'job' | 'pod'; namespace: string; name: string; family: string };

function matches(obj: V1Job | V1Pod, id: StageIdentity, prefixes: readonly string[]): boolean {
  const who = workloadIdentity(obj, prefixes);
  return who !== undefined && who.name === id.package && who.version === id.version && who.stage === id.stage;
}

export async function findAdoptable(
  clients: Clients,
  settings: ActivitySettings,
  id: StageIdentity,
): Promise<Adoptable | undefined> {
  const prefixes = settings.legacyPrefixes;
  const keelson = [
    `${KEELSON_PREFIX}package=${safeLabelValue(id.package)}`,
    `${KEELSON_PREFIX}version=${safeLabelValue(id.version)}`,
    `${KEELSON_PREFIX}stage=${id.stage}`,
    `${KEELSON_PREFIX}node=${safeLabelValue(id.node)}`,
  ].join(',');
  const operator = `${id.package}-${id.version}`;
  const selectors = [
    { family: 'keelson', selector: keelson },
    ...(labelValueProblem(operator) === undefined
      ? prefixes.map((p) => ({ family: p, selector: `${p}package=${operator}` }))
      : []),
  ];
  for (const { family, selector } of selectors) {
    const jobs = await kube('list', 'jobs (all namespaces)', () =>
      clients.batch.listJobForAllNamespaces({ labelSelector: selector }),
    );
    const job = jobs.items.find(
      (j) =>
        !j.metadata?.deletionTimestamp &&
        jobNode(j, prefixes) === id.node &&
        matches(j, id, prefixes) &&
        isJobFinished(j) !== 'Failed',
    );
    if (job) return { kind: 'job', namespace: job.metadata!.namespace!, name: job.metadata!.name!, family };
    if (family === 'keelson') continue; // Keelson never runs raw pods
    const pods = await kube('list', 'pods (all namespaces)', () =>
      clients.core.listPodForAllNamespaces({ labelSelector: selector, fieldSelector: `spec.nodeName=${id.node}` }),
    );
    const pod = pods.items.find(
      (p) =>
        !p.metadata?.deletionTimestamp && p.status?.phase !== 'Failed' && !ownedByJob(p) && matches(p, id, prefixes),
    );
    if (pod) return { kind: 'pod', namespace: pod.metadata!.namespace!, name: pod.metadata!.name!, family };
  }
  return undefined;
}
