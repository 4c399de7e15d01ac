import { ApplicationFailure } from '@temporalio/common';
import type { KubeObject, WatchCache } from '../activities/watch-cache';
import { kubeCode } from '../activities/kube-errors';

// A controller may start before the apiserver serves its resources: GitOps applies the CRDs and the Deployment
// together, and a CRD just created answers 404 and then 429 ("storage is (re)initializing") for a moment. Start-up
// waits for that, saying why; only a refusal (RBAC, HTTP 403) stops it, since waiting cannot mend that.

const MAX_BACKOFF_MS = 5_000;

export async function startWhenServed<T extends KubeObject>(
  cache: WatchCache<T>,
  path: string,
  log: (line: string) => void,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await cache.start();
    } catch (err) {
      if (err instanceof ApplicationFailure) throw err;
      const retryMs = Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt);
      const hint =
        kubeCode(err) === 404
          ? ' (is its CustomResourceDefinition installed? chart value customResources.enabled)'
          : '';
      log(
        `waiting for ${path} to be served: ${(err instanceof Error ? err.message : String(err)).trim()}${hint}; retrying in ${retryMs / 1000}s`,
      );
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}
