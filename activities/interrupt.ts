import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { buildInterruptJob } from '../model';
import type { RunInterruptInput, StageResult } from './contract';
import { cancelled, heartbeat, lastHeartbeat } from './activity-context';
import { upsertStageConfigMaps } from './configmaps';
import { holdsCordon, notCordoned } from './cordon';
import { rawPodVerdict } from './job-outcome';
import type { WaitContext } from './job-watch';
import { waitForReboot } from './reboot';
import { jobContext, runJob } from './stage-jobs';
import { ChangeSignal, WatchCache } from './watch-cache';
import { FAILURE_TYPES } from '../model/failure-types';
import {
  isInterruptWorkload,
  isJobFinished,
  isPackageWorkload,
  isPodTerminal,
  isStaleRun,
  jobNode,
  ownedByJob,
} from './workloads';

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

/**
 * Keelson's unfinished stage Jobs on the node, in any namespace: a Job whose pod does not exist yet (just created,
 * or between attempts) is package work the pod watch cannot see.
 */
export function blockingStageJobs(jobs: readonly V1Job[], node: string, prefixes: readonly string[]): V1Job[] {
  return jobs.filter((j) => jobNode(j, prefixes) === node && !isInterruptWorkload(j, prefixes) && !isJobFinished(j));
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
  // The blocking Jobs' changes wake the wait too (new Jobs need not: they can only add to the wait).
  const subscribed = new Map<string, () => void>();
  await w.workloads.ready();
  await pods.start();
  try {
    for (;;) {
      const prefixes = w.settings.legacyPrefixes;
      const blockingPods = blockingPackagePods(pods.items(), prefixes);
      const blockingJobs = blockingStageJobs(w.workloads.keelsonJobs.items(), node, prefixes);
      if (blockingPods.length === 0 && blockingJobs.length === 0) return;
      for (const uid of blockingJobs.map((j) => j.metadata?.uid ?? '')) {
        if (!subscribed.has(uid)) subscribed.set(uid, w.workloads.subscribeJob(uid, signal.notify));
      }
      const names = (objs: (V1Pod | V1Job)[]) => objs.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);
      const waiting = [
        ...(blockingPods.length > 0 ? [`${blockingPods.length} package pod(s)`] : []),
        ...(blockingJobs.length > 0 ? [`${blockingJobs.length} unfinished stage job(s)`] : []),
      ];
      const status = `waiting for ${waiting.join(' and ')} on ${node}: ${[...names(blockingPods), ...names(blockingJobs)].join(' ')}`;
      heartbeat({ jobName, status });
      await Promise.race([signal.wait(w.settings.pollSeconds * 1000), cancelled()]);
    }
  } finally {
    pods.stop();
    for (const unsubscribe of subscribed.values()) unsubscribe();
  }
}

/** The heartbeat of a reboot's wait inside runInterrupt: the interrupt Job it follows has completed. */
interface RebootWaitBeat {
  rebootOf: string;
}

export async function runInterrupt(w: WaitContext, input: RunInterruptInput): Promise<StageResult> {
  const ctx = jobContext(w, input);
  const manifest = buildInterruptJob(ctx, input.owner, input.interrupt);
  const name = manifest.metadata.name;
  await w.workloads.ready();
  // Once this run's interrupt Job exists the gate has been passed: waiting again would wait on nothing new. Another
  // run's (a retained failed reboot) passed no gate for this one.
  const existing = w.workloads.keelsonJobs.get(ctx.namespace, name);
  const fresh = !existing || isStaleRun(existing, input.runId);
  // An earlier attempt saw this run's Job complete and was waiting for the reboot (its heartbeat says so), and the
  // Job has gone since (its TTL ran out during a long reboot): creating it again would reboot the node twice.
  const rebootSeen = (lastHeartbeat() as Partial<RebootWaitBeat> | undefined)?.rebootOf === name;
  if (fresh && input.reboot && rebootSeen) {
    await waitForReboot(w.clients, w.settings, { node: input.node, ...input.reboot }, { rebootOf: name });
    return { outcome: 'complete', reason: 'Complete', jobName: name, adopted: false, failedPods: 0, logTail: '' };
  }
  if (fresh) await waitForNoPackageWorkload(w, input.node, name);
  // An interrupt never lands on a node that workloads may be scheduled to: one that lost its cordon (uncordoned by hand,
  // or by an uncordon a crashed worker ran in a workflow task that was lost) is cordoned and drained again first.
  if (fresh && input.cordoned && !(await holdsCordon(w.clients, w.settings.keyPrefix, input))) {
    throw notCordoned(input, 'its interrupt');
  }
  const identity = {
    rollout: input.rollout,
    node: input.node,
    package: input.owner.name,
    version: input.owner.version,
    stage: 'interrupt',
    runId: input.runId,
  };
  const result = await runJob(w, manifest, identity, () => upsertStageConfigMaps(w.clients, ctx, input.owner));
  if (result.outcome !== 'complete' || !input.reboot) return result;
  try {
    await waitForReboot(w.clients, w.settings, { node: input.node, ...input.reboot }, { rebootOf: name });
    return result;
  } catch (err) {
    // G13: a node that does not come back is an erroring interrupt, recorded like a failed Job.
    if (!(err instanceof ApplicationFailure) || err.type !== FAILURE_TYPES.rebootTimeout) throw err;
    return {
      ...result,
      outcome: 'failed',
      reason: FAILURE_TYPES.rebootTimeout,
      logTail: `${err.type}: ${err.message}`,
    };
  }
}
