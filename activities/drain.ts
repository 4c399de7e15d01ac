import type { V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { heartbeat, pause } from './activity-context';
import type { Clients } from './clients';
import { classifyKubeError, kube, kubeCode } from './kube-errors';
import type { ActivitySettings } from './settings';
import { isPackageWorkload } from './workloads';
import { FAILURE_TYPES } from '../model/failure-types';

// Drain through the Eviction API (§3.5): PodDisruptionBudgets are respected (a 429 is retried with backoff until
// the drain timeout), DaemonSet pods, mirror pods and package pods are skipped, and the drain waits until the
// evicted pods are gone (Skyhook returned before: §8). When time runs out the policy decides: keep
// waiting, fail, or force (delete the remaining pods, bypassing their budgets).

export type DrainPolicy = 'wait' | 'fail' | 'force';

export function isDrainExempt(pod: V1Pod, prefixes: readonly string[]): boolean {
  if ((pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet')) return true;
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return true;
  return isPackageWorkload(pod, prefixes);
}

const podName = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;

export function drainTimeout(node: string, blocking: string[], seconds: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE_TYPES.drainTimeout,
    nonRetryable: true,
    message: `drain of node ${node} timed out after ${seconds}s; still on the node: ${blocking.join(', ')}`,
    details: [{ node, blocking }],
  });
}

export async function drain(
  clients: Clients,
  settings: ActivitySettings,
  input: { node: string; timeoutSeconds: number; onTimeout: DrainPolicy },
): Promise<void> {
  const { node } = input;
  const deadline = Date.now() + input.timeoutSeconds * 1000;
  const retryAt = new Map<string, { at: number; delayMs: number }>();
  const forced = new Set<string>();
  for (;;) {
    const pods = await kube('list', `pods on node ${node}`, () =>
      clients.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
    );
    // Still to go: running pods, and pods on their way out (evicted or finished, but not deleted yet).
    const terminal = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
    const remaining = pods.items.filter(
      (p) => !isDrainExempt(p, settings.legacyPrefixes) && (!terminal(p) || p.metadata?.deletionTimestamp),
    );
    if (remaining.length === 0) return;
    const now = Date.now();
    const late = now > deadline;
    if (late && input.onTimeout === 'fail') throw drainTimeout(node, remaining.map(podName), input.timeoutSeconds);
    const blocked: string[] = [];
    for (const pod of remaining) {
      const uid = pod.metadata!.uid!;
      if (pod.metadata?.deletionTimestamp && !late) continue; // evicted, terminating
      if (late && input.onTimeout === 'force') {
        if (forced.has(uid)) continue;
        forced.add(uid);
        await kube('delete', `pod ${podName(pod)}`, () =>
          clients.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace! }),
        ).catch((err: unknown) => {
          if (kubeCode(err) !== 404) throw err;
        });
        continue;
      }
      if (pod.metadata?.deletionTimestamp || terminal(pod)) continue;
      const retry = retryAt.get(uid);
      if (retry && retry.at > now) {
        blocked.push(podName(pod));
        continue;
      }
      try {
        await clients.core.createNamespacedPodEviction({
          name: pod.metadata!.name!,
          namespace: pod.metadata!.namespace!,
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace! },
          },
        });
        retryAt.delete(uid);
      } catch (err) {
        const code = kubeCode(err);
        if (code === 404) continue;
        if (code !== 429) throw classifyKubeError(err, 'create', `eviction of pod ${podName(pod)}`);
        // A PodDisruptionBudget allows no disruption now: back off, 1s doubling to 30s.
        const delayMs = Math.min(30_000, (retry?.delayMs ?? 500) * 2);
        retryAt.set(uid, { at: now + delayMs, delayMs });
        blocked.push(podName(pod));
      }
    }
    heartbeat({
      node,
      status: `draining: ${remaining.length} pod(s) left${blocked.length ? `; blocked by a disruption budget: ${blocked.join(' ')}` : ''}${late ? `; past the ${input.timeoutSeconds}s timeout (${input.onTimeout})` : ''}`,
    });
    await pause(settings.pollSeconds * 1000);
  }
}
