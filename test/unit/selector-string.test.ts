import { isEmptySelector, labelSelectorString } from '../../model/selector-string';

test('a LabelSelector becomes the list-call string form', () => {
  expect(
    labelSelectorString({
      matchLabels: { app: 'db', tier: 'x' },
      matchExpressions: [
        { key: 'zone', operator: 'In', values: ['b', 'a'] },
        { key: 'pool', operator: 'NotIn', values: ['cpu'] },
        { key: 'gpu', operator: 'Exists' },
        { key: 'spot', operator: 'DoesNotExist' },
      ],
    }),
  ).toBe('app=db,tier=x,zone in (a,b),pool notin (cpu),gpu,!spot');
  expect(labelSelectorString({})).toBe('');
  expect(isEmptySelector({})).toBe(true);
  expect(isEmptySelector({ matchLabels: { a: 'b' } })).toBe(false);
});
