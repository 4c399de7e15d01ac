import { RUNTIME_REQUIRED_TAINT, type Package } from '../../model';
import { parseTaint } from '../../model/taints';
import { OPEN_IMAGE_POLICY } from '../../model/image-policy';
import { createActivities, workloadInformer } from '../../activities';
import { makeClients } from '../../activities/clients';
import type { ActivitySettings } from '../../activities/settings';
import type { RunStageInput } from '../../activities/contract';
import { kubeClients } from '../../harness/kube';

/** A rollout name unique to this run, so Jobs left by earlier runs (other namespaces) are not adopted. */
export const ROLLOUT = `itest-${Date.now().toString(36)}`;

// The real activities against the local stack, with settings sized for tests (short grace, 1s polls).

export function testSettings(namespace: string, overrides: Partial<ActivitySettings> = {}): ActivitySettings {
  return {
    cluster: 'itest',
    taskQueue: 'keelson-itest',
    namespace,
    agentImage: 'registry.example/skyhook/agent:6.4.1',
    legacyPrefixes: ['skyhook.nvidia.com/', 'nodewright.nvidia.com/'],
    adoption: true,
    imagePullGraceSeconds: 5,
    podCreateGraceSeconds: 3,
    logTailBytes: 2048,
    backoffLimit: 1,
    jobRetentionSeconds: 600,
    copyDirRoot: '/var/lib/skyhook',
    agentLogRoot: '/var/log/skyhook',
    runtimeRequiredTaint: parseTaint(RUNTIME_REQUIRED_TAINT),
    pollSeconds: 1,
    imagePolicy: OPEN_IMAGE_POLICY,
    nodeTimeouts: {
      protectedPodsTimeoutSeconds: 60,
      drainTimeoutSeconds: 60,
      drainOnTimeout: 'fail',
      rebootTimeoutSeconds: 60,
    },
    ...overrides,
  };
}

export function testActivities(namespace: string, overrides: Partial<ActivitySettings> = {}) {
  const { kc, core, batch } = kubeClients();
  const settings = testSettings(namespace, overrides);
  return {
    kc,
    core,
    batch,
    clients: makeClients(kc),
    activities: createActivities({ kubeConfig: kc, settings, workloads: workloadInformer(kc, settings) }),
  };
}

/**
 * The activities of a worker whose watches listed once, now, and then stopped: their caches keep showing the cluster
 * as it was, as a watch that lags behind the API server does.
 */
export async function laggingActivities(namespace: string) {
  const { kc } = kubeClients();
  const settings = testSettings(namespace);
  const workloads = workloadInformer(kc, settings);
  await workloads.ready();
  workloads.stop();
  return createActivities({ kubeConfig: kc, settings, workloads });
}

export function pkg(name: string, env: Record<string, string> = {}, extra: Partial<Package> = {}): Package {
  return {
    name,
    version: '1.0.0',
    image: `registry.example/${name}`,
    env: Object.entries(env).map(([k, value]) => ({ name: k, value })),
    ...extra,
  } as Package;
}

export function stageInput(node: string, p: Package, overrides: Partial<RunStageInput> = {}): RunStageInput {
  return {
    rollout: ROLLOUT,
    kind: 'NodeWright',
    generation: 1,
    node,
    package: p,
    stage: 'apply',
    timeoutSeconds: 120,
    additionalTolerations: [],
    ...overrides,
  };
}
