// Durations in Go's time.ParseDuration syntax ("90s", "1m30s", "1.5h"), the form metav1.Duration fields use.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const TERM = /([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)/y;

/** Milliseconds, or undefined when the text is not a Go duration. Negative durations are refused. */
export function parseDurationMs(text: string): number | undefined {
  if (text === '0') return 0;
  if (text === '') return undefined;
  TERM.lastIndex = 0;
  let total = 0;
  while (TERM.lastIndex < text.length) {
    const m = TERM.exec(text);
    if (!m || m[1] === '' || m[1] === '.') return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return total;
}
