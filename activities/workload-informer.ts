import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { KEELSON_PREFIX } from '../model';
import type { Clients } from './clients';
import { WatchCache } from './watch-cache';

// One set of watches per worker for every stage wait and adoption lookup: Keelson's stage Jobs (all namespaces), the
// pods of the Jobs namespace, and the package Jobs and Pods of each legacy label family. A wait per stage with its
// own LIST and WATCH cost four requests per node-stage and grew with the number of nodes in flight.

const CONTROLLER_UID = 'batch.kubernetes.io/controller-uid';

export class WorkloadInformer {
  readonly keelsonJobs: WatchCache<V1Job>;
  /** Pods of the Jobs namespace, by the UID of the Job that owns them. */
  readonly stagePods: WatchCache<V1Pod>;
  readonly legacyJobs: WatchCache<V1Job>[];
  readonly legacyPods: WatchCache<V1Pod>[];
  private readonly listeners = new Set<() => void>();

  constructor(
    clients: Clients,
    readonly namespace: string,
    legacyPrefixes: readonly string[],
  ) {
    const onChange = () => {
      for (const listener of this.listeners) listener();
    };
    const { kc, batch, core } = clients;
    const jobs = (labelSelector: string) =>
      new WatchCache<V1Job>({
        kc,
        path: '/apis/batch/v1/jobs',
        list: (q) => batch.listJobForAllNamespaces(q),
        labelSelector,
        onChange,
      });
    this.keelsonJobs = jobs(`${KEELSON_PREFIX}stage`);
    this.stagePods = new WatchCache<V1Pod>({
      kc,
      path: `/api/v1/namespaces/${namespace}/pods`,
      list: (q) => core.listNamespacedPod({ namespace, ...q }),
      labelSelector: CONTROLLER_UID,
      indexBy: (pod) => pod.metadata?.labels?.[CONTROLLER_UID],
      onChange,
    });
    this.legacyJobs = legacyPrefixes.map((p) => jobs(`${p}package`));
    this.legacyPods = legacyPrefixes.map(
      (p) =>
        new WatchCache<V1Pod>({
          kc,
          path: '/api/v1/pods',
          list: (q) => core.listPodForAllNamespaces(q),
          labelSelector: `${p}package`,
          onChange,
        }),
    );
  }

  private get caches(): WatchCache<V1Job | V1Pod>[] {
    return [this.keelsonJobs, this.stagePods, ...this.legacyJobs, ...this.legacyPods] as WatchCache<V1Job | V1Pod>[];
  }

  /** Lists everything once, on first use; a cache whose list failed is tried again by the next caller. */
  async ready(): Promise<void> {
    await Promise.all(this.caches.map((c) => c.start()));
  }

  /** Calls `listener` after every change to any cache, until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pods of a Keelson Job in the Jobs namespace. */
  podsOf(jobUid: string): V1Pod[] {
    return this.stagePods.indexed(jobUid);
  }

  stop(): void {
    for (const c of this.caches) c.stop();
  }
}
