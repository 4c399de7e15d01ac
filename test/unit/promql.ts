// The metric names a PromQL expression selects, for checking dashboards and alerts against what the code exports.
// Not a PromQL parser: it drops what cannot be a metric name (strings, label matchers, ranges, label lists, Grafana
// variables, numbers, keywords, functions) and keeps the identifiers left.

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

export function metricNames(expr: string): string[] {
  const left = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const m of left.matchAll(/[\w:.]+/g)) {
    const token = m[0];
    if (!/^[a-zA-Z_:][\w:]*$/.test(token) || KEYWORDS.has(token.toLowerCase())) continue;
    if (
      left
        .slice(m.index + token.length)
        .trimStart()
        .startsWith('(')
    )
      continue; // a function or an aggregation
    names.add(token);
  }
  return [...names];
}

/** The series names a registry's metric shows up as in PromQL: a histogram's or summary's `_bucket`, `_sum`, `_count`. */
export function exposedNames(metric: { name: string; type: string }): string[] {
  const { name, type } = metric;
  if (type === 'histogram') return [`${name}_bucket`, `${name}_sum`, `${name}_count`];
  if (type === 'summary') return [name, `${name}_sum`, `${name}_count`];
  return [name];
}
