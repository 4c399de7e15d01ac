import fc from 'fast-check';
import { compareVersions, parseDurationMs, parseImageReference, parseQuantity, selectorMatches } from '../../model';

describe('semver ordering', () => {
  test.each([
    ['1.2.3', '1.2.4', -1],
    ['1.2', '1.2.0', 0],
    ['1', '1.0.1', -1],
    ['1.10.0', '1.9.0', 1],
    ['1.0.0-alpha', '1.0.0', -1],
    ['1.0.0-alpha.2', '1.0.0-alpha.10', -1],
    ['1.0.0-alpha', '1.0.0-1', 1],
    ['1.0.0+a', '1.0.0+b', 0],
    ['2024.7.7-test', '2024.7.7', -1],
  ])('%s vs %s = %i', (a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
    expect(compareVersions(b, a)).toBe(-expected || 0);
  });

  test('property: antisymmetric and consistent with numbers', () => {
    const v = fc.tuple(fc.nat(50), fc.nat(50), fc.nat(50));
    fc.assert(
      fc.property(v, v, ([a, b, c], [x, y, z]) => {
        const expected = Math.sign(a - x || b - y || c - z);
        expect(compareVersions(`${a}.${b}.${c}`, `${x}.${y}.${z}`)).toBe(expected);
      }),
    );
  });
});

describe('parsers', () => {
  test('durations', () => {
    expect(parseDurationMs('1m30s')).toBe(90_000);
    expect(parseDurationMs('1.5h')).toBe(5_400_000);
    expect(parseDurationMs('0')).toBe(0);
    expect(parseDurationMs('10')).toBeUndefined();
    expect(parseDurationMs('5x')).toBeUndefined();
  });
  test('quantities', () => {
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('1Gi')).toBe(2 ** 30);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('1.5')).toBe(1.5);
    expect(parseQuantity('1 Gi')).toBeUndefined();
  });
  test('image references keep a registry port', () => {
    expect(parseImageReference('host:5000/img:1.0')).toEqual({ repository: 'host:5000/img', tag: '1.0' });
    expect(parseImageReference('host:5000/img')).toEqual({ repository: 'host:5000/img' });
    expect(parseImageReference('ubuntu')).toEqual({ repository: 'ubuntu' });
    expect(parseImageReference('a/b:c:d')).toHaveProperty('problem');
    expect(parseImageReference('bad_host:x/img')).toHaveProperty('problem');
  });
  test('label selector matching', () => {
    const labels = { env: 'prod', zone: 'a' };
    expect(selectorMatches({}, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { env: 'prod' } }, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { env: 'dev' } }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }, labels)).toBe(
      true,
    );
    expect(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, labels)).toBe(
      false,
    );
    expect(selectorMatches({ matchExpressions: [{ key: 'gpu', operator: 'NotIn', values: ['a'] }] }, labels)).toBe(
      true,
    );
    expect(selectorMatches({ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }, labels)).toBe(true);
  });
});
