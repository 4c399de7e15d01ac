import type { Toleration } from './manifests/kube';

// Whether a node's taints keep a rollout off it (§5.2): the picker's view, not the scheduler's.

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key === undefined || t.key === '') return t.operator === 'Exists';
  if (t.key !== taint.key) return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/** The first taint none of the tolerations tolerates, or undefined when the node may be picked. */
export function untoleratedTaint(taints: readonly Taint[], tolerations: readonly Toleration[]): Taint | undefined {
  return taints.find((taint) => !tolerations.some((t) => tolerates(t, taint)));
}

/** A taint written `key[=value]:Effect`, as the worker's settings give it, or undefined when the text is not one. */
export function parseTaint(text: string): Taint | undefined {
  const m = /^([^=:\s]+)(?:=([^:\s]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(text);
  if (!m) return undefined;
  return { key: m[1]!, ...(m[2] !== undefined && { value: m[2] }), effect: m[3]! };
}

/** The toleration of exactly this taint. */
export function taintToleration(taint: Taint): Toleration {
  const effect = taint.effect as Toleration['effect'];
  return taint.value !== undefined
    ? { key: taint.key, operator: 'Equal', value: taint.value, effect }
    : { key: taint.key, operator: 'Exists', effect };
}

export function sameTaint(a: Taint, b: Taint): boolean {
  return a.key === b.key && a.effect === b.effect && (a.value ?? '') === (b.value ?? '');
}
