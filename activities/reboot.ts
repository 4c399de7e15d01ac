import type { V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { cancelled, heartbeat } from './activity-context';
import type { Clients } from './clients';
import { isReady } from './nodes';
import type { ActivitySettings } from './settings';
import { ChangeSignal, WatchCache } from './watch-cache';
import { FAILURE_TYPES } from '../model/failure-types';

// A reboot is seen as a new status.nodeInfo.bootID, then Ready again (§3.8: Skyhook's nodeBootIds).

export async function waitForReboot(
  clients: Clients,
  settings: ActivitySettings,
  input: { node: string; previousBootId: string; timeoutSeconds: number },
  /** Heartbeat details of its caller, sent with each of its own. */
  beat: object = {},
): Promise<void> {
  const signal = new ChangeSignal();
  const nodes = new WatchCache<V1Node>({
    kc: clients.kc,
    path: '/api/v1/nodes',
    list: (q) => clients.core.listNode(q),
    fieldSelector: `metadata.name=${input.node}`,
    onChange: signal.notify,
  });
  const deadline = Date.now() + input.timeoutSeconds * 1000;
  await nodes.start();
  try {
    for (;;) {
      const node = nodes.items()[0];
      const bootId = node?.status?.nodeInfo?.bootID ?? '';
      const rebooted = bootId !== '' && bootId !== input.previousBootId;
      const ready = node !== undefined && isReady(node);
      if (rebooted && ready) return;
      const status = !node
        ? 'node not found'
        : rebooted
          ? `new boot ID ${bootId}, waiting for Ready`
          : `boot ID still ${bootId}`;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw ApplicationFailure.create({
          type: FAILURE_TYPES.rebootTimeout,
          nonRetryable: true,
          message: `node ${input.node} did not come back from its reboot within ${input.timeoutSeconds}s: ${status}`,
          details: [{ node: input.node, previousBootId: input.previousBootId, bootId }],
        });
      }
      heartbeat({ ...beat, node: input.node, status });
      await Promise.race([signal.wait(Math.min(left, settings.pollSeconds * 1000)), cancelled()]);
    }
  } finally {
    nodes.stop();
  }
}
