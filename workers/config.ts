import { existsSync } from 'node:fs';
import { z } from 'zod';
import type { ActivitySettings } from '../activities/settings';
import { bool, loadSettings, seconds, TemporalSettingsSchema } from './temporal-settings';
import {
  DEFAULT_AGENT_LOG_ROOT,
  DEFAULT_COPY_DIR_ROOT,
  OPERATOR_KEY_PREFIXES,
  RUNTIME_REQUIRED_TAINT,
} from '../model/wire';
import { parseTaint } from '../model/taints';
import { imagePolicyOf, ImagePolicySettingsSchema } from './image-policy-settings';

// Every worker knob, in ONE schema read from the environment (G9). A bad value stops start-up with a message that
// names the setting, the value given and what is allowed. The docs' settings table is generated from `describe`.

const int = (min: number, max: number, fallback: number) =>
  z.coerce
    .number({ message: `must be a whole number from ${min} to ${max}` })
    .int(`must be a whole number from ${min} to ${max}`)
    .min(min, `must be a whole number from ${min} to ${max}`)
    .max(max, `must be a whole number from ${min} to ${max}`)
    .default(fallback);

// 0 is "delete once recorded": the node workflow deletes a failed Job right after its reason and log tail are in
// node state (G3). Below 600 s the Job controller could delete a failed Job before a restarted worker records it.
const RETENTION_RULE = 'must be 0 (delete once recorded) or a whole number of seconds from 600 to 2592000';
const retention = z.coerce
  .number({ message: RETENTION_RULE })
  .int(RETENTION_RULE)
  .refine((n) => n === 0 || (n >= 600 && n <= 2_592_000), RETENTION_RULE)
  .default(604_800);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const name = (what: string, fallback: string) =>
  z.string().regex(DNS_LABEL, `must be ${what}: 1-63 lowercase letters, digits or '-'`).default(fallback);
const prefix = z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/$/, "must be a DNS subdomain followed by '/'");

