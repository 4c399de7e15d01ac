import type { V1Pod } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { heartbeat, pause } from './activity-context';
import type { Clients } from './clients';
import { classifyKubeError, kube, kubeCode } from './kube-errors';
import type { ActivitySettings } from './settings';
import { isPackageWorkload } from './workloads';
import { FAILURE_TYPES } from '../model/failure-types';
import { classifyDrainPod, drainBlockedMessage, type DrainRules, type DrainVerdict } from '../model/drain';

// Drain through the Eviction API (§3.5) by kubectl drain's default rules (model/drain.ts): PodDisruptionBudgets are
// respected (a 429 is retried with backoff until the drain timeout), DaemonSet pods, mirror pods and package pods
// are skipped, bare pods and pods with emptyDir data block the drain unless the rollout's drain options allow them,
// and the drain waits until the evicted pods are gone (Skyhook returned before: §8). When time runs out the policy
// decides: keep waiting, fail, or force (delete the remaining pods, bypassing their budgets).

export type DrainPolicy = 'wait' | 'fail' | 'force';

/**
 * A drain scheduled before rollouts had drain options (its workflow passes none) keeps the rules it started under:
 * every pod but the skipped ones is evicted. New drains always pass the rollout's rules.
 */
const RULES_BEFORE_OPTIONS: DrainRules = { force: true, deleteEmptyDirData: true };

const podName = (p: V1Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;

export function drainTimeout(node: string, blocking: string[], seconds: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE_TYPES.drainTimeout,
    nonRetryable: true,
    message: `drain of node ${node} timed out after ${seconds}s; still on the node: ${blocking.join(', ')}`,
    details: [{ node, blocking }],
  });
}

export function drainBlocked(node: string, blocked: { pod: string; why: string; allowedBy: string }[]) {
  return ApplicationFailure.create({
    type: FAILURE_TYPES.drainBlocked,
    nonRetryable: true,
    message: drainBlockedMessage(node, blocked),
    details: [{ node, blocked }],
  });
}

const terminal = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/**
 * The node's pods as a drain judges them: those the rules refuse to let go (as kubectl drain, a pod the options do not
 * allow fails the drain before anything is evicted; one already being deleted goes anyway), and those still to go
 * (to evict, or evicted or finished but not deleted yet).
 */
async function podsToDrain(clients: Clients, settings: ActivitySettings, node: string, rules: DrainRules) {
  const pods = await kube('list', `pods on node ${node}`, () =>
    clients.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }),
  );
  const judged = pods.items
    .filter((p) => !isPackageWorkload(p, settings.legacyPrefixes))
    .map((pod): [V1Pod, DrainVerdict] => [pod, classifyDrainPod(pod, rules)]);
  const refused = judged.flatMap(([pod, v]) =>
    v.action === 'block' && !pod.metadata?.deletionTimestamp
      ? [{ pod: podName(pod), why: v.why, allowedBy: v.allowedBy }]
      : [],
  );
  const remaining = judged
    .filter(([pod, v]) => v.action !== 'skip' || (v.why === 'finished' && pod.metadata?.deletionTimestamp))
    .map(([pod]) => pod);
  return { refused, remaining };
}

/**
 * Whether a drain by these rules would have nothing to do: no pod to evict, none on its way out, none refused. Asked
 * right after the cordon (no new pod lands meanwhile but DaemonSet pods, which a drain skips), it spares the drain's
 * own activity; any pod at all leaves the drain to that activity, with its waits, timeout and policy.
 */
export async function nothingToDrain(
  clients: Clients,
  settings: ActivitySettings,
  node: string,
  rules: DrainRules,
): Promise<boolean> {
  const { refused, remaining } = await podsToDrain(clients, settings, node, rules);
  return refused.length === 0 && remaining.length === 0;
}

export async function drain(
  clients: Clients,
  settings: ActivitySettings,
  input: { node: string; timeoutSeconds: number; onTimeout: DrainPolicy; rules?: DrainRules },
): Promise<void> {
  const { node } = input;
  const rules = input.rules ?? RULES_BEFORE_OPTIONS;
  const deadline = Date.now() + input.timeoutSeconds * 1000;
  const retryAt = new Map<string, { at: number; delayMs: number }>();
  const forced = new Set<string>();
  for (;;) {
    const { refused, remaining } = await podsToDrain(clients, settings, node, rules);
    if (refused.length > 0) throw drainBlocked(node, refused);
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
            ...(rules.gracePeriodSeconds !== undefined && {
              deleteOptions: { gracePeriodSeconds: rules.gracePeriodSeconds },
            }),
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
