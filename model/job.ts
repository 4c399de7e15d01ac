import { agentInterruptArgument } from './interrupt';
import type { Stage } from './node-state';
import { parseDurationMs } from './duration';
import type { Interrupt } from './manifests/package';
import type { EnvVar, Toleration } from './manifests/kube';
import type { Package } from './manifests/skyhook';
import {
  AGENT_ENV,
  NODE_METADATA_FILES,
  NODE_METADATA_MOUNT,
  PACKAGE_CONFIG_MOUNT,
  PACKAGE_COPY_COMMAND,
} from './wire';

// Stage and interrupt Jobs (§3.1, as NodeWright runs them, §9): deterministic names, and the Job objects as plain
// JSON, so activities create or adopt them and tests compare them without a Kubernetes client.

export const KEELSON_PREFIX = 'keelson.dev/';
/** The annotation naming the run of a stage that made a stage or interrupt Job: another run's Job is stale (G11). */
export const RUN_ANNOTATION = `${KEELSON_PREFIX}run`;
/** The Job controller names pods `<job>-<5 chars>`: a Job name of at most 57 keeps pod names within 63. */
export const MAX_JOB_NAME = 57;
const MAX_LABEL_VALUE = 63;

// FNV-1a over UTF-8: a stable short hash without Node's crypto, which workflow code may not import.
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/**
 * A DNS label of at most `max` characters from the parts: lowercased, other characters to '-', cut, and always
 * suffixed with a hash of the exact parts so that parts differing only in cut or replaced characters stay distinct.
 */
export function safeName(max: number, ...parts: string[]): string {
  const hash = fnv1a(parts.join('\u0000'));
  const base = parts
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+/, '')
    .slice(0, max - hash.length - 1)
    .replace(/-+$/, '');
  return base === '' ? `k${hash}` : `${base}-${hash}`;
}

/** A label value (≤63, alphanumeric at both ends) that still identifies a longer or irregular value. */
export function safeLabelValue(value: string): string {
  if (/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value) && value.length <= MAX_LABEL_VALUE) return value;
  return safeName(MAX_LABEL_VALUE, value);
}

export interface StageJobKey {
  rollout: string;
  package: string;
  version: string;
  stage: Stage;
  node: string;
}

export function stageJobName(k: StageJobKey): string {
  return safeName(MAX_JOB_NAME, k.rollout, k.package, k.version, k.stage, k.node);
}

export function interruptJobName(rollout: string, type: Interrupt['type'], node: string): string {
  return safeName(MAX_JOB_NAME, rollout, 'interrupt', type, node);
}

