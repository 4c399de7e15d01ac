import type { V1Pod } from '@kubernetes/client-node';
import type { LabelSelector } from '../model';
import { isEmptySelector, labelSelectorString } from '../model/selector-string';
import { cancelled, heartbeat } from './activity-context';
import type { Clients } from './clients';
import type { ActivitySettings } from './settings';
import { ChangeSignal, WatchCache } from './watch-cache';

// podNonInterruptLabels (§3.5): after cordoning, the interrupt waits while a matching pod (any namespace) is
// Running or Pending on the node. Bounded, unlike Skyhook: false when the timeout passes first.

export async function waitForProtectedPods(
  clients: Clients,
  settings: ActivitySettings,
  input: { node: string; selector: LabelSelector; timeoutSeconds: number },
): Promise<boolean> {
  if (isEmptySelector(input.selector)) return true; // an empty selector disables the wait
  const signal = new ChangeSignal();
  const pods = new WatchCache<V1Pod>({
    kc: clients.kc,
    path: '/api/v1/pods',
    list: (q) => clients.core.listPodForAllNamespaces(q),
    fieldSelector: `spec.nodeName=${input.node}`,
    labelSelector: labelSelectorString(input.selector),
    onChange: signal.notify,
  });
  const deadline = Date.now() + input.timeoutSeconds * 1000;
  await pods.start();
  try {
    for (;;) {
      const protectedPods = pods
        .items()
        .filter((p) => p.status?.phase === 'Running' || p.status?.phase === 'Pending' || !p.status?.phase);
      if (protectedPods.length === 0) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      heartbeat({
        node: input.node,
        status: `waiting for protected pods: ${protectedPods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(' ')}`,
      });
      await Promise.race([signal.wait(Math.min(left, settings.pollSeconds * 1000)), cancelled()]);
    }
  } finally {
    pods.stop();
  }
}
