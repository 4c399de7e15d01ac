// configInterrupts keys are configMap keys or globs; as in Skyhook only `*` is meaningful (any run of characters).

export function isGlob(pattern: string): boolean {
  return pattern.includes('*');
}

export function globMatches(pattern: string, text: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(text);
}
