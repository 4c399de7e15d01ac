import { z } from 'zod';
import { describeValue, formatPath } from './manifests/validation-error';
import { DEFAULT_KEY_PREFIX, OPERATOR_KEY_PREFIXES } from './wire';

// The nodeState_<rollout> annotation (§4): JSON keyed `name|version`, in the format Skyhook and NodeWright write,
// plus Keelson's attempts and lastError. Decoding never throws: a malformed annotation is a typed error.

export const STAGES = ['uninstall', 'upgrade', 'apply', 'config', 'interrupt', 'post-interrupt'] as const;
export const StageSchema = z.enum(STAGES);
export type Stage = z.infer<typeof StageSchema>;

export const StateSchema = z.enum(['complete', 'in_progress', 'skipped', 'erroring', 'unknown']);
export type State = z.infer<typeof StateSchema>;

/** A node's status for one rollout (§4), also the rollout's aggregate status (§5.3). */
export const StatusSchema = z.enum([
  'complete',
  'in_progress',
  'erroring',
  'waiting',
  'blocked',
  'paused',
  'disabled',
  'unknown',
]);
export type Status = z.infer<typeof StatusSchema>;

export const PackageEntrySchema = z.object({
  name: z.string().min(1),
  version: z.string().min(1),
  image: z.string(),
  containerSHA: z.string().optional(),
  stage: StageSchema,
  state: StateSchema,
  restarts: z.int().min(0).optional(),
  attempts: z.int().min(0).optional(),
  lastError: z.string().optional(),
});
export type PackageEntry = z.infer<typeof PackageEntrySchema>;

export const NodeStateSchema = z.record(z.string(), PackageEntrySchema).superRefine((state, ctx) => {
  for (const [key, entry] of Object.entries(state)) {
    if (key !== entryKey(entry.name, entry.version)) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `key ${JSON.stringify(key)} does not match its entry ${JSON.stringify(entryKey(entry.name, entry.version))}`,
      });
    }
  }
});
export type NodeState = z.infer<typeof NodeStateSchema>;

/** What a rollout's status shows of a package on a node (§5.3): not the entry's image, errors and log tails. */
export type PackageProgress = Pick<PackageEntry, 'name' | 'version' | 'stage' | 'state' | 'restarts'>;

export function packageProgress(state: Readonly<Record<string, PackageProgress>>): Record<string, PackageProgress> {
  const out: Record<string, PackageProgress> = {};
  for (const [key, e] of Object.entries(state)) {
    out[key] = {
      name: e.name,
      version: e.version,
      stage: e.stage,
      state: e.state,
      ...(e.restarts !== undefined && { restarts: e.restarts }),
    };
  }
  return out;
}

export function entryKey(name: string, version: string): string {
  return `${name}|${version}`;
}

export type DecodeResult = { ok: true; state: NodeState } | { ok: false; error: NodeStateError };
export interface NodeStateError {
  kind: 'invalid-json' | 'invalid-shape';
  message: string;
}

/** An absent or empty annotation is an empty state, as in Skyhook. */
export function decodeNodeState(annotation: string | undefined): DecodeResult {
  if (annotation === undefined || annotation.trim() === '') return { ok: true, state: {} };
  let json: unknown;
  try {
    json = JSON.parse(annotation);
  } catch (err) {
    return { ok: false, error: { kind: 'invalid-json', message: `not JSON: ${(err as Error).message}` } };
  }
  const parsed = NodeStateSchema.safeParse(json, { reportInput: true });
  if (parsed.success) return { ok: true, state: parsed.data };
  const issue = parsed.error.issues[0]!;
  const where = formatPath('nodeState', issue.path);
  const value = issue.code === 'invalid_type' ? ` (got ${describeValue(issue.input)})` : '';
  return { ok: false, error: { kind: 'invalid-shape', message: `${where}: ${issue.message}${value}` } };
}

/** Keys sorted and empty optional fields omitted, so equal states encode to equal strings (the write test relies on it). */
export function encodeNodeState(state: NodeState): string {
  const out: Record<string, PackageEntry> = {};
  for (const key of Object.keys(state).sort()) {
    const e = state[key]!;
    out[key] = {
      name: e.name,
      version: e.version,
      image: e.image,
      ...(e.containerSHA && { containerSHA: e.containerSHA }),
      stage: e.stage,
      state: e.state,
      ...(e.restarts && { restarts: e.restarts }),
      ...(e.attempts && { attempts: e.attempts }),
      ...(e.lastError && { lastError: e.lastError }),
    };
  }
  return JSON.stringify(out);
}

/** The node metadata keys of one rollout under a prefix such as `skyhook.nvidia.com/` or `nodewright.nvidia.com/`. */
export function nodeMetadataKeys(rollout: string, prefix: string = DEFAULT_KEY_PREFIX) {
  if (!prefix.endsWith('/')) throw new Error(`key prefix ${JSON.stringify(prefix)} must end with '/'`);
  return {
    nodeState: `${prefix}nodeState_${rollout}`,
    /** The order of the write that put nodeState there (model/node-write-order.ts). */
    nodeStateOrder: `${prefix}nodeStateOrder_${rollout}`,
    status: `${prefix}status_${rollout}`,
    cordon: `${prefix}cordon_${rollout}`,
    version: `${prefix}version_${rollout}`,
    ignore: `${prefix}ignore`,
    notReadyCondition: `${prefix}${rollout}/NotReady`,
    erroringCondition: `${prefix}${rollout}/Erroring`,
  };
}

/**
 * The ignore labels that keep a node out of every rollout: each operator prefix's (a rollout honours its kind's),
 * and the worker's own key prefix's when it has one (`KEELSON_KEY_PREFIX`, honoured by every rollout, §5.2).
 */
export function ignoreLabelKeys(keyPrefix?: string): string[] {
  const prefixes = new Set<string>([...OPERATOR_KEY_PREFIXES, ...(keyPrefix ? [keyPrefix] : [])]);
  return [...prefixes].map((prefix) => nodeMetadataKeys('', prefix).ignore);
}
