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
  /** Waits on one Keelson Job, by its UID: woken by changes to that Job and its pods only. */
  private readonly jobListeners = new Map<string, Set<() => void>>();

  constructor(
    clients: Clients,
    readonly namespace: string,
    legacyPrefixes: readonly string[],
  ) {
    // The legacy families are only looked up (adoption), never waited on through these caches.
    const unwatched = () => undefined;
    // A Job or pod event wakes the waits on that Job alone: with hundreds of stages in flight, waking every wait on
    // every event cost more CPU than the waits themselves.
    const onJobChange = (uid: string | undefined) => {
      const wake = uid === undefined ? [...this.jobListeners.values()] : [this.jobListeners.get(uid)];
      for (const set of wake) for (const listener of set ?? []) listener();
    };
    const { kc, batch, core } = clients;
    const jobs = (labelSelector: string, changed: (job?: V1Job) => void) =>
      new WatchCache<V1Job>({
        kc,
        path: '/apis/batch/v1/jobs',
        list: (q) => batch.listJobForAllNamespaces(q),
        labelSelector,
        onChange: changed,
      });
    this.keelsonJobs = jobs(`${KEELSON_PREFIX}stage`, (job) =>
      onJobChange(job ? (job.metadata?.uid ?? '') : undefined),
    );
    this.stagePods = new WatchCache<V1Pod>({
      kc,
      path: `/api/v1/namespaces/${namespace}/pods`,
      list: (q) => core.listNamespacedPod({ namespace, ...q }),
      labelSelector: CONTROLLER_UID,
      indexBy: (pod) => pod.metadata?.labels?.[CONTROLLER_UID],
      onChange: (pod) => onJobChange(pod ? (pod.metadata?.labels?.[CONTROLLER_UID] ?? '') : undefined),
    });
    this.legacyJobs = legacyPrefixes.map((p) => jobs(`${p}package`, unwatched));
    this.legacyPods = legacyPrefixes.map(
      (p) =>
        new WatchCache<V1Pod>({
          kc,
          path: '/api/v1/pods',
          list: (q) => core.listPodForAllNamespaces(q),
          labelSelector: `${p}package`,
          onChange: unwatched,
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

  /** Calls `listener` after every change to the Keelson Job `uid` or its pods (and after a re-list), until stopped. */
  subscribeJob(uid: string, listener: () => void): () => void {
    const set = this.jobListeners.get(uid) ?? new Set();
    set.add(listener);
    this.jobListeners.set(uid, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.jobListeners.delete(uid);
    };
  }

  /** The pods of a Keelson Job in the Jobs namespace. */
  podsOf(jobUid: string): V1Pod[] {
    return this.stagePods.indexed(jobUid);
  }

  stop(): void {
    for (const c of this.caches) c.stop();
  }
}
