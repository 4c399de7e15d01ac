import {
  OPERATOR_FINALIZER,
  POLICY_API_VERSIONS,
  POLICY_KIND,
  RESOURCE_PLURALS,
  ROLLOUT_KINDS,
  type RolloutKind,
} from '../model/wire';
import type { RolloutResourceStatus } from '../model/custom-resource/status';

// The custom resources the controller watches, where the apiserver serves them, and their shape as read.

/** Holds a resource until the controller has deleted its rollout (the nodes' annotations, cordons and Jobs). */
export const CLEANUP_FINALIZER = 'keelson.dev/rollout-cleanup';

/**
 * The finalizer Skyhook's operator puts on a resource it handled. With the operator stopped (migration) nothing else
 * would remove it, and a delete would hang: the controller does the operator's cleanup and removes it with its own.
 */
export const OPERATOR_FINALIZERS = [OPERATOR_FINALIZER];

export interface Collection {
  group: string;
  version: string;
  plural: string;
}

const collection = (apiVersion: string, kind: keyof typeof RESOURCE_PLURALS): Collection => {
  const [group, version] = apiVersion.split('/') as [string, string];
  return { group, version, plural: RESOURCE_PLURALS[kind] };
};

/** Where the resources of a rollout kind are served, and that kind. */
export interface RolloutCollection {
  kind: RolloutKind;
  where: Collection;
}

export const ROLLOUT_COLLECTIONS: RolloutCollection[] = [
  { kind: 'Skyhook', where: collection(ROLLOUT_KINDS.Skyhook, 'Skyhook') },
  { kind: 'NodeWright', where: collection(ROLLOUT_KINDS.NodeWright, 'NodeWright') },
];
export const POLICY_COLLECTIONS: Collection[] = POLICY_API_VERSIONS.map((v) => collection(v, POLICY_KIND));

export const collectionPath = (c: Collection) => `/apis/${c.group}/${c.version}/${c.plural}`;

export interface RolloutResource {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: string | Date;
    finalizers?: string[];
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec?: unknown;
  status?: RolloutResourceStatus;
}

/** The manifest a resource holds, as a file would: what parseRolloutDocuments reads. */
export function manifestOf(resource: RolloutResource): Record<string, unknown> {
  const { name, annotations } = resource.metadata;
  return {
    apiVersion: resource.apiVersion,
    kind: resource.kind,
    metadata: { name, ...(annotations && { annotations }) },
    spec: resource.spec,
  };
}
