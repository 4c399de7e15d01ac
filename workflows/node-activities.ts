import { proxyActivities } from '@temporalio/workflow';
import type { KeelsonActivities } from '../activities/contract';

// Activity proxies of the node workflow whose timeouts do not depend on a stage. Kubernetes calls are retried
// until they succeed: a node workflow has nothing better to do than try again.

export const kube = proxyActivities<KeelsonActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', maximumInterval: '1 minute' },
});

/** Waits that carry their own timeout (protected pods, drain, reboot, interrupt): a minute of slack on top of it. */
export function longWait(timeoutSeconds: number, summary: string) {
  return proxyActivities<KeelsonActivities>({
    startToCloseTimeout: (timeoutSeconds + 60) * 1000,
    retry: { initialInterval: '1s', maximumInterval: '1 minute' },
    summary,
  });
}
