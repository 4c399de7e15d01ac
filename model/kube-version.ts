// The Kubernetes version floor (G8): the Job and API features Keelson uses, the release in which each became
// available on a default cluster, and the pure comparison the worker runs against the server's version at start.

export interface KubeVersion {
  major: number;
  minor: number;
  patch: number;
}

export interface KubeFeature {
  /** What Keelson uses, as a user would search for it. */
  name: string;
  /** The first release where it is on by default (GA, or beta enabled by default). */
  since: KubeVersion;
  why: string;
}

const v = (minor: number): KubeVersion => ({ major: 1, minor, patch: 0 });

/** Everything the activities rely on; the floor is the latest `since`. */
export const KUBE_FEATURES: readonly KubeFeature[] = [
  { name: 'policy/v1 Eviction', since: v(22), why: 'drain evicts pods so PodDisruptionBudgets are respected' },
  { name: 'Job spec.suspend', since: v(24), why: 'pause suspends in-flight stage Jobs (G5)' },
  {
    name: 'Job spec.podReplacementPolicy',
    since: v(29),
    why: 'a stage pod is replaced only once the old one is gone, so two executors never share the copy dir',
  },
  {
    name: 'Job spec.podFailurePolicy',
    since: v(31),
    why: 'evictions and preemptions (DisruptionTarget) do not count against the stage backoff limit',
  },
];

export function formatKubeVersion(version: KubeVersion): string {
  return `${version.major}.${version.minor}.${version.patch}`;
}

export function compareKubeVersions(a: KubeVersion, b: KubeVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** The minimum server version for a feature set: the latest of their `since`. */
export function kubeFloor(features: readonly KubeFeature[] = KUBE_FEATURES): KubeVersion {
  return features.map((f) => f.since).reduce((a, b) => (compareKubeVersions(a, b) >= 0 ? a : b), v(0));
}

/**
 * A server version from the /version endpoint: gitVersion such as `v1.31.4-eks-1a2b3c`, or the major and minor
 * fields, which managed offerings report as `31+`.
 */
export function parseKubeVersion(info: {
  gitVersion?: string;
  major?: string;
  minor?: string;
}): KubeVersion | undefined {
  const git = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(info.gitVersion ?? '');
  if (git) return { major: Number(git[1]), minor: Number(git[2]), patch: Number(git[3] ?? 0) };
  const major = /^(\d+)/.exec(info.major ?? '');
  const minor = /^(\d+)/.exec(info.minor ?? '');
  if (major && minor) return { major: Number(major[1]), minor: Number(minor[1]), patch: 0 };
  return undefined;
}

export type FloorCheck = { ok: true } | { ok: false; message: string };

/** Refuses a server below the floor, naming each missing feature and the version it needs. */
export function checkKubeFloor(server: KubeVersion, features: readonly KubeFeature[] = KUBE_FEATURES): FloorCheck {
  const missing = features.filter((f) => compareKubeVersions(server, f.since) < 0);
  if (missing.length === 0) return { ok: true };
  const floor = kubeFloor(features);
  const list = missing.map((f) => `${f.name} (needs ${f.since.major}.${f.since.minor}: ${f.why})`).join('; ');
  return {
    ok: false,
    message:
      `Kubernetes ${formatKubeVersion(server)} is below Keelson's floor ${floor.major}.${floor.minor}: ` +
      `missing ${list}. Upgrade the cluster to ${floor.major}.${floor.minor} or later.`,
  };
}
