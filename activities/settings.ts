import type { KubeConfig } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import type { Taint } from '../model/taints';
import type { ImagePolicy } from '../model/image-policy';
import type { NodeTimeouts } from './contract';
import type { WorkloadInformer } from './workload-informer';

/** What the activities need to know about the cluster they run against (workers/config.ts fills it from env). */
export interface ActivitySettings {
  /** Cluster name in node workflow IDs (`keelson/<cluster>/node/<node>`). */
  cluster: string;
  /** Task queue on which node workflows are started. */
  taskQueue: string;
  /** Namespace of stage and interrupt Jobs and their ConfigMaps. */
  namespace: string;
  agentImage: string;
  /** Node-state key prefix; undefined: by rollout kind (`skyhook.nvidia.com/` or `nodewright.nvidia.com/`). */
  keyPrefix?: string;
  /** Operator label prefixes whose package Jobs and Pods are adopted and gate interrupts (G2). */
  legacyPrefixes: readonly string[];
  /** Adopt running Skyhook/NodeWright work instead of starting a second executor (G2). */
  adoption: boolean;
  /** How long a pod may fail to pull its image before the stage is reported failed. */
  imagePullGraceSeconds: number;
  /** How long the Job controller may be refused a stage pod (Pod Security, quota) before the stage is reported failed. */
  podCreateGraceSeconds: number;
  /** Byte budget of a stored log tail (G7). */
  logTailBytes: number;
  backoffLimit: number;
  /**
   * ttlSecondsAfterFinished of stage Jobs; deleteStageJob removes completed ones once recorded (G3). 0: no TTL, and
   * failed Jobs are deleted once recorded too.
   */
  jobRetentionSeconds: number;
  copyDirRoot: string;
  agentLogRoot: string;
  imagePullSecret?: string;
  /** The runtime-required taint: tolerated by stage pods, removed by rollouts from the nodes they finish. */
  runtimeRequiredTaint?: Taint;
  /** Heartbeat and re-evaluation period of waits. */
  pollSeconds: number;
  /** Interrupt-flow timeouts and drain policy that new rollouts take from this worker. */
  nodeTimeouts: NodeTimeouts;
  /** What rollouts may run: the rollout workflow checks every spec with it (imagePolicy activity). */
  imagePolicy: ImagePolicy;
}

export interface ActivityDeps {
  kubeConfig: KubeConfig;
  /** The worker's shared watches of stage workloads (`workloadInformer`); the worker stops them when it ends. */
  workloads: WorkloadInformer;
  /** Only ensureNodeWorkflow needs it. */
  temporal?: Client;
  settings: ActivitySettings;
}
