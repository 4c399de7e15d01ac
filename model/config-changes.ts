import type { Package } from './manifests/skyhook';

// A configMap change (§3.6): the keys that are new or hold a different value; deleted keys do not count.

export function changedConfigKeys(before: Package | undefined, after: Package): string[] {
  if (!before || before.version !== after.version) return [];
  const old = before.configMap ?? {};
  return Object.entries(after.configMap ?? {})
    .filter(([key, value]) => old[key] !== value)
    .map(([key]) => key)
    .sort();
}
