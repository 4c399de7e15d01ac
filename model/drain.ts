import { z } from 'zod';
import { parseDurationMs } from './duration';

// What a drain does with each pod on the node, by kubectl drain's default rules: DaemonSet and mirror pods stay
// (as with --ignore-daemonsets), a pod no controller would recreate or one with emptyDir data blocks the drain
// unless the rollout's drain policy allows it, and finished pods need nothing. Pure: the drain activity feeds it
// the pods it lists.

/** Longest drain timeout a rollout may set: a day, as the worker setting allows. */
const MAX_DRAIN_TIMEOUT_MS = 24 * 3_600_000;

/** A rollout's drain options (Keelson's addition to the Skyhook spec); unset options take kubectl's defaults. */
export const DrainOptionsSchema = z.strictObject({
  /** How long the drain may take before the worker's drain policy applies; unset: KEELSON_DRAIN_TIMEOUT_SECONDS. */
  timeout: z
    .string()
    .superRefine((text, ctx) => {
      const ms = parseDurationMs(text);
      if (ms === undefined || ms < 10_000 || ms > MAX_DRAIN_TIMEOUT_MS || ms % 1000 !== 0) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(text)} is not a drain timeout (a duration of whole seconds from 10s to 24h, e.g. "10m")`,
        });
      }
    })
    .optional(),
  /** Evict pods that no controller manages (kubectl --force); they are not recreated anywhere. */
  force: z.boolean().optional(),
  /** Evict pods with emptyDir volumes, whose data is lost (kubectl --delete-emptydir-data). */
  deleteEmptyDirData: z.boolean().optional(),
  /** Grace period of evicted pods; unset: each pod's own terminationGracePeriodSeconds (kubectl --grace-period). */
  gracePeriodSeconds: z.int().min(0).max(86_400).optional(),
});
export type DrainOptions = z.infer<typeof DrainOptionsSchema>;

/** The drain activity's view of the options: the timeout resolved to seconds elsewhere, the rest with defaults. */
export interface DrainRules {
  force: boolean;
  deleteEmptyDirData: boolean;
  gracePeriodSeconds?: number;
}

export function drainRules(options: DrainOptions | undefined): DrainRules {
  return {
    force: options?.force ?? false,
    deleteEmptyDirData: options?.deleteEmptyDirData ?? false,
    ...(options?.gracePeriodSeconds !== undefined && { gracePeriodSeconds: options.gracePeriodSeconds }),
  };
}

/** The drain timeout of a rollout: its own, else the worker's. */
export function drainTimeoutSeconds(options: DrainOptions | undefined, workerSeconds: number): number {
  return options?.timeout === undefined ? workerSeconds : parseDurationMs(options.timeout)! / 1000;
}

/** The parts of a pod the rules read (a subset of core/v1 Pod). */
export interface DrainPod {
  metadata?: {
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; controller?: boolean }[];
  };
  spec?: { volumes?: { emptyDir?: object }[] };
  status?: { phase?: string };
}

export type DrainVerdict =
  | { action: 'evict' }
  | { action: 'skip'; why: 'daemonset' | 'mirror' | 'finished' }
  | { action: 'block'; why: string; allowedBy: 'force' | 'deleteEmptyDirData' };

/** One pod's fate in a drain under the rollout's rules. Keelson's own package pods are left out before this. */
export function classifyDrainPod(pod: DrainPod, rules: DrainRules): DrainVerdict {
  const owners = pod.metadata?.ownerReferences ?? [];
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined)
    return { action: 'skip', why: 'mirror' };
  if (owners.some((o) => o.kind === 'DaemonSet')) return { action: 'skip', why: 'daemonset' };
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return { action: 'skip', why: 'finished' };
  if (!rules.force && !owners.some((o) => o.controller === true)) {
    return { action: 'block', why: 'no controller would recreate it', allowedBy: 'force' };
  }
  if (!rules.deleteEmptyDirData && (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined)) {
    return { action: 'block', why: 'its emptyDir data would be lost', allowedBy: 'deleteEmptyDirData' };
  }
  return { action: 'evict' };
}

/** The message of a drain that pods block: each pod, why, and the drain option that lets it go. */
export function drainBlockedMessage(node: string, blocked: { pod: string; why: string; allowedBy: string }[]): string {
  const lines = blocked.map((b) => `${b.pod} (${b.why}; allowed by drain.${b.allowedBy}: true)`);
  return `drain of node ${node} is blocked by ${blocked.length} pod(s): ${lines.join(', ')}; set the option in the rollout's spec.drain to evict them`;
}