// Plain JSON shapes of the batch/v1 and core/v1 fields Keelson sets.
export interface ContainerSpec {
  name: string;
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent';
  command?: string[];
  args?: string[];
  env: EnvVar[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: { privileged: true };
  volumeMounts: { name: string; mountPath: string; mountPropagation?: 'HostToContainer' }[];
}
export interface VolumeSpec {
  name: string;
  hostPath?: { path: string };
  configMap?: { name: string };
}
export interface JobManifest {
  apiVersion: 'batch/v1';
  kind: 'Job';
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: {
    backoffLimit: number;
    activeDeadlineSeconds: number;
    ttlSecondsAfterFinished?: number;
    podReplacementPolicy?: 'Failed';
    podFailurePolicy?: { rules: { action: 'Ignore'; onPodConditions: { type: string }[] }[] };
    template: {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      spec: {
        nodeName: string;
        restartPolicy: 'Never' | 'OnFailure';
        hostPID: true;
        hostNetwork: true;
        terminationGracePeriodSeconds?: number;
        imagePullSecrets?: { name: string }[];
        tolerations: Toleration[];
        volumes: VolumeSpec[];
        initContainers: ContainerSpec[];
        containers: ContainerSpec[];
      };
    };
  };
}

export interface JobContext {
  rollout: string;
  /** The rollout's identity and spec generation: they scope the agent's flag files (§3.2). */
  rolloutUid: string;
  generation: number;
  node: string;
  namespace: string;
  agentImage: string;
  copyDirRoot: string;
  agentLogRoot: string;
  imagePullSecret?: string;
  additionalTolerations: readonly Toleration[];
  runtimeRequiredToleration?: Toleration;
  nodeMetadataConfigMap: string;
  backoffLimit: number;
  activeDeadlineSeconds: number;
  /** How long a finished Job stays for its logs; 0 or unset: no TTL (Keelson deletes it once its outcome is recorded). */
  retentionSeconds?: number;
  /** This run of the stage (G11), set as the Job's RUN_ANNOTATION; absent for runs recorded before it. */
  runId?: string;
}

const UNSCHEDULABLE: Toleration = { key: 'node.kubernetes.io/unschedulable', operator: 'Exists' };

function copyDir(ctx: JobContext, pkg: Package): string {
  return `${ctx.copyDirRoot}/${ctx.rollout}/${pkg.name}-${pkg.version}-${ctx.rolloutUid}-${ctx.generation}`;
}

function agentEnv(ctx: JobContext, pkg: Package): EnvVar[] {
  return [
    { name: AGENT_ENV.logDir, value: `${ctx.agentLogRoot}/${ctx.rollout}` },
    { name: AGENT_ENV.rootDir, value: `${ctx.copyDirRoot}/${ctx.rollout}` },
    { name: AGENT_ENV.copyResolv, value: 'false' },
    {
      name: AGENT_ENV.resourceId,
      // The agent keeps per-resource flags of the steps done: a run of its own (a rerun) must not find the last one's.
      value: `${ctx.rollout}-${ctx.rolloutUid}-${ctx.generation}${ctx.runId ? `-${ctx.runId}` : ''}_${pkg.name}_${pkg.version}`,
    },
  ];
}

const ROOT_MOUNT = { name: 'root-mount', mountPath: '/root', mountPropagation: 'HostToContainer' as const };
const METADATA_MOUNT = { name: 'metadata', mountPath: NODE_METADATA_MOUNT };
const CONFIG_MOUNT = { name: 'package-config', mountPath: PACKAGE_CONFIG_MOUNT };

/** The labels of stage and interrupt Jobs and their pods; values too long or irregular for a label are hashed. */
export const JOB_LABELS = {
  rollout: `${KEELSON_PREFIX}rollout`,
  package: `${KEELSON_PREFIX}package`,
  version: `${KEELSON_PREFIX}version`,
  stage: `${KEELSON_PREFIX}stage`,
  node: `${KEELSON_PREFIX}node`,
  generation: `${KEELSON_PREFIX}generation`,
} as const;

function labels(ctx: JobContext, key: Omit<StageJobKey, 'node' | 'rollout'>): Record<string, string> {
  return {
    [JOB_LABELS.rollout]: safeLabelValue(ctx.rollout),
    [JOB_LABELS.package]: safeLabelValue(key.package),
    [JOB_LABELS.version]: safeLabelValue(key.version),
    [JOB_LABELS.stage]: key.stage,
    [JOB_LABELS.node]: safeLabelValue(ctx.node),
    [JOB_LABELS.generation]: String(ctx.generation),
  };
}

/**
 * The label selector of the pods of one package's stage Jobs on one node (every stage, or one): the interrupt Job
 * counts as its owner package's `interrupt` stage.
 */
export function stagePodSelector(k: Omit<StageJobKey, 'version' | 'stage'> & { stage?: Stage }): string {
  return [
    `${JOB_LABELS.rollout}=${safeLabelValue(k.rollout)}`,
    `${JOB_LABELS.package}=${safeLabelValue(k.package)}`,
    `${JOB_LABELS.node}=${safeLabelValue(k.node)}`,
    ...(k.stage !== undefined ? [`${JOB_LABELS.stage}=${k.stage}`] : []),
  ].join(',');
}

function job(
  ctx: JobContext,
  name: string,
  key: Omit<StageJobKey, 'node' | 'rollout'> & { image: string },
  pod: Pick<JobManifest['spec']['template']['spec'], 'initContainers' | 'containers' | 'volumes' | 'tolerations'> & {
    terminationGracePeriodSeconds?: number;
  },
  interrupt: boolean,
): JobManifest {
  const jobLabels = labels(ctx, key);
  // The package annotation carries the full identity, which labels may only hold hashed (Skyhook's §3.1 shape).
  const annotations = {
    [`${KEELSON_PREFIX}package`]: JSON.stringify({
      name: key.package,
      version: key.version,
      rollout: ctx.rollout,
      stage: key.stage,
      image: key.image,
      node: ctx.node,
    }),
    ...(ctx.runId !== undefined && { [RUN_ANNOTATION]: ctx.runId }),
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: ctx.namespace, labels: jobLabels, annotations },
    spec: {
      backoffLimit: ctx.backoffLimit,
      activeDeadlineSeconds: ctx.activeDeadlineSeconds,
      // No zero TTL: the Job controller would delete a failed Job before its failure is recorded (G3).
      ...(ctx.retentionSeconds !== undefined &&
        ctx.retentionSeconds > 0 && { ttlSecondsAfterFinished: ctx.retentionSeconds }),
      // Stage Jobs: a replacement pod only once the old one is gone (no two executors on the shared copy dir),
      // and evictions or preemptions do not count against the backoff limit.
      ...(!interrupt && {
        podReplacementPolicy: 'Failed' as const,
        podFailurePolicy: { rules: [{ action: 'Ignore' as const, onPodConditions: [{ type: 'DisruptionTarget' }] }] },
      }),
      template: {
        metadata: { labels: jobLabels, annotations },
        spec: {
          nodeName: ctx.node,
          // A reboot kills the interrupt container; OnFailure restarts it in place, and the agent's per-resource
          // flag makes the rerun a no-op that succeeds (§3.2, §9).
          restartPolicy: interrupt ? 'OnFailure' : 'Never',
          hostPID: true,
          hostNetwork: true,
          ...(pod.terminationGracePeriodSeconds !== undefined && {
            terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds,
          }),
          ...(ctx.imagePullSecret && { imagePullSecrets: [{ name: ctx.imagePullSecret }] }),
          tolerations: pod.tolerations,
          volumes: pod.volumes,
          initContainers: pod.initContainers,
          containers: pod.containers,
        },
      },
    },
  };
}

