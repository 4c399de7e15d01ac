// A field written as null (`env:` with nothing after it) means the field is absent, as it does to Kubernetes: the API
// server drops a custom resource's null fields whose schema does not allow null before it defaults and validates
// (PruneNonNullableNullsWithoutDefaults), so Skyhook accepts `configMap:` or `dependsOn:` left empty.

/** Strategy kinds: `fixed:` with nothing after it is that strategy with its defaults, not an absent one. */
const NULL_MEANS_DEFAULTS = new Set(['fixed', 'linear', 'exponential']);

/**
 * No field of a spec lies deeper than this: below it a value is left as written, for the schema to refuse, and a
 * hostile nesting thousands deep cannot exhaust the stack.
 */
const DEEPEST_FIELD = 32;

/**
 * A copy of a manifest's spec without its null-valued fields, down to DEEPEST_FIELD. List items are kept (a null item
 * is an error, as in Kubernetes); so is a strategy kind written as null, which Keelson reads as that strategy's
 * defaults.
 */
export function withoutNullFields(value: unknown, parentKey?: string, depth = 0): unknown {
  if (depth > DEEPEST_FIELD) return value;
  if (Array.isArray(value)) return value.map((item) => withoutNullFields(item, undefined, depth + 1));
  if (typeof value !== 'object' || value === null) return value;
  const kept = Object.entries(value).filter(
    ([key, field]) => field !== null || (parentKey === 'strategy' && NULL_MEANS_DEFAULTS.has(key)),
  );
  return Object.fromEntries(kept.map(([key, field]) => [key, withoutNullFields(field, key, depth + 1)]));
}
