import type { Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import { stagePodSelector } from '../model';
import { NotFoundError } from '../client';
import { kubeFailure, type ClusterAccess } from './cluster';
import type { LogsQuery } from './schemas';
import { containerEnded, latestPod, logContainer, type LogContainer } from './stage-pod';

// `logs`: the log of a package stage's Job pod on a node, read or followed through the apiserver (pods/log).
// A stage's Job goes once its outcome is recorded (completed) or after its retention time (failed); then the
// answer says so, and where the outcome is kept.

export type StageLogRequest = Pick<LogsQuery, 'rollout' | 'package' | 'stage' | 'container'> & { node: string };

function goneMessage(r: StageLogRequest, namespace: string): string {
  const what = `package ${r.package} of rollout ${r.rollout}${r.stage ? `, stage ${r.stage},` : ''} on node ${r.node}`;
  return (
    `no stage Job pod of ${what} in namespace ${namespace}: the stage has not started there, or its Job is gone ` +
    `(a completed stage's Job is deleted once its outcome is recorded, a failed one after the retention time). ` +
    `Kept: the recorded outcome, with a failed stage's log tail, in \`keelson node status ${r.node}\``
  );
}

/** The latest pod of the stage (or of the package's latest stage) on the node, or NotFoundError saying why none. */
export async function stagePod(cluster: ClusterAccess, r: StageLogRequest): Promise<V1Pod> {
  const namespace = cluster.jobsNamespace;
  const labelSelector = stagePodSelector(r);
  const pods = await cluster.core
    .listNamespacedPod({ namespace, labelSelector })
    .catch((err: unknown) => Promise.reject(kubeFailure(err, `list pods -l ${labelSelector}`, 'query')));
  const pod = latestPod(pods.items.filter((p) => p.spec?.nodeName === r.node));
  if (!pod) throw new NotFoundError(goneMessage(r, namespace));
  return pod;
}

export async function readLog(cluster: ClusterAccess, pod: V1Pod, container: string, tail?: number): Promise<string> {
  const name = pod.metadata!.name!;
  return cluster.core
    .readNamespacedPodLog({ name, namespace: pod.metadata!.namespace!, container, tailLines: tail })
    .catch((err: unknown) =>
      Promise.reject(kubeFailure(err, `read log of pod ${name} container ${container}`, 'query')),
    );
}

const POLL_MS = 1000;
/** How long a followed stream stays open after its container ended, for the last lines to arrive. */
const FLUSH_MS = 1500;

/**
 * Streams the container's log into `out` until the container ends (seen on the pod, as well as by the kubelet
 * closing the stream) or `stop` is called; ends `out` either way.
 */
export async function followLog(
  cluster: ClusterAccess,
  pod: V1Pod,
  container: string,
  out: Writable,
  tail?: number,
): Promise<{ stop: () => void }> {
  const name = pod.metadata!.name!;
  const namespace = pod.metadata!.namespace!;
  const stream = await cluster.log
    .log(namespace, name, container, out, { follow: true, ...(tail !== undefined && { tailLines: tail }) })
    .catch((err: unknown) =>
      Promise.reject(kubeFailure(err, `follow log of pod ${name} container ${container}`, 'query')),
    );
  let ending: NodeJS.Timeout | undefined;
  const watch = setInterval(() => {
    void cluster.core.readNamespacedPod({ name, namespace }).then(
      (current) => {
        if (current.metadata?.uid !== pod.metadata?.uid || containerEnded(current, container)) endSoon();
      },
      () => endSoon(),
    );
  }, POLL_MS);
  const stop = () => {
    clearInterval(watch);
    clearTimeout(ending);
    stream.abort();
    if (!out.writableEnded) out.end();
  };
  const endSoon = () => void (ending ??= setTimeout(stop, FLUSH_MS));
  out.once('finish', stop);
  return { stop };
}

/**
 * Waits (a follow) until the chosen container has started, the pod has ended or is gone, or `stop` says the
 * caller left; answers the container as last seen.
 */
export async function untilStarted(
  cluster: ClusterAccess,
  pod: V1Pod,
  requested: string | undefined,
  stop: () => boolean,
): Promise<LogContainer> {
  let current = pod;
  let container = logContainer(current, requested);
  const ended = () => current.status?.phase === 'Succeeded' || current.status?.phase === 'Failed';
  while (container.waiting !== undefined && !ended() && !stop()) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const name = pod.metadata!.name!;
    current = await cluster.core
      .readNamespacedPod({ name, namespace: pod.metadata!.namespace! })
      .catch((err: unknown) => Promise.reject(kubeFailure(err, `read pod ${name}`, 'query')));
    if (current.metadata?.uid !== pod.metadata?.uid) throw new NotFoundError(`pod ${name} was deleted`);
    container = logContainer(current, requested);
  }
  return container;
}
