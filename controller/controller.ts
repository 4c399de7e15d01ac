import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { isNotFound } from '../activities/kube-errors';
import { WatchCache } from '../activities/watch-cache';
import type { KeelsonContext } from '../client/connect';
import { reconcileResource } from './reconcile';
import { startWhenServed } from './served';
import {
  collectionPath,
  POLICY_COLLECTIONS,
  ROLLOUT_COLLECTIONS,
  type Collection,
  type RolloutCollection,
  type RolloutResource,
} from './resources';

// Custom-resource mode: watches Skyhook, NodeWright and DeploymentPolicy resources and reconciles each rollout
// resource on every change and every resync, one at a time. A failed pass is logged and retried at the next resync:
// nothing is kept only in memory but the watch caches, which a restart lists again.

export interface ControllerOptions {
  kc: KubeConfig;
  keelson: KeelsonContext;
  /** Label selector of the rollout resources handled (undefined: all). */
  selector?: string;
  resyncMs: number;
  log: (line: string) => void;
}

export interface RunningController {
  stop(): Promise<void>;
}

export async function startController(opts: ControllerOptions): Promise<RunningController> {
  const custom = opts.kc.makeApiClient(CustomObjectsApi);
  const queue = new Set<string>();
  let wake: (() => void) | undefined;
  const enqueue = (key: string) => {
    queue.add(key);
    wake?.();
  };
  const cache = (c: Collection, selector: string | undefined, onChange: (obj?: RolloutResource) => void) =>
    new WatchCache<RolloutResource>({
      kc: opts.kc,
      path: collectionPath(c),
      labelSelector: selector,
      list: (q) => custom.listClusterCustomObject({ ...c, ...q }) as Promise<{ items: RolloutResource[] }>,
      onChange,
    });
  const enqueueAll = () => rollouts.forEach(({ r, cache }) => cache.items().forEach((o) => enqueue(keyOf(r, o))));
  const rollouts = ROLLOUT_COLLECTIONS.map((r) => ({
    r,
    c: r.where,
    cache: cache(r.where, opts.selector, (obj) => (obj ? enqueue(keyOf(r, obj)) : enqueueAll())),
  }));
  // A policy change can make a rollout valid, or change its batches: every rollout resource is looked at again.
  const policies = POLICY_COLLECTIONS.map((c) => ({ c, cache: cache(c, undefined, () => enqueueAll()) }));
  await Promise.all(
    [...rollouts, ...policies].map(({ c, cache }) => startWhenServed(cache, collectionPath(c), opts.log)),
  );

  let stopped = false;
  const resync = setInterval(enqueueAll, opts.resyncMs);
  const loop = (async () => {
    while (!stopped) {
      const key = queue.values().next().value;
      if (key === undefined) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      queue.delete(key);
      const [index, name] = splitKey(key);
      const { r, cache } = rollouts[index]!;
      const resource = cache.get('', name);
      if (!resource) continue;
      try {
        await reconcileResource(
          { kc: opts.kc, keelson: opts.keelson, policies: () => policies.flatMap((p) => p.cache.items()) },
          r,
          resource,
        );
      } catch (err) {
        // Deleted while its pass ran (the cache had not seen it go yet): nothing is left to do.
        if (isNotFound(err)) continue;
        opts.log(
          `${resource.kind}/${name}: ${err instanceof Error ? err.message : String(err)} (retried at the next resync)`,
        );
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      clearInterval(resync);
      wake?.();
      await loop;
      for (const { cache } of [...rollouts, ...policies]) cache.stop();
    },
  };
}

const keyOf = (r: RolloutCollection, obj: RolloutResource) => `${ROLLOUT_COLLECTIONS.indexOf(r)}/${obj.metadata.name}`;
const splitKey = (key: string): [number, string] => {
  const slash = key.indexOf('/');
  return [Number(key.slice(0, slash)), key.slice(slash + 1)];
};