export const WorkerConfigSchema = z
  .object({
    ...TemporalSettingsSchema.shape,
    KEELSON_TASK_QUEUE: z
      .string()
      .min(1, 'must not be empty')
      .default('keelson')
      .describe('task queue of rollout and node workflows'),
    KEELSON_CLUSTER: name('a cluster name', 'local').describe('cluster name in workflow IDs keelson/<cluster>/...'),
    KUBECONFIG: z.string().min(1).optional().describe('kubeconfig path; unset: in-cluster config or ~/.kube/config'),
    KEELSON_NAMESPACE: name('a namespace name', 'keelson').describe('namespace of stage Jobs and their ConfigMaps'),
    KEELSON_AGENT_IMAGE: z
      .string()
      .regex(/^[^\s:@]+(:[^\s:@/]+)?(@sha256:[a-f0-9]{64})?$|^[^\s@]+:\d+\/[^\s@]+$/, 'must be an image reference')
      .default('ghcr.io/nvidia/skyhook/agent:6.4.1')
      .describe('Skyhook/NodeWright agent image'),
    KEELSON_KEY_PREFIX: prefix
      .optional()
      .describe(
        `node-state key prefix; unset: by kind (${OPERATOR_KEY_PREFIXES.join(' or ')}); its ignore label keeps nodes out too, besides the kind's`,
      ),
    KEELSON_LEGACY_PREFIXES: z
      .string()
      .default(OPERATOR_KEY_PREFIXES.join(','))
      .transform((s) =>
        s
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean),
      )
      .pipe(z.array(prefix))
      .describe('operator label prefixes whose package work is adopted and gates interrupts'),
    KEELSON_WORKFLOW_BUNDLE: z
      .string()
      .refine((p) => existsSync(p), 'must be the path of an existing file (built by `npm run bundle`)')
      .optional()
      .describe(
        'prebuilt workflow bundle (`npm run bundle`); unset: the worker bundles the workflow code at every start (10-40 s)',
      ),
    KEELSON_ADOPTION: bool.default(true).describe('adopt running Skyhook/NodeWright package work (G2)'),
    KEELSON_DRAIN_TIMEOUT_SECONDS: seconds(10, 86_400, 600).describe('drain timeout before the drain policy applies'),
    KEELSON_DRAIN_POLICY: z
      .enum(['wait', 'fail', 'force'], { message: 'must be wait, fail or force' })
      .default('fail')
      .describe('what a drain does when time runs out'),
    KEELSON_PROTECTED_POD_WAIT_SECONDS: seconds(0, 604_800, 3_600).describe(
      'longest wait for podNonInterruptLabels pods',
    ),
    KEELSON_IMAGE_PULL_GRACE_SECONDS: seconds(1, 3_600, 300).describe(
      'how long an image may fail to pull before the stage fails',
    ),
    KEELSON_POD_CREATE_GRACE_SECONDS: seconds(1, 3_600, 60).describe(
      'how long the Job controller may be refused a stage pod (Pod Security, quota) before the stage fails',
    ),
    KEELSON_REBOOT_TIMEOUT_SECONDS: seconds(30, 86_400, 1_800).describe('longest wait for a new boot ID and Ready'),
    KEELSON_JOB_RETENTION_SECONDS: retention.describe(
      'ttlSecondsAfterFinished of failed stage Jobs (they keep their logs this long); 0: delete once recorded',
    ),
    KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS: seconds(1, 86_400, 3_600).describe(
      'stageTimeout of packages when neither the package nor the rollout sets one (read by each new rollout)',
    ),
    KEELSON_LOG_TAIL_BYTES: int(256, 65_536, 4_096).describe('byte budget of a stored log tail (G7)'),
    KEELSON_BACKOFF_LIMIT: int(0, 20, 3).describe('backoffLimit of stage Jobs'),
    KEELSON_COPY_DIR_ROOT: z
      .string()
      .startsWith('/', 'must be an absolute path')
      .default(DEFAULT_COPY_DIR_ROOT)
      .describe('host directory packages are copied to'),
    KEELSON_AGENT_LOG_ROOT: z
      .string()
      .startsWith('/', 'must be an absolute path')
      .default(DEFAULT_AGENT_LOG_ROOT)
      .describe('host directory of agent logs'),
    KEELSON_IMAGE_PULL_SECRET: z.string().min(1).optional().describe('image pull secret of stage pods'),
    ...ImagePolicySettingsSchema.shape,
    KEELSON_RUNTIME_REQUIRED_TAINT: z
      .string()
      .refine((text) => parseTaint(text) !== undefined, 'must be key[=value]:Effect')
      .default(RUNTIME_REQUIRED_TAINT)
      .describe('runtime-required taint: tolerated by stage pods, removed by the rollout once a node is done'),
    KEELSON_POLL_SECONDS: seconds(1, 10, 5).describe(
      'heartbeat and re-check period of waits (at most half the 20 s heartbeat timeout)',
    ),
    KEELSON_MAX_CONCURRENT_ACTIVITIES: int(1, 10_000, 1_000).describe(
      'activities one worker runs at once (stage waits, drains, node-state writes); every node in a stage holds one for the whole stage, so keep it well above the nodes in flight, or short calls queue behind the waits',
    ),
    KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS: int(1, 1_000, 40).describe('workflow tasks one worker runs at once'),
    KEELSON_MAX_CACHED_WORKFLOWS: z.coerce
      .number({ message: 'must be a whole number from 2 to 100000' })
      .int('must be a whole number from 2 to 100000')
      .min(2, 'must be a whole number from 2 to 100000')
      .max(100_000, 'must be a whole number from 2 to 100000')
      .optional()
      .describe(
        "workflows kept in the worker's cache (an evicted one is replayed at its next task); at least KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS; unset: 1.5 MiB each in the smaller of three quarters of the container's memory limit and V8's heap limit, less 300 MiB (50 to 2000)",
      ),
    KEELSON_SHUTDOWN_GRACE_SECONDS: seconds(0, 3_600, 25).describe(
      "on SIGTERM, how long running activities get to finish before they are cancelled (keep below the pod's terminationGracePeriodSeconds)",
    ),
    KEELSON_METRICS_ADDRESS: z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')
      .default('127.0.0.1:9464')
      .describe('host:port of the Keelson Prometheus endpoint (/metrics); the chart sets 0.0.0.0:9464'),
    KEELSON_SDK_METRICS_ADDRESS: z
      .string()
      .regex(/^([^\s:]+:\d{1,5}|off)$/, 'must be host:port or off')
      .default('127.0.0.1:9465')
      .describe("host:port of the Temporal SDK's own Prometheus endpoint, or off"),
    KEELSON_METRICS_REFRESH_SECONDS: seconds(1, 600, 15).describe(
      'how long the rollout and Job gauges are cached between scrapes',
    ),
    KEELSON_WORKER_DEPLOYMENT: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,200}$/, "must be 1-200 letters, digits, '_' or '-'")
      .optional()
      .describe(
        'Temporal Worker Deployment this worker belongs to (worker versioning, docs/operations.md "Upgrading Keelson"); unset: unversioned',
      ),
    KEELSON_WORKER_BUILD_ID: z
      .string()
      .regex(/^[A-Za-z0-9._+-]{1,200}$/, "must be 1-200 letters, digits, '.', '_', '+' or '-'")
      .optional()
      .describe(
        'build ID of this worker in its Worker Deployment (the chart: the image tag); needs KEELSON_WORKER_DEPLOYMENT',
      ),
    KEELSON_WORKER_PROMOTION: z
      .enum(['replay-checked', 'manual'], { message: 'must be replay-checked or manual' })
      .default('replay-checked')
      .describe(
        'versioned workers: replay-checked makes this build current once it replays every running workflow of the task queue; manual leaves that to `temporal worker deployment set-current-version`',
      ),
  })
  .superRefine((c, ctx) => {
    const cached = c.KEELSON_MAX_CACHED_WORKFLOWS;
    if (cached !== undefined && cached < c.KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS) {
      // The SDK runs no more workflow tasks at once than it can cache: the smaller setting would silently win.
      ctx.addIssue({
        code: 'custom',
        path: ['KEELSON_MAX_CACHED_WORKFLOWS'],
        message: `must be at least KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS (${c.KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS})`,
      });
    }
    if ((c.KEELSON_WORKER_DEPLOYMENT === undefined) !== (c.KEELSON_WORKER_BUILD_ID === undefined)) {
      const missing =
        c.KEELSON_WORKER_DEPLOYMENT === undefined ? 'KEELSON_WORKER_DEPLOYMENT' : 'KEELSON_WORKER_BUILD_ID';
      ctx.addIssue({
        code: 'custom',
        path: [missing],
        message: 'must be set too: a versioned worker needs both its deployment name and its build ID',
      });
    }
    if (c.KEELSON_METRICS_ADDRESS === c.KEELSON_SDK_METRICS_ADDRESS) {
      ctx.addIssue({
        code: 'custom',
        path: ['KEELSON_SDK_METRICS_ADDRESS'],
        message: 'must differ from KEELSON_METRICS_ADDRESS',
      });
    }
  });
