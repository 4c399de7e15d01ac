import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// `keelson config ...` as users run it: a real process editing a real file ($KEELSON_CONFIG), and an API command
// refusing a bad file with the file and field named. No API is called.

const root = join(__dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'keelson-config-cli-'));

function keelson(args: string[], config: string) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'keelson.js'), ...args], {
    encoding: 'utf8',
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, KEELSON_CONFIG: config },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('set-context, get-contexts (never the token) and use-context', () => {
  const file = join(dir, 'config.yaml');
  expect(keelson(['config', 'get-contexts'], file).stdout).toBe(
    `no contexts in ${file}; add one with keelson config set-context\n`,
  );
  expect(
    keelson(['config', 'set-context', 'prod', '--url', 'https://k.example.com/', '--token', 'secret-0123456789'], file),
  ).toEqual({
    code: 0,
    stdout: `context prod set (${file})\n`,
    stderr: '',
  });
  expect(
    keelson(['config', 'set-context', 'lab', '--url', 'http://lab:7480', '--token-file', 'lab.token'], file).code,
  ).toBe(0);
  expect(keelson(['config', 'use-context', 'lab'], file)).toEqual({
    code: 0,
    stdout: `current context: lab (${file})\n`,
    stderr: '',
  });
  const listed = keelson(['config', 'get-contexts'], file);
  expect(listed.stdout).toBe(
    [
      'CURRENT  NAME  URL                    AUTH',
      '         prod  https://k.example.com  token',
      '*        lab   http://lab:7480        tokenFile lab.token',
      '',
    ].join('\n'),
  );
  expect(readFileSync(file, 'utf8')).toContain('secret-0123456789');
  const missing = keelson(['config', 'use-context', 'qa'], file);
  expect(missing).toEqual({
    code: 1,
    stdout: '',
    stderr: `keelson: context "qa" is not in ${file} (contexts: prod, lab)\n`,
  });
});

test('an API command with a bad config file: exit 1, the file and field named, nothing sent', () => {
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, 'contexts:\n  - {name: prod, url: "keelson:7480"}\n');
  expect(keelson(['rollout', 'list'], file)).toEqual({
    code: 1,
    stdout: '',
    stderr: `keelson: ${file}: contexts[0].url: "keelson:7480" is not an http(s) URL\n`,
  });
});
