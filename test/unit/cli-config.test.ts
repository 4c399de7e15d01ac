import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiClientFor } from '../../client/api-target';
import { cliConfigPath, readCliConfig, tokenOf, writeCliConfig } from '../../client/cli-config-file';
import {
  DEFAULT_API_URL,
  EMPTY_CLI_CONFIG,
  parseCliConfig,
  resolveApiTarget,
  setContext,
  useContext,
  type CliConfig,
} from '../../model/cli-config';

// The CLI's contexts: the file's rules, which API and token win (flag > env > context), and editing the file.

const FILE = '/home/me/.config/keelson/config.yaml';

const config: CliConfig = {
  'current-context': 'prod',
  contexts: [
    { name: 'prod', url: 'https://keelson.example.com', token: 'prod-token-0123456789' },
    { name: 'lab', url: 'http://lab:7480', tokenFile: 'lab.token' },
  ],
};

describe('parseCliConfig', () => {
  test('contexts with url and token or tokenFile, and the current one; trailing slashes dropped', () => {
    const text = [
      'current-context: lab',
      'contexts:',
      '  - {name: prod, url: "https://keelson.example.com/", token: prod-token-0123456789}',
      '  - {name: lab, url: "http://lab:7480", tokenFile: lab.token}',
    ].join('\n');
    expect(parseCliConfig(text, FILE)).toEqual({
      config: { ...config, 'current-context': 'lab' },
    });
  });

  test('an empty file has no contexts', () => {
    expect(parseCliConfig('', FILE)).toEqual({ config: EMPTY_CLI_CONFIG });
  });

  test('every bad field is named with the file, its path, the value and the rule', () => {
    const text = [
      'contexts:',
      '  - {name: prod, url: "ftp://x", token: a, tokenFile: b}',
      '  - {name: "bad name", url: "http://x", tokn: t}',
      'colour: blue',
    ].join('\n');
    const parsed = parseCliConfig(text, FILE);
    expect('errors' in parsed && [...parsed.errors].sort()).toEqual(
      [
        `${FILE}: contexts[0].url: "ftp://x" is not an http(s) URL`,
        `${FILE}: contexts[0].tokenFile: give token or tokenFile, not both`,
        `${FILE}: contexts[1].name: must be 1 to 64 letters, digits, ".", "_" or "-", starting and ending with a letter or digit`,
        `${FILE}: contexts[1].tokn: unknown field; did you mean "token"?`,
        `${FILE}: colour: unknown field; the fields here are current-context, contexts`,
      ].sort(),
    );
  });

  test('token and tokenFile together, a name twice, and a current-context that is not there', () => {
    const both = parseCliConfig('contexts: [{name: a, url: "http://a", token: t, tokenFile: f}]', FILE);
    expect(both).toEqual({ errors: [`${FILE}: contexts[0].tokenFile: give token or tokenFile, not both`] });
    const twice = parseCliConfig(
      'current-context: c\ncontexts: [{name: a, url: "http://a"}, {name: a, url: "http://b"}]',
      FILE,
    );
    expect(twice).toEqual({
      errors: [
        `${FILE}: contexts[1].name: "a" is given twice`,
        `${FILE}: current-context: "c" is not a context of this file (contexts: a, a)`,
      ],
    });
  });

  test('YAML that does not parse names the file', () => {
    const parsed = parseCliConfig('contexts: [', FILE);
    expect('errors' in parsed && parsed.errors[0]).toMatch(new RegExp(`^${FILE}: `));
  });
});

describe('resolveApiTarget: flag > environment > context, each setting on its own', () => {
  const resolve = (flags: object, env: Record<string, string> = {}, c: CliConfig = config) =>
    resolveApiTarget(flags, env, c, FILE);

  test('nothing set anywhere: the default URL, no token', () => {
    expect(resolve({}, {}, EMPTY_CLI_CONFIG)).toEqual({ target: { url: DEFAULT_API_URL, urlFrom: 'default' } });
  });

  test('the current context', () => {
    expect(resolve({})).toEqual({
      target: {
        url: 'https://keelson.example.com',
        urlFrom: 'context prod',
        token: { token: 'prod-token-0123456789', from: 'context prod' },
        context: 'prod',
      },
    });
  });

  test('the environment over the context, flags over both; --context over KEELSON_CONTEXT over current-context', () => {
    const env = { KEELSON_API_URL: 'http://env:1/', KEELSON_API_TOKEN: 'env-token' };
    expect(resolve({}, env)).toMatchObject({
      target: {
        url: 'http://env:1',
        urlFrom: 'KEELSON_API_URL',
        token: { token: 'env-token', from: 'KEELSON_API_TOKEN' },
      },
    });
    expect(resolve({ apiUrl: 'http://flag:2', token: 'flag-token' }, env)).toMatchObject({
      target: { url: 'http://flag:2', urlFrom: '--api-url', token: { token: 'flag-token', from: '--token' } },
    });
    // Only the URL from a flag: the token still comes from the context.
    expect(resolve({ apiUrl: 'http://flag:2' })).toMatchObject({
      target: { url: 'http://flag:2', token: { token: 'prod-token-0123456789' } },
    });
    expect(resolve({}, { KEELSON_CONTEXT: 'lab' })).toMatchObject({
      target: { url: 'http://lab:7480', token: { tokenFile: 'lab.token', from: 'context lab' }, context: 'lab' },
    });
    expect(resolve({ context: 'prod' }, { KEELSON_CONTEXT: 'lab' })).toMatchObject({ target: { context: 'prod' } });
  });

  test('errors name the flag, variable or field, the value and what there is', () => {
    expect(resolve({ context: 'staging' })).toEqual({
      error: `--context: "staging" is not a context of ${FILE} (contexts: prod, lab)`,
    });
    expect(resolve({}, { KEELSON_CONTEXT: 'x' }, EMPTY_CLI_CONFIG)).toEqual({
      error: `KEELSON_CONTEXT: "x" is not a context of ${FILE} (it has no contexts)`,
    });
    expect(resolve({ apiUrl: 'keelson:7480' })).toEqual({ error: '--api-url: "keelson:7480" is not an http(s) URL' });
    expect(resolve({}, { KEELSON_API_URL: 'ftp://x' })).toEqual({
      error: 'KEELSON_API_URL: "ftp://x" is not an http(s) URL',
    });
    expect(resolve({ token: '' })).toEqual({ error: '--token: is empty; give the token, or leave the flag out' });
  });
});

