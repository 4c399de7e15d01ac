// G7: a stored log tail is valid UTF-8 and never longer than its byte budget, whatever bytes came in. The repair
// (invalid bytes -> U+FFFD, 3 bytes each) can grow the text, so the budget is applied after it, on a code point
// boundary (NodeWright's defect was applying it before the repair: §8).

function utf8Length(codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

/** The end of `bytes` as valid UTF-8 of at most `maxBytes` bytes. */
export function sanitizeLogTail(bytes: Uint8Array, maxBytes: number): string {
  const budget = Math.max(0, Math.floor(maxBytes));
  // Each kept byte yields at most 3 output bytes, so a window of the last `budget` bytes always suffices.
  let start = Math.max(0, bytes.length - budget);
  while (start < bytes.length && start > 0 && (bytes[start]! & 0xc0) === 0x80) start++; // no half rune at the cut
  const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytes.subarray(start));
  const codePoints = Array.from(text);
  let size = 0;
  let keep = codePoints.length;
  while (keep > 0) {
    const next = size + utf8Length(codePoints[keep - 1]!.codePointAt(0)!);
    if (next > budget) break;
    size = next;
    keep--;
  }
  return codePoints.slice(keep).join('');
}

/** For text already decoded elsewhere (lone surrogates become U+FFFD on encoding). */
export function sanitizeLogText(text: string, maxBytes: number): string {
  return sanitizeLogTail(new TextEncoder().encode(text), maxBytes);
}