function tolerations(ctx: JobContext, extra: Toleration[] = []): Toleration[] {
  return [
    UNSCHEDULABLE,
    ...(ctx.runtimeRequiredToleration ? [ctx.runtimeRequiredToleration] : []),
    ...ctx.additionalTolerations,
    ...extra,
  ];
}

function volumes(ctx: JobContext, packageConfigMap?: string): VolumeSpec[] {
  return [
    { name: ROOT_MOUNT.name, hostPath: { path: '/' } },
    { name: METADATA_MOUNT.name, configMap: { name: ctx.nodeMetadataConfigMap } },
    ...(packageConfigMap ? [{ name: CONFIG_MOUNT.name, configMap: { name: packageConfigMap } }] : []),
  ];
}

/** The package ConfigMap name `<rollout>-<pkg>-<version>` (§3.1), made a valid object name. */
export function packageConfigMapName(rollout: string, pkg: Package): string {
  return safeName(253, rollout, pkg.name, pkg.version);
}

export interface ConfigMapManifest {
  metadata: { name: string; labels: Record<string, string> };
  data: Record<string, string>;
}

/**
 * The ConfigMaps a stage pod mounts (§3.1): the node metadata (the Node's labels and annotations, and the package
 * list the agent reads), and the package's configMap when it has one.
 */
export function buildStageConfigMaps(
  ctx: JobContext,
  pkg: Package,
  node: { labels: Record<string, string>; annotations: Record<string, string> },
): ConfigMapManifest[] {
  const agent = pkg.agentImageOverride ?? ctx.agentImage;
  const labels = { [`${KEELSON_PREFIX}rollout`]: safeLabelValue(ctx.rollout) };
  const packages = {
    [pkg.name]: {
      name: pkg.name,
      version: pkg.version,
      image: pkg.image,
      agentImageOverride: pkg.agentImageOverride,
      interrupt: pkg.interrupt,
      configInterrupts: pkg.configInterrupts,
    },
  };
  const metadata: ConfigMapManifest = {
    metadata: {
      name: ctx.nodeMetadataConfigMap,
      labels: { ...labels, [`${KEELSON_PREFIX}node`]: safeLabelValue(ctx.node) },
    },
    data: {
      [NODE_METADATA_FILES.labels]: JSON.stringify(node.labels),
      [NODE_METADATA_FILES.annotations]: JSON.stringify(node.annotations),
      [NODE_METADATA_FILES.packages]: JSON.stringify({ agentVersion: agent.split(':').pop() ?? '', packages }),
    },
  };
  if (Object.keys(pkg.configMap ?? {}).length === 0) return [metadata];
  return [metadata, { metadata: { name: packageConfigMapName(ctx.rollout, pkg), labels }, data: { ...pkg.configMap } }];
}

