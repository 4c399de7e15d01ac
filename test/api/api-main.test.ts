import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The API entry point as operators run it: settings from the environment, bad ones stop start-up with a message
// naming the setting, the value and the allowed range.

const root = join(__dirname, '..', '..');
const main = join(root, 'api', 'main.ts');
const baseEnv = { PATH: process.env.PATH, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' };

function startUp(env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['--require', 'tsx/cjs', main], {
    cwd: root,
    env: { ...baseEnv, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stderr: r.stderr };
}

test.each([
  [
    { KEELSON_API_PORT: '70000', KEELSON_API_TOKEN: 'a'.repeat(20) },
    'KEELSON_API_PORT="70000": must be a whole number from 0 to 65535',
  ],
  [{ KEELSON_API_PORT: 'http', KEELSON_API_TOKEN: 'a'.repeat(20) }, 'KEELSON_API_PORT="http": '],
  [{ KEELSON_API_TOKEN: 'short' }, 'KEELSON_API_TOKEN="short": must be at least 16 characters'],
  [{}, 'KEELSON_API_TOKENS_FILE="", KEELSON_API_TOKEN="": one of them must be set'],
  [
    { KEELSON_API_TOKENS_FILE: '/nonexistent/tokens' },
    'KEELSON_API_TOKENS_FILE="/nonexistent/tokens": cannot be read (ENOENT)',
  ],
  [
    { KEELSON_API_TOKEN: 'a'.repeat(20), KEELSON_CLUSTER: 'Bad_Name' },
    'KEELSON_CLUSTER="Bad_Name": must be a cluster name',
  ],
  [
    { KEELSON_API_TOKEN: 'a'.repeat(20), TEMPORAL_UI_URL: 'ftp://x' },
    'TEMPORAL_UI_URL="ftp://x": must be an http(s) URL',
  ],
  [
    { KEELSON_API_TOKEN: 'a'.repeat(20), KEELSON_API_BODY_LIMIT_BYTES: '10' },
    'KEELSON_API_BODY_LIMIT_BYTES="10": must be a whole number from 1024 to 16777216',
  ],
  [
    { KEELSON_API_TOKEN: 'a'.repeat(20), KEELSON_NAMESPACE: 'Jobs_NS' },
    'KEELSON_NAMESPACE="Jobs_NS": must be a namespace name: 1-63 lowercase letters, digits or \'-\'',
  ],
  [
    { KEELSON_API_TOKEN: 'a'.repeat(20), KEELSON_KEY_PREFIX: 'acme.example' },
    'KEELSON_KEY_PREFIX="acme.example": must be a DNS subdomain followed by \'/\'',
  ],
])('bad settings %j stop start-up (exit 2) naming the setting', (env, message) => {
  const r = startUp(env);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('keelson api: invalid API settings:');
  expect(r.stderr).toContain(message);
});

test('a bad token file stops start-up naming the file, every bad line and what is wrong', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'keelson-api-')), 'tokens');
  writeFileSync(file, '# ops\nalice:read,admin:alice-token-0123456789\nbob:read:bob-token-0123456789\nshort\n');
  const r = startUp({ KEELSON_API_TOKENS_FILE: file });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(
    `KEELSON_API_TOKENS_FILE=${JSON.stringify(file)}: line 2: scope "admin" is not one of read, operate, deploy, metrics\n` +
      `KEELSON_API_TOKENS_FILE=${JSON.stringify(file)}: line 4: the token is shorter than 16 characters`,
  );
});

test('good settings: listens, /healthz answers, tokens from a file are accepted, SIGTERM stops it with exit 0', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'keelson-api-'));
  const tokens = join(dir, 'tokens');
  writeFileSync(
    tokens,
    '# operators\nfirst-token-0123456789\n\nsecond-token-0123456789\ngrafana:read:grafana-token-0123456789\n',
  );
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', main], {
    cwd: root,
    env: { ...baseEnv, KEELSON_API_PORT: '0', KEELSON_API_TOKENS_FILE: tokens, KEELSON_CLUSTER: 'api-main' },
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listen line in: ${stderr}`)), 30_000);
      child.stderr.on('data', () => {
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    expect(stderr).toContain('cluster api-main');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const list = (token: string) => fetch(`${url}/v1/rollouts`, { headers: { authorization: `Bearer ${token}` } });
    expect((await list('second-token-0123456789')).status).toBe(200);
    expect((await list('first-token-0123456789')).status).toBe(200);
    expect((await list('# operators')).status).toBe(401);
    expect((await list('grafana-token-0123456789')).status).toBe(200);
    const start = await fetch(`${url}/v1/rollouts`, {
      method: 'POST',
      headers: { authorization: 'Bearer grafana-token-0123456789', 'content-type': 'application/yaml' },
      body: 'kind: Skyhook\n',
    });
    expect(start.status).toBe(403);
    // The access log: one JSON line a request on stdout, naming the token's name as the actor. Written once the
    // answer is sent, it may reach the pipe a moment after it.
    for (let i = 0; i < 50 && stdout.trim().split('\n').length < 6; i++) await new Promise((r) => setTimeout(r, 100));
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.method, l.route, l.status, l.actor])).toEqual([
      ['GET', '/healthz', 200, null],
      ['GET', '/v1/rollouts', 200, 'api'],
      ['GET', '/v1/rollouts', 200, 'api'],
      ['GET', '/v1/rollouts', 401, null],
      ['GET', '/v1/rollouts', 200, 'grafana'],
      ['POST', '/v1/rollouts', 403, 'grafana'],
    ]);
    expect(typeof lines[0]!.durationMs).toBe('number');
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
});
