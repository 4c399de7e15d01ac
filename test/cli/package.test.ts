import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { startTestKeelson, type TestKeelson } from '../api/stack';
import { skyhookYaml } from '../../harness/manifests';

// The CLI as someone without a checkout gets it: `npm run pack:cli` packs it, `npm install <tarball>` in an empty
// folder installs it, and the installed `keelson` (compiled JavaScript, run by Node alone) talks to a real API,
// worker and Temporal server: its version and the server's, a rollout's status through a context and through flags.

const root = join(__dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'keelson-package-'));
const name = `pkg-r-${Date.now().toString(36)}`;
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
let k: TestKeelson;
let keelsonBin: string;
// Packing compiles the CLI (tsc, tens of seconds on two cores); installing reads npm's cache.
jest.setTimeout(300_000);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program asynchronously: the API answering it runs in this process. */
function run(file: string, args: string[], opts: { cwd: string; env: Record<string, string> }): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { ...opts, timeout: 240_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

/** The installed keelson, with a HOME of its own (no one's config file) and the config file given. */
const keelson = (args: string[], env: Record<string, string> = {}) =>
  run(keelsonBin, args, {
    cwd: work,
    env: { PATH: process.env.PATH!, HOME: work, KEELSON_CONFIG: join(work, 'none.yaml'), ...env },
  });

beforeAll(async () => {
  const started = Date.now();
  k = await startTestKeelson('pkgt');
  const res = await fetch(`${k.url}/v1/rollouts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.token}`, 'content-type': 'application/yaml' },
    body: skyhookYaml(name, ['node-006'], { base: { version: '1.0.0' } }),
  });
  expect(res.status).toBe(201);
  const env = { PATH: process.env.PATH!, HOME: process.env.HOME ?? work };
  const packed = await run('npm', ['run', '-s', 'pack:cli', '--', join(work, 'pack')], { cwd: root, env });
  expect(packed).toMatchObject({ code: 0 });
  const tarball = packed.stdout.trim().split('\n').at(-1)!;
  const app = join(work, 'app');
  const installed = await run(
    'bash',
    ['-c', `mkdir -p "${app}" && cd "${app}" && npm install --prefer-offline --no-audit --no-fund "${tarball}"`],
    { cwd: work, env },
  );
  expect(installed).toMatchObject({ code: 0 });
  keelsonBin = join(app, 'node_modules', '.bin', 'keelson');
  console.log(`npm run pack:cli and npm install <tarball>: ${Date.now() - started} ms`);
}, 300_000);

afterAll(async () => {
  await k?.stop();
});

test('the package installs the CLI and its three run-time dependencies: no worker, Temporal SDK or dev tool', () => {
  const modules = join(work, 'app', 'node_modules');
  expect(existsSync(join(modules, '@keelson', 'cli', 'dist', 'cli', 'main.js'))).toBe(true);
  for (const dep of ['commander', 'yaml', 'zod']) expect([dep, existsSync(join(modules, dep))]).toEqual([dep, true]);
  for (const absent of ['@temporalio', '@kubernetes', 'fastify', 'tsx', 'typescript'])
    expect([absent, existsSync(join(modules, absent))]).toEqual([absent, false]);
  expect(existsSync(join(modules, '@keelson', 'cli', 'dist', 'workflows'))).toBe(false);
});

test('keelson --version: the client, and the server when the API answers', async () => {
  const r = await keelson(['--version', '--api-url', k.url, '--token', k.token]);
  expect(r).toEqual({ code: 0, stdout: `client: ${version}\nserver: ${version} (${k.url})\n`, stderr: '' });
  const down = await keelson(['--version'], { KEELSON_API_URL: 'http://127.0.0.1:7489' });
  expect(down.code).toBe(0);
  expect(down.stdout).toBe(
    `client: ${version}\nserver: unknown (cannot reach the Keelson API at http://127.0.0.1:7489 (ECONNREFUSED))\n`,
  );
});

test('keelson rollout status NAME through a context whose token is in a file, in every output format', async () => {
  const config = join(work, 'config.yaml');
  writeFileSync(join(work, 'api.token'), `${k.token}\n`);
  expect(
    await keelson(['config', 'set-context', 'test', '--url', k.url, '--token-file', 'api.token'], {
      KEELSON_CONFIG: config,
    }),
  ).toEqual({
    code: 0,
    stdout: `context test set (${config})\n`,
    stderr: '',
  });
  const plain = await keelson(['rollout', 'status', name], { KEELSON_CONFIG: config });
  expect(plain.stderr).toBe('');
  expect(plain.code).toBe(0);
  expect(plain.stdout.split('\n')[0]).toMatch(
    new RegExp(`^rollout ${name}: \\S+, [01]/1 nodes complete, generation 1$`),
  );
  const yaml = await keelson(['rollout', 'status', name, '-o', 'yaml'], { KEELSON_CONFIG: config });
  expect(YAML.parse(yaml.stdout)).toMatchObject({ name, generation: 1, nodes: { 'node-006': {} } });
  const wide = await keelson(['rollout', 'status', name, '-o', 'wide'], { KEELSON_CONFIG: config });
  expect(wide.stdout).toMatch(
    /\nNODE\s+STATUS\s+PACKAGE\s+VERSION\s+STAGE\s+STATE\s+RESTARTS\nnode-006\s+\S+\s+base\s+1\.0\.0\s/,
  );
  const bad = await keelson(['rollout', 'status', name, '-o', 'xml'], { KEELSON_CONFIG: config });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('-o/--output: "xml" is not allowed; use json, yaml or wide');
});

test('flags over the environment over the context: a wrong token in the context, the right one by flag', async () => {
  const config = join(work, 'wrong.yaml');
  writeFileSync(
    config,
    YAML.stringify({ 'current-context': 'w', contexts: [{ name: 'w', url: k.url, token: 'wrong-token-0123456789' }] }),
  );
  const refused = await keelson(['rollout', 'status', name], { KEELSON_CONFIG: config });
  expect(refused.code).toBe(6);
  expect(refused.stderr).toContain('--token, KEELSON_API_TOKEN, or a context');
  const byEnv = await keelson(['rollout', 'status', name, '-o', 'json'], {
    KEELSON_CONFIG: config,
    KEELSON_API_TOKEN: k.token,
  });
  expect([byEnv.code, JSON.parse(byEnv.stdout).name]).toEqual([0, name]);
  const byFlag = await keelson(['rollout', 'list', '--token', k.token, '-o', 'json'], {
    KEELSON_CONFIG: config,
    KEELSON_API_TOKEN: 'wrong-env-token-0123456789',
  });
  expect(byFlag.code).toBe(0);
  expect((JSON.parse(byFlag.stdout).rollouts as { name: string }[]).map((r) => r.name)).toContain(name);
});

test('keelson dev from the package says it needs a checkout', async () => {
  const r = await keelson(['dev', 'env']);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(
    'keelson: `keelson dev` runs the local stack of a Keelson checkout (deploy/dev), which this installed CLI does ' +
      'not carry: run `npx keelson dev ...` in a clone of the repository\n',
  );
});