/**
 * The Job of one package stage on one node: the package image copies its content to the host, the agent runs the
 * stage, then its check; the Job succeeds when the check exits 0. The check is the main container, so no third image
 * (Skyhook's pause, NodeWright's done) is needed. Uninstall stages run without the package's env and resources (§3.7).
 */
export function buildStageJob(ctx: JobContext, pkg: Package, stage: Exclude<Stage, 'interrupt'>): JobManifest {
  const uninstall = stage === 'uninstall';
  const dir = copyDir(ctx, pkg);
  const agent = pkg.agentImageOverride ?? ctx.agentImage;
  const env = [...agentEnv(ctx, pkg), ...(uninstall ? [] : (pkg.env ?? []))];
  const r = pkg.resources;
  const resources =
    r && !uninstall && r.cpuRequest && r.cpuLimit && r.memoryRequest && r.memoryLimit
      ? { requests: { cpu: r.cpuRequest, memory: r.memoryRequest }, limits: { cpu: r.cpuLimit, memory: r.memoryLimit } }
      : undefined;
  const hasConfig = !uninstall && Object.keys(pkg.configMap ?? {}).length > 0;
  const mounts = [ROOT_MOUNT, METADATA_MOUNT, ...(hasConfig ? [CONFIG_MOUNT] : [])];
  const container = (
    name: string,
    image: string,
    pull: ContainerSpec['imagePullPolicy'],
    rest: Partial<ContainerSpec>,
  ) => ({
    name,
    image,
    imagePullPolicy: pull,
    env,
    ...(resources && { resources }),
    securityContext: { privileged: true as const },
    volumeMounts: mounts,
    ...rest,
  });
  const packageImage = pkg.containerSHA ? `${pkg.image}@${pkg.containerSHA}` : `${pkg.image}:${pkg.version}`;
  const grace =
    pkg.gracefulShutdown === undefined ? undefined : Math.ceil(parseDurationMs(pkg.gracefulShutdown)! / 1000);
  return job(
    ctx,
    stageJobName({ rollout: ctx.rollout, package: pkg.name, version: pkg.version, stage, node: ctx.node }),
    { package: pkg.name, version: pkg.version, stage, image: pkg.image },
    {
      initContainers: [
        container(`${pkg.name}-init`, packageImage, 'Always', {
          command: PACKAGE_COPY_COMMAND,
          env: [...env, { name: AGENT_ENV.packageDir, value: dir }],
        }),
        container(`${pkg.name}-${stage}`, agent, 'IfNotPresent', { args: [stage, '/root', dir] }),
      ],
      containers: [
        container(`${pkg.name}-${stage}check`, agent, 'IfNotPresent', { args: [`${stage}-check`, '/root', dir] }),
      ],
      volumes: volumes(ctx, hasConfig ? packageConfigMapName(ctx.rollout, pkg) : undefined),
      tolerations: tolerations(ctx),
      ...(grace !== undefined && { terminationGracePeriodSeconds: grace }),
    },
    false,
  );
}

/**
 * The node's one merged interrupt, run by its owner package. Its only container is the agent image, already pulled
 * for the owner's stages and pulled IfNotPresent, so finishing after the reboot needs no registry (G5). It tolerates
 * not-ready and unreachable without bound, since the node goes NotReady while it reboots.
 */
export function buildInterruptJob(ctx: JobContext, owner: Package, interrupt: Interrupt): JobManifest {
  const dir = copyDir(ctx, owner);
  const agent = owner.agentImageOverride ?? ctx.agentImage;
  return job(
    ctx,
    interruptJobName(ctx.rollout, interrupt.type, ctx.node),
    { package: owner.name, version: owner.version, stage: 'interrupt', image: owner.image },
    {
      initContainers: [],
      containers: [
        {
          name: 'interrupt',
          image: agent,
          imagePullPolicy: 'IfNotPresent',
          args: ['interrupt', '/root', dir, agentInterruptArgument(interrupt)],
          env: agentEnv(ctx, owner),
          resources: { requests: { cpu: '500m', memory: '64Mi' }, limits: { cpu: '500m', memory: '64Mi' } },
          securityContext: { privileged: true },
          volumeMounts: [ROOT_MOUNT, METADATA_MOUNT],
        },
      ],
      volumes: volumes(ctx),
      tolerations: tolerations(ctx, [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
      ]),
    },
    true,
  );
}
