// The Skyhook / NodeWright wire vocabulary: every name that their custom resources, agent and node metadata define
// and that Keelson must spell exactly as they do (docs/architecture.md, "Skyhook semantics"). A leaf: it imports
// nothing, so any layer may use it, workflow code included.

/** The API group of each rollout kind; the node metadata keys of a rollout live under `<group>/`. */
export const API_GROUPS = { Skyhook: 'skyhook.nvidia.com', NodeWright: 'nodewright.nvidia.com' } as const;
export const API_VERSION = 'v1alpha1';

/** The apiVersion of each rollout kind. */
export const ROLLOUT_KINDS = {
  Skyhook: `${API_GROUPS.Skyhook}/${API_VERSION}`,
  NodeWright: `${API_GROUPS.NodeWright}/${API_VERSION}`,
} as const;
export type RolloutKind = keyof typeof ROLLOUT_KINDS;
export const ROLLOUT_KIND_NAMES = ['Skyhook', 'NodeWright'] as const satisfies readonly RolloutKind[];

export const POLICY_KIND = 'DeploymentPolicy';
/** A DeploymentPolicy is served under either group. */
export const POLICY_API_VERSIONS = [ROLLOUT_KINDS.Skyhook, ROLLOUT_KINDS.NodeWright] as const;

/** Each kind's resource name (plural), as its CustomResourceDefinition and the operators' RBAC spell it. */
export const RESOURCE_PLURALS = {
  Skyhook: 'skyhooks',
  NodeWright: 'nodewrights',
  [POLICY_KIND]: 'deploymentpolicies',
} as const;

/** The finalizer Skyhook's operator puts on each resource it handled. */
export const OPERATOR_FINALIZER = `${API_GROUPS.Skyhook}/skyhook`;

/** Every kind of document Keelson reads. */
export const MANIFEST_KINDS = [...ROLLOUT_KIND_NAMES, POLICY_KIND] as const;

/** Node metadata key prefixes: the default one, and those the operators write (whose work is adopted, G2). */
export const DEFAULT_KEY_PREFIX = `${API_GROUPS.Skyhook}/`;
export const OPERATOR_KEY_PREFIXES = [`${API_GROUPS.Skyhook}/`, `${API_GROUPS.NodeWright}/`] as const;

/** The manifest annotations that start a rollout paused or disabled (the suffix after the kind's group). */
export const PAUSE_ANNOTATION = 'pause';
export const DISABLE_ANNOTATION = 'disable';

/** The taint that keeps workloads off a node until its runtime-required packages are done (`key=value:Effect`). */
export const RUNTIME_REQUIRED_TAINT = `${API_GROUPS.Skyhook}=runtime-required:NoSchedule`;

/** The environment the agent reads. */
export const AGENT_ENV = {
  logDir: 'SKYHOOK_LOG_DIR',
  rootDir: 'SKYHOOK_ROOT_DIR',
  copyResolv: 'COPY_RESOLV',
  resourceId: 'SKYHOOK_RESOURCE_ID',
  /** Read by the package image's copy step: where under the host root the package content goes. */
  packageDir: 'SKYHOOK_DIR',
} as const;

/** Where a package image keeps its content, and where stage pods mount the node metadata and package config. */
export const PACKAGE_CONTENT_DIR = '/skyhook-package';
export const NODE_METADATA_MOUNT = `${PACKAGE_CONTENT_DIR}/node-metadata`;
export const PACKAGE_CONFIG_MOUNT = `${PACKAGE_CONTENT_DIR}/configmaps`;

/** The package image's copy step: its content to `<host root>/<SKYHOOK_DIR>`, with the host root at `/root`. */
export const PACKAGE_COPY_COMMAND = [
  '/bin/sh',
  '-c',
  `mkdir -p /root/\${${AGENT_ENV.packageDir}} && cp -r ${PACKAGE_CONTENT_DIR}/* /root/\${${AGENT_ENV.packageDir}}`,
];

/** The files of the node metadata ConfigMap the agent reads. */
export const NODE_METADATA_FILES = {
  labels: 'labels.json',
  annotations: 'annotations.json',
  packages: 'packages.json',
} as const;

/** The host directories the agent uses by default: package content copies, and its logs. */
export const DEFAULT_COPY_DIR_ROOT = '/var/lib/skyhook';
export const DEFAULT_AGENT_LOG_ROOT = '/var/log/skyhook';
