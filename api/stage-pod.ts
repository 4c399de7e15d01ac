import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { InvalidError } from '../client';

// Which stage pod and which of its containers `logs` reads. Pure: the pods come from one list call.

/** The pod created last (a Job's retry, or the latest stage when no stage is asked for). */
export function latestPod(pods: readonly V1Pod[]): V1Pod | undefined {
  const time = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return [...pods].sort((a, b) => time(b) - time(a) || (b.metadata!.name! < a.metadata!.name! ? -1 : 1))[0];
}

export interface LogContainer {
  name: string;
  /** Every container of the pod, init containers first, as they run. */
  containers: string[];
  /** Why the container has no log yet (`PodInitializing`, `ErrImagePull`, ...), when it has not started. */
  waiting?: string;
}

const started = (s: V1ContainerStatus | undefined) =>
  s !== undefined && (s.state?.waiting === undefined || s.lastState?.terminated !== undefined);
const failed = (s: V1ContainerStatus | undefined) =>
  (s?.state?.terminated?.exitCode ?? 0) !== 0 || (s?.lastState?.terminated?.exitCode ?? 0) !== 0;

/**
 * The container to read: the one asked for; else the first that failed; else the agent's stage container (a stage
 * Job's last init container, an interrupt Job's only container) once it has started, or the last one that has.
 */
export function logContainer(pod: V1Pod, requested?: string): LogContainer {
  const inits = (pod.spec?.initContainers ?? []).map((c) => c.name);
  const mains = (pod.spec?.containers ?? []).map((c) => c.name);
  const containers = [...inits, ...mains];
  const statuses = new Map(
    [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].map((s) => [s.name, s]),
  );
  if (requested !== undefined && !containers.includes(requested)) {
    throw new InvalidError([
      {
        path: 'container',
        message: `${JSON.stringify(requested)} is not a container of pod ${pod.metadata?.name}; it has ${containers.join(', ')}`,
      },
    ]);
  }
  const agent = inits.at(-1) ?? mains[0]!;
  const name =
    requested ??
    containers.find((c) => failed(statuses.get(c))) ??
    (started(statuses.get(agent)) ? agent : [...containers].reverse().find((c) => started(statuses.get(c)))) ??
    agent;
  const status = statuses.get(name);
  return started(status)
    ? { name, containers }
    : { name, containers, waiting: status?.state?.waiting?.reason ?? 'not started' };
}

/** True once the container has terminated and will not run again (a crash loop restarting it has not ended). */
export function containerEnded(pod: V1Pod, container: string): boolean {
  const status = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (s) => s.name === container,
  );
  return status?.state?.terminated !== undefined;
}
