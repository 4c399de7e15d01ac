import { changedConfigKeys } from '../../model/config-changes';
import type { Package } from '../../model';

const pkg = (version: string, configMap?: Record<string, string>): Package => ({
  name: 'tuned',
  version,
  image: 'ghcr.io/x/tuned',
  ...(configMap && { configMap }),
});

test('new and changed keys count, deleted and unchanged keys do not', () => {
  expect(changedConfigKeys(pkg('1.0.0', { a: '1', b: '2', c: '3' }), pkg('1.0.0', { a: '1', b: 'x', d: '4' }))).toEqual(
    ['b', 'd'],
  );
});

test('a version change or a first desire is not a config change', () => {
  expect(changedConfigKeys(pkg('1.0.0', { a: '1' }), pkg('1.1.0', { a: '2' }))).toEqual([]);
  expect(changedConfigKeys(undefined, pkg('1.0.0', { a: '1' }))).toEqual([]);
});