describe('editing contexts', () => {
  test('set-context adds a context (the first becomes current) and changes only the fields given', () => {
    const first = setContext(EMPTY_CLI_CONFIG, { name: 'lab', url: 'http://lab:7480/', tokenFile: 'lab.token' });
    expect(first).toEqual({
      config: { 'current-context': 'lab', contexts: [{ name: 'lab', url: 'http://lab:7480', tokenFile: 'lab.token' }] },
    });
    const changed = setContext(config, { name: 'lab', token: 'new-token' });
    expect('config' in changed && changed.config.contexts[1]).toEqual({
      name: 'lab',
      url: 'http://lab:7480',
      token: 'new-token',
    });
    expect('config' in changed && changed.config['current-context']).toBe('prod');
  });

  test('set-context refuses a new context without --url, a bad URL or name, and both token flags', () => {
    expect(setContext(config, { name: 'new' })).toEqual({ error: 'context "new" is new: give its --url' });
    expect(setContext(config, { name: 'new', url: 'nope' })).toEqual({ error: '--url: "nope" is not an http(s) URL' });
    expect(setContext(config, { name: '-x', url: 'http://x' })).toMatchObject({
      error: expect.stringMatching(/^context name "-x": must be 1 to 64 letters/),
    });
    expect(setContext(config, { name: 'lab', token: 't', tokenFile: 'f' })).toEqual({
      error: '--token and --token-file: give one of them, not both',
    });
  });

  test('use-context switches to a context there is, and names the ones there are otherwise', () => {
    expect(useContext(config, 'lab', FILE)).toEqual({ config: { ...config, 'current-context': 'lab' } });
    expect(useContext(config, 'qa', FILE)).toEqual({ error: `context "qa" is not in ${FILE} (contexts: prod, lab)` });
  });
});

describe('the config file on disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keelson-config-'));

  test('$KEELSON_CONFIG, else config.yaml under $XDG_CONFIG_HOME/keelson', () => {
    expect(cliConfigPath({ KEELSON_CONFIG: '/etc/k.yaml', XDG_CONFIG_HOME: '/x' })).toBe('/etc/k.yaml');
    expect(cliConfigPath({ XDG_CONFIG_HOME: '/x' })).toBe('/x/keelson/config.yaml');
  });

  test('written for the owner only, read back the same; a missing file has no contexts', () => {
    const file = join(dir, 'sub', 'config.yaml');
    expect(readCliConfig(file)).toEqual(EMPTY_CLI_CONFIG);
    writeCliConfig(file, config);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readCliConfig(file)).toEqual(config);
  });

  test('a bad file throws every problem with the file named', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'contexts: [{name: a}]\n');
    expect(() => readCliConfig(file)).toThrow(`${file}: contexts[0].url: is required (string)`);
  });

  test('tokenFile: relative to the config file, first line trimmed; missing or empty named', () => {
    const file = join(dir, 'config.yaml');
    writeFileSync(join(dir, 'lab.token'), '  lab-token-0123456789 \nrest\n');
    expect(tokenOf({ tokenFile: 'lab.token', from: 'context lab' }, file)).toBe('lab-token-0123456789');
    expect(() => tokenOf({ tokenFile: 'gone.token', from: 'context lab' }, file)).toThrow(
      `${file}: context lab: tokenFile ${join(dir, 'gone.token')}: ENOENT`,
    );
    writeFileSync(join(dir, 'empty.token'), '\n');
    expect(() => tokenOf({ tokenFile: 'empty.token', from: 'context lab' }, file)).toThrow(/empty\.token is empty$/);
  });

  test('apiClientFor: the client of the resolved URL', () => {
    const file = join(dir, 'client.yaml');
    const lab = { name: 'lab', url: 'http://lab:7480', tokenFile: 'absent.token' };
    writeCliConfig(file, { ...config, contexts: [config.contexts[0]!, lab] });
    expect(apiClientFor({}, { KEELSON_CONFIG: file }).url).toBe('https://keelson.example.com');
    expect(() => apiClientFor({ context: 'lab' }, { KEELSON_CONFIG: file })).toThrow(/absent\.token: ENOENT/);
  });
});
