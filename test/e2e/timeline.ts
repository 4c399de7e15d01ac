import { Watch, type KubeConfig, type V1Job, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { jobNodeName, stageKey } from './e2e-stack';

// Every watch event of this file's Jobs, Pods and Nodes, in the order the API server wrote them. A resourceVersion
// is the etcd revision of the write that made it, one counter for every resource in the store, so the versions of a
// Job's deletion and of another Job's creation, or of a Node's Ready condition and of a Job's creation, say which
// came first exactly, whatever order the three watch streams deliver them in. (Kubernetes calls resource versions
// opaque; on this local stack, one etcd behind one API server, they are its revisions.)

export interface Seen<T> {
  type: string;
  rv: number;
  /** Local time the event arrived (for messages and for "after the test did X", never for ordering writes). */
  at: number;
  obj: T;
}

/** One object (by UID) and every event seen of it. */
export class Tracked<T extends V1Job | V1Pod> {
  readonly events: Seen<T>[] = [];
  constructor(readonly uid: string) {}

  get last(): T {
    return this.events[this.events.length - 1]!.obj;
  }
  get key(): string {
    return stageKey(this.last);
  }
  get name(): string {
    return this.last.metadata?.name ?? '?';
  }
  /** Version of its creation (an ADDED event; a watch restarted without a version lists it again, later). */
  get addedRv(): number {
    return this.events[0]!.rv;
  }
  get addedAt(): number {
    return this.events[0]!.at;
  }
  get deletedRv(): number | undefined {
    return this.events.find((e) => e.type === 'DELETED')?.rv;
  }
  /** The first version at which `pred` held. */
  firstRv(pred: (obj: T) => boolean): number | undefined {
    return this.events.find((e) => pred(e.obj))?.rv;
  }
  ever(pred: (obj: T) => boolean): boolean {
    return this.events.some((e) => pred(e.obj));
  }
}

export function jobFinished(j: V1Job): boolean {
  return (j.status?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

function jobComplete(j: V1Job): boolean {
  return (j.status?.conditions ?? []).some((c) => c.type === 'Complete' && c.status === 'True');
}

export function podTerminal(p: V1Pod): boolean {
  return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
}

export function nodeReady(n: V1Node): boolean {
  return (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

const min = (...xs: (number | undefined)[]): number | undefined => {
  const defined = xs.filter((x): x is number => x !== undefined);
  return defined.length === 0 ? undefined : Math.min(...defined);
};

/** Where a Pod stops running: a terminal phase, or its deletion. */
export function podEnd(t: Tracked<V1Pod>): number | undefined {
  return min(t.firstRv(podTerminal), t.deletedRv);
}

export class Timeline {
  readonly jobs = new Map<string, Tracked<V1Job>>();
  readonly pods = new Map<string, Tracked<V1Pod>>();
  readonly nodes: Seen<V1Node>[] = [];
  private stopped = false;
  private readonly aborts: AbortController[] = [];

  private constructor(private readonly kc: KubeConfig) {}

  /** Starts watching Jobs and Pods of `namespace` and the Nodes labelled `keelson.dev/e2e=<cluster>`. */
  static async start(kc: KubeConfig, namespace: string, cluster: string): Promise<Timeline> {
    const t = new Timeline(kc);
    await t.follow(`/apis/batch/v1/namespaces/${namespace}/jobs`, {}, (type, rv, obj: V1Job) =>
      t.see(t.jobs, type, rv, obj),
    );
    await t.follow(`/api/v1/namespaces/${namespace}/pods`, {}, (type, rv, obj: V1Pod) => t.see(t.pods, type, rv, obj));
    await t.follow('/api/v1/nodes', { labelSelector: `keelson.dev/e2e=${cluster}` }, (type, rv, obj: V1Node) =>
      t.nodes.push({ type, rv, at: Date.now(), obj }),
    );
    return t;
  }

  stop(): void {
    this.stopped = true;
    for (const a of this.aborts) a.abort();
  }

  private see<T extends V1Job | V1Pod>(into: Map<string, Tracked<T>>, type: string, rv: number, obj: T): void {
    const uid = obj.metadata?.uid;
    if (!uid) return;
    let t = into.get(uid);
    if (!t) into.set(uid, (t = new Tracked<T>(uid)));
    t.events.push({ type, rv, at: Date.now(), obj });
  }

  /** A watch that resumes from the last version it saw when the server ends it (a fresh list if that is too old). */
  private async follow<T extends { metadata?: { resourceVersion?: string } }>(
    path: string,
    query: Record<string, string>,
    on: (type: string, rv: number, obj: T) => void,
  ): Promise<void> {
    let last: string | undefined;
    const go = async (): Promise<void> => {
      if (this.stopped) return;
      const again = () => void setTimeout(() => void go().catch(again), 200);
      this.aborts.push(
        await new Watch(this.kc).watch(
          path,
          { ...query, allowWatchBookmarks: true, ...(last && { resourceVersion: last }) },
          (type: string, obj: T & { code?: number }) => {
            if (type === 'ERROR') {
              if (obj.code === 410) last = undefined;
              return;
            }
            const rv = obj.metadata?.resourceVersion;
            if (rv) last = rv;
            if (type !== 'BOOKMARK' && rv) on(type, Number(rv), obj);
          },
          again,
        ),
      );
    };
    await go();
  }

  /** Jobs on `node`, oldest first; `key` filters by `<package>@<version>:<stage>` or by a predicate on it. */
  jobsOn(node: string, key?: string | ((key: string) => boolean)): Tracked<V1Job>[] {
    const match = typeof key === 'string' ? (k: string) => k === key : (key ?? (() => true));
    return [...this.jobs.values()]
      .filter((t) => jobNodeName(t.last) === node && match(t.key))
      .sort((a, b) => a.addedRv - b.addedRv);
  }

  podsOn(node: string, key?: string | ((key: string) => boolean)): Tracked<V1Pod>[] {
    const match = typeof key === 'string' ? (k: string) => k === key : (key ?? (() => true));
    return [...this.pods.values()]
      .filter((t) => t.last.spec?.nodeName === node && match(t.key))
      .sort((a, b) => a.addedRv - b.addedRv);
  }

  podsOf(job: Tracked<V1Job>): Tracked<V1Pod>[] {
    return [...this.pods.values()].filter((p) =>
      (p.last.metadata?.ownerReferences ?? []).some((o) => o.uid === job.uid),
    );
  }

  /**
   * Where a Job stops being unfinished stage work: it finished (Complete or Failed), its pod succeeded (a stage Job runs
   * one pod to one completion, and Keelson goes on from that success), or it was deleted.
   */
  jobEnd(job: Tracked<V1Job>): number | undefined {
    return min(job.firstRv(jobFinished), this.podSucceeded(job), job.deletedRv);
  }

  /** The Job's stage succeeded: the Job controller wrote Complete, or its pod succeeded (Keelson may delete the Job first). */
  succeeded(job: Tracked<V1Job>): boolean {
    return job.ever(jobComplete) || this.podSucceeded(job) !== undefined;
  }

  private podSucceeded(job: Tracked<V1Job>): number | undefined {
    return min(...this.podsOf(job).map((p) => p.firstRv((pod) => pod.status?.phase === 'Succeeded')));
  }

  /** The Node's events, oldest first. */
  nodeEvents(node: string): Seen<V1Node>[] {
    return this.nodes.filter((e) => e.obj.metadata?.name === node);
  }

  /** `key (name, uid prefix): added@rv, finished@rv, deleted@rv` of every Job on the node, for failure messages. */
  describeJobs(node: string): string {
    return this.jobsOn(node)
      .map(
        (j) =>
          `${j.key} ${j.name}/${j.uid.slice(0, 8)}: added@${j.addedRv} ended@${this.jobEnd(j) ?? '-'} deleted@${j.deletedRv ?? '-'}`,
      )
      .join('\n');
  }
}

/**
 * G11 on the record: the package's Jobs on the node never overlap (each is created after the one before has finished
 * or is gone), nor do their pods (each created after the one before ended). Returns the Jobs, oldest first.
 */
export function expectOneExecutor(tl: Timeline, node: string, pkg: string): Tracked<V1Job>[] {
  const ofPkg = (k: string) => k.startsWith(`${pkg}@`);
  const jobs = tl.jobsOn(node, ofPkg);
  for (let i = 1; i < jobs.length; i++) {
    const [prev, next] = [jobs[i - 1]!, jobs[i]!];
    const end = tl.jobEnd(prev);
    if (end === undefined || end > next.addedRv)
      throw new Error(
        `two executors of ${pkg} on ${node}: ${next.key} (${next.name}) created at version ${next.addedRv} while ` +
          `${prev.key} (${prev.name}) was unfinished (ended at ${end ?? 'never'})\n${tl.describeJobs(node)}`,
      );
  }
  const pods = tl.podsOn(node, ofPkg);
  for (let i = 1; i < pods.length; i++) {
    const [prev, next] = [pods[i - 1]!, pods[i]!];
    const end = podEnd(prev);
    if (end === undefined || end > next.addedRv)
      throw new Error(
        `two pods of ${pkg} on ${node} at once: ${next.key} ${next.name} created at version ${next.addedRv} while ` +
          `${prev.key} ${prev.name} ran (ended at ${end ?? 'never'})`,
      );
  }
  return jobs;
}

/** G11's stronger half for a stopped run: `stopped` and all its pods were gone before `next` was created. */
export function expectGoneBefore(tl: Timeline, stopped: Tracked<V1Job>, next: Tracked<V1Job>): void {
  const deleted = stopped.deletedRv;
  if (deleted === undefined || deleted > next.addedRv)
    throw new Error(
      `${next.key} (${next.name}) created at version ${next.addedRv} before the stopped ${stopped.key} Job was ` +
        `gone (deleted at ${deleted ?? 'never'})`,
    );
  const pods = tl.podsOf(stopped);
  if (pods.length === 0) throw new Error(`no pod of the stopped ${stopped.key} Job was seen: it never ran`);
  for (const p of pods) {
    if (p.deletedRv === undefined || p.deletedRv > next.addedRv)
      throw new Error(
        `${next.key} created at version ${next.addedRv} before pod ${p.name} of the stopped ${stopped.key} Job ` +
          `was gone (deleted at ${p.deletedRv ?? 'never'})`,
      );
  }
}
