import { tolerates, untoleratedTaint } from '../../model/taints';

const runtime = { key: 'skyhook.nvidia.com', value: 'runtime-required', effect: 'NoSchedule' };

test('Equal needs the value, Exists does not, an empty key with Exists tolerates everything', () => {
  expect(tolerates({ key: runtime.key, operator: 'Equal', value: 'runtime-required' }, runtime)).toBe(true);
  expect(tolerates({ key: runtime.key, operator: 'Equal', value: 'other' }, runtime)).toBe(false);
  expect(tolerates({ key: runtime.key, operator: 'Exists' }, runtime)).toBe(true);
  expect(tolerates({ operator: 'Exists' }, runtime)).toBe(true);
  expect(tolerates({ key: runtime.key, operator: 'Exists', effect: 'NoExecute' }, runtime)).toBe(false);
});

test('the first untolerated taint is reported', () => {
  const gpu = { key: 'gpu', effect: 'NoSchedule' };
  expect(untoleratedTaint([runtime, gpu], [{ key: runtime.key, operator: 'Exists' }])).toEqual(gpu);
  expect(untoleratedTaint([runtime], [{ key: runtime.key, operator: 'Exists' }])).toBeUndefined();
});
