import type { V1Job } from '@kubernetes/client-node';
import {
  checkKubeFloor,
  KUBE_FEATURES,
  parseKubeVersion,
  type KubeFeature,
  type KubeVersion,
} from '../model/kube-version';
import type { Clients } from './clients';
import { kube } from './kube-errors';

// G8: the worker reads the server version at start and refuses a server below the floor. A dry-run Job then shows
// that the server keeps the Job fields Keelson relies on: an older server, or one with a feature gate turned off,
// drops unknown fields silently (§8) instead of rejecting them.

export async function serverVersion(clients: Clients): Promise<{ gitVersion: string; version: KubeVersion }> {
  const info = await kube('get', 'server version', () => clients.version.getCode());
  const version = parseKubeVersion(info);
  if (!version) throw new Error(`cannot parse the Kubernetes server version ${JSON.stringify(info)}`);
  return { gitVersion: info.gitVersion, version };
}

/** The fields a dry-run Job must keep, by feature name. */
function droppedFields(job: V1Job): string[] {
  const dropped: string[] = [];
  if (job.spec?.suspend !== true) dropped.push('Job spec.suspend');
  if (job.spec?.podReplacementPolicy !== 'Failed') dropped.push('Job spec.podReplacementPolicy');
  if (!job.spec?.podFailurePolicy?.rules?.length) dropped.push('Job spec.podFailurePolicy');
  return dropped;
}

export type KubeFloorResult = { ok: true; gitVersion: string } | { ok: false; gitVersion: string; message: string };

/** The start-up check: version floor first, then (when the floor holds) a dry-run of the Job fields in `namespace`. */
export async function checkKubernetes(
  clients: Clients,
  namespace: string,
  features: readonly KubeFeature[] = KUBE_FEATURES,
): Promise<KubeFloorResult> {
  const { gitVersion, version } = await serverVersion(clients);
  const floor = checkKubeFloor(version, features);
  if (!floor.ok) return { ok: false, gitVersion, message: floor.message };
  const probe: V1Job = {
    metadata: { generateName: 'keelson-feature-probe-', namespace },
    spec: {
      suspend: true,
      backoffLimit: 0,
      podReplacementPolicy: 'Failed',
      podFailurePolicy: {
        rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
      },
      template: {
        spec: { restartPolicy: 'Never', containers: [{ name: 'probe', image: 'registry.k8s.io/pause:3.10' }] },
      },
    },
  };
  const echoed = await kube('create (dry run)', `job in namespace ${namespace}`, () =>
    clients.batch.createNamespacedJob({ namespace, body: probe, dryRun: 'All' }),
  );
  const dropped = droppedFields(echoed);
  if (dropped.length === 0) return { ok: true, gitVersion };
  return {
    ok: false,
    gitVersion,
    message: `Kubernetes ${gitVersion} dropped ${dropped.join(', ')} from a dry-run Job: the feature gate is off or the server is too old; Keelson needs them enabled (Kubernetes 1.31 or later with default feature gates)`,
  };
}
