import type { Toleration } from './spec/kube';

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
