import type { V1Pod } from '@kubernetes/client-node';
import { buildInterruptJob } from '../model';
import type { RunInterruptInput, StageResult } from './contract';
import { cancelled, heartbeat } from './activity-context';
import { upsertStageConfigMaps } from './configmaps';
import { rawPodVerdict } from './job-outcome';
import type { WaitContext } from './job-watch';
import { jobContext, runJob } from './stage-jobs';
import { ChangeSignal, WatchCache } from './watch-cache';
import { isInterruptWorkload, isPackageWorkload, isPodTerminal, ownedByJob } from './workloads';

// The node's one merged interrupt (§3.5): it starts only when no package workload of any family (Skyhook,
// NodeWright, Keelson; Jobs and raw Pods) runs on the node, so a reboot never lands under running package work (G2).

/** The package pods still running on the node: not finished, not an interrupt, not a raw pod whose stage is done. */
export function blockingPackagePods(pods: readonly V1Pod[], prefixes: readonly string[]): V1Pod[] {
  return pods.filter((p) => {
    if (!isPackageWorkload(p, prefixes) || isInterruptWorkload(p, prefixes) || isPodTerminal(p)) return false;
    // A Skyhook raw pod keeps its pause container running after the stage: its init containers say it is done.
    if (!ownedByJob(p) && rawPodVerdict(p, Date.now(), Number.POSITIVE_INFINITY).done) return false;
    return true;
  });
}

export async function waitForNoPackageWorkload(w: WaitContext, node: string, jobName: string): Promise<void> {
  const signal = new ChangeSignal();
  const pods = new WatchCache<V1Pod>({
    kc: w.clients.kc,
    path: '/api/v1/pods',
    list: (q) => w.clients.core.listPodForAllNamespaces(q),
    fieldSelector: `spec.nodeName=${node}`,
    onChange: signal.notify,
  });
  await pods.start();
  try {
    for (;;) {
      const blocking = blockingPackagePods(pods.items(), w.settings.legacyPrefixes);
      if (blocking.length === 0) return;
      const names = blocking.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(' ');
      heartbeat({ jobName, status: `waiting for ${blocking.length} package pod(s) on ${node}: ${names}` });
      await Promise.race([signal.wait(w.settings.pollSeconds * 1000), cancelled()]);
    }
  } finally {
    pods.stop();
  }
}

export async function runInterrupt(w: WaitContext, input: RunInterruptInput): Promise<StageResult> {
  const ctx = jobContext(w, input);
  const manifest = buildInterruptJob(ctx, input.owner, input.interrupt);
  const name = manifest.metadata.name;
  await w.workloads.ready();
  // Once the interrupt Job exists the gate has been passed: waiting again would wait on nothing new.
  if (!w.workloads.keelsonJobs.get(ctx.namespace, name)) await waitForNoPackageWorkload(w, input.node, name);
  const identity = { node: input.node, package: input.owner.name, version: input.owner.version, stage: 'interrupt' };
  return runJob(w, manifest, identity, () => upsertStageConfigMaps(w.clients, ctx, input.owner, w.settings.agentImage));
}
