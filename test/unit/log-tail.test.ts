import fc from 'fast-check';
import { sanitizeLogTail, sanitizeLogText } from '../../model';

const utf8 = (s: string) => new TextEncoder().encode(s).length;
const isValidUtf8 = (s: string) => {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(new TextEncoder().encode(s));
    return !/[\uD800-\uDFFF](?![\uDC00-\uDFFF])/.test(s.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''));
  } catch {
    return false;
  }
};

describe('log tail', () => {
  test('G7 log tails fit: valid UTF-8 within the byte budget for any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.nat({ max: 300 }), (bytes, budget) => {
        const tail = sanitizeLogTail(bytes, budget);
        expect(isValidUtf8(tail)).toBe(true);
        expect(utf8(tail)).toBeLessThanOrEqual(budget);
      }),
      { numRuns: 2000 },
    );
  });

  test('alternating valid and invalid bytes (the NodeWright defect of §8) stay within the budget', () => {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i % 2 ? 0xff : 0x41));
    const tail = sanitizeLogTail(bytes, 100);
    expect(utf8(tail)).toBeLessThanOrEqual(100);
    expect(tail.endsWith('\uFFFD')).toBe(true);
  });

  test('valid text within budget is kept whole; longer text keeps its end, cut on a code point', () => {
    expect(sanitizeLogText('hello', 10)).toBe('hello');
    expect(sanitizeLogText('héllo wörld', 6)).toBe(' wörld'.slice(-5));
    expect(sanitizeLogText('€€€', 7)).toBe('€€');
    expect(sanitizeLogText('abc', 0)).toBe('');
  });

  test('a valid UTF-8 tail that fits is returned unchanged', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        expect(sanitizeLogText(s, utf8(s))).toBe(s);
      }),
    );
  });
});