export type WorkerConfig = z.infer<typeof WorkerConfigSchema>;

/** Reads the settings from an environment; throws SettingsError naming every bad setting, its value and the range. */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): WorkerConfig {
  return loadSettings(WorkerConfigSchema, 'worker', env);
}

export function activitySettings(config: WorkerConfig): ActivitySettings {
  return {
    cluster: config.KEELSON_CLUSTER,
    taskQueue: config.KEELSON_TASK_QUEUE,
    namespace: config.KEELSON_NAMESPACE,
    agentImage: config.KEELSON_AGENT_IMAGE,
    keyPrefix: config.KEELSON_KEY_PREFIX,
    legacyPrefixes: config.KEELSON_LEGACY_PREFIXES,
    adoption: config.KEELSON_ADOPTION,
    imagePullGraceSeconds: config.KEELSON_IMAGE_PULL_GRACE_SECONDS,
    podCreateGraceSeconds: config.KEELSON_POD_CREATE_GRACE_SECONDS,
    logTailBytes: config.KEELSON_LOG_TAIL_BYTES,
    backoffLimit: config.KEELSON_BACKOFF_LIMIT,
    jobRetentionSeconds: config.KEELSON_JOB_RETENTION_SECONDS,
    copyDirRoot: config.KEELSON_COPY_DIR_ROOT,
    agentLogRoot: config.KEELSON_AGENT_LOG_ROOT,
    imagePullSecret: config.KEELSON_IMAGE_PULL_SECRET,
    imagePolicy: imagePolicyOf(config),
    runtimeRequiredTaint: parseTaint(config.KEELSON_RUNTIME_REQUIRED_TAINT),
    pollSeconds: config.KEELSON_POLL_SECONDS,
    nodeTimeouts: {
      protectedPodsTimeoutSeconds: config.KEELSON_PROTECTED_POD_WAIT_SECONDS,
      drainTimeoutSeconds: config.KEELSON_DRAIN_TIMEOUT_SECONDS,
      drainOnTimeout: config.KEELSON_DRAIN_POLICY,
      rebootTimeoutSeconds: config.KEELSON_REBOOT_TIMEOUT_SECONDS,
      defaultStageTimeoutSeconds: config.KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS,
    },
  };
}
