import { PassThrough } from 'node:stream';
import { confirm } from '../../cli/commands/confirm';

// The question destructive commands ask: y/N on a terminal, a refusal naming --yes without one.

function io(tty: boolean) {
  const input = Object.assign(new PassThrough(), { isTTY: tty });
  const output = new PassThrough();
  let written = '';
  output.on('data', (d: Buffer) => (written += d.toString()));
  return { input, output, written: () => written };
}

test('--yes needs no question, terminal or not', async () => {
  const t = io(false);
  expect(await confirm('delete rollout r', true, t)).toBe('yes');
  expect(t.written()).toBe('');
});

test('without a terminal and without --yes: refused, and the message names --yes', async () => {
  const t = io(false);
  expect(await confirm('delete rollout r', false, t)).toBe('no-terminal');
  expect(t.written()).toBe(
    'keelson: refusing to delete rollout r without confirmation: stdin is not a terminal; pass --yes\n',
  );
});

test.each([
  ['y\n', 'yes'],
  ['YES\n', 'yes'],
  ['n\n', 'declined'],
  ['\n', 'declined'],
])('on a terminal, the answer %j is %s', async (answer, expected) => {
  const t = io(true);
  const asked = confirm('reset rollout r on node n1', undefined, t);
  t.input.write(answer);
  expect(await asked).toBe(expected);
  expect(t.written()).toMatch(/^Reset rollout r on node n1\? \[y\/N\] /);
  if (expected === 'declined') expect(t.written()).toContain('keelson: not confirmed; nothing done\n');
});

test('on a terminal, input that ends before an answer declines', async () => {
  const t = io(true);
  const asked = confirm('delete rollout r', undefined, t);
  t.input.end();
  expect(await asked).toBe('declined');
});
