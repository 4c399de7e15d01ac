import { parseManifestText } from '../../client/manifest-file';

test('an alias bomb is refused with a one-line reason, not an exception', () => {
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 0; i < 9; i++)
    bomb.push(
      `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9)
        .fill(`*${String.fromCharCode(97 + i)}`)
        .join(',')}]`,
    );
  const result = parseManifestText(bomb.join('\n'));
  expect(result).toEqual({ problem: expect.stringMatching(/^cannot be read: .*alias/i) });
});

test('a manifest with a few aliases still reads', () => {
  const result = parseManifestText('base: &b {x: 1}\ncopy: *b\n');
  expect(result).toEqual({ documents: [{ base: { x: 1 }, copy: { x: 1 } }] });
});
