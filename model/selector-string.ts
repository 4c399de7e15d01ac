import type { LabelSelector } from './label-selector';

// A metav1.LabelSelector in the string form list and watch calls take (`a=b,c in (d,e),!f`).

export function labelSelectorString(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const req of selector.matchExpressions ?? []) {
    const values = [...(req.values ?? [])].sort().join(',');
    if (req.operator === 'In') parts.push(`${req.key} in (${values})`);
    else if (req.operator === 'NotIn') parts.push(`${req.key} notin (${values})`);
    else if (req.operator === 'Exists') parts.push(req.key);
    else parts.push(`!${req.key}`);
  }
  return parts.join(',');
}

/** True when the selector has no requirement (Kubernetes: matches everything; podNonInterruptLabels: disabled). */
export function isEmptySelector(selector: LabelSelector): boolean {
  return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}
