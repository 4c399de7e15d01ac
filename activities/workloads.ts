import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { KEELSON_PREFIX, RUN_ANNOTATION } from '../model';

// Package workloads by label family (§3.1, §9): Skyhook and NodeWright operators label their package Pods and Jobs
// `<prefix>name=<rollout>` and `<prefix>package=<pkg>-<version>` and annotate `<prefix>package` with the JSON identity
// {name, version, skyhook, stage, image}; Keelson's Jobs carry `keelson.dev/` labels and the same annotation shape.

export interface WorkloadIdentity {
  prefix: string;
  rollout: string;
  name: string;
  version: string;
  stage: string;
}

type Meta = { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } };

/** The package identity an object's `<prefix>package` annotation records, for the first prefix that has one. */
export function workloadIdentity(obj: Meta, prefixes: readonly string[]): WorkloadIdentity | undefined {
  for (const prefix of [KEELSON_PREFIX, ...prefixes]) {
    const raw = obj.metadata?.annotations?.[`${prefix}package`];
    if (!raw) continue;
    try {
      const p = JSON.parse(raw) as {
        name?: unknown;
        version?: unknown;
        stage?: unknown;
        skyhook?: unknown;
        rollout?: unknown;
      };
      if (typeof p.name !== 'string' || typeof p.version !== 'string') continue;
      const labels = obj.metadata?.labels ?? {};
      const stage = typeof p.stage === 'string' ? p.stage : (labels[`${prefix}stage`] ?? '');
      const rollout = String(p.rollout ?? p.skyhook ?? labels[`${prefix}name`] ?? '');
      return { prefix, rollout, name: p.name, version: p.version, stage };
    } catch {
      // not an identity annotation
    }
  }
  return undefined;
}

/** Any label of a package workload family: the operators' `<prefix>name`/`<prefix>package`, Keelson's rollout label. */
export function isPackageWorkload(obj: Meta, prefixes: readonly string[]): boolean {
  const labels = obj.metadata?.labels ?? {};
  if (`${KEELSON_PREFIX}rollout` in labels) return true;
  return prefixes.some((p) => `${p}name` in labels || `${p}package` in labels);
}

/** An interrupt workload: a Keelson interrupt Job pod, or an operator pod labelled `<prefix>interrupt`. */
export function isInterruptWorkload(obj: Meta, prefixes: readonly string[]): boolean {
  const labels = obj.metadata?.labels ?? {};
  if (labels[`${KEELSON_PREFIX}stage`] === 'interrupt') return true;
  return prefixes.some(
    (p) => (labels[`${p}interrupt`] ?? '').toLowerCase() === 'true' || labels[`${p}stage`] === 'interrupt',
  );
}

export function jobNode(job: V1Job, prefixes: readonly string[]): string | undefined {
  const labels = job.metadata?.labels ?? {};
  return (
    job.spec?.template?.spec?.nodeName ??
    [KEELSON_PREFIX, ...prefixes].map((p) => labels[`${p}node`]).find((n) => n !== undefined)
  );
}

export function isJobFinished(job: V1Job): 'Complete' | 'Failed' | undefined {
  for (const c of job.status?.conditions ?? []) {
    if (c.status !== 'True') continue;
    if (c.type === 'Complete' || c.type === 'SuccessCriteriaMet') return 'Complete';
    if (c.type === 'Failed') return 'Failed';
  }
  return undefined;
}

/**
 * A Keelson Job of another run than `runId` (G11): never adopted. A Job without the annotation (an older Keelson) or
 * a run without an ID (a history recorded before run IDs) is not judged stale.
 */
export function isStaleRun(job: Meta, runId: string | undefined): boolean {
  const other = job.metadata?.annotations?.[RUN_ANNOTATION];
  return runId !== undefined && other !== undefined && other !== runId;
}

export function isPodTerminal(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

export function ownedByJob(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'Job');
}
