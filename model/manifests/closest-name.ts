// "Did you mean ...": the known name a misspelt one most likely meant, for validation messages.

/** Edits (insert, delete, replace, swap of neighbours) between two strings, case ignored. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  // Full matrix: names are short, and the swap rule needs the row before the previous one.
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) =>
    Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[s.length]![t.length]!;
}

/**
 * The candidate nearest to `name`, if near enough to be a slip rather than another word: at most a third of the
 * longer one's length in edits, and at least one (so `Skyhooks` finds `Skyhook`). Case is ignored; ties go to the first.
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  // Hostile input (a key of tens of KB) would make the quadratic distance slow; no real name is that long.
  if (name.length > 100) return undefined;
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const limit = Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3));
    // The distance is at least the difference in length: no need to compute it when that alone is too far.
    if (Math.abs(name.length - candidate.length) > limit) continue;
    const distance = editDistance(name, candidate);
    if (distance > limit) continue;
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best?.candidate;
}
