import { caller } from './http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCOPED, startTestKeelson, type TestKeelson } from './stack';
import { skyhookYaml } from '../../harness/manifests';

// Auth, validation and hostile input, the OpenAPI document, /healthz and /metrics, over real HTTP.

let k: TestKeelson;
const call = caller(() => k);
const yaml = skyhookYaml('guarded', ['node-003'], { base: { version: '1.0.0' } });

beforeAll(async () => {
  k = await startTestKeelson('apig', { worker: false });
}, 120_000);

afterAll(async () => {
  await k?.stop();
});

describe('bearer-token auth', () => {
  test.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: `Bearer ${'x'.repeat(27)}` }],
    ['a token one character short', { authorization: `Bearer ${'test-token-0123456789abcde'}` }],
    ['another scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
  ])('%s: 401 on every protected route', async (_what, headers) => {
    for (const [method, path] of [
      ['GET', '/v1/rollouts'],
      ['GET', '/v1/rollouts/x'],
      ['POST', '/v1/rollouts'],
      ['GET', '/v1/nodes/node-001'],
      ['GET', '/metrics'],
      ['GET', '/openapi.json'],
    ] as const) {
      const res = await fetch(`${k.url}${path}`, { method, headers });
      expect([path, res.status]).toEqual([path, 401]);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.json()).toMatchObject({ error: 'unauthorized' });
    }
  });

  test('/healthz needs no token and reports Temporal reachable', async () => {
    const res = await fetch(`${k.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', temporal: 'ok' });
  });
});

describe('validation: 400 with field paths', () => {
  test('an invalid package names the field path', async () => {
    const bad = skyhookYaml('guarded', ['node-003'], { base: { version: 'not a version' } });
    const r = await call('POST', '/v1/rollouts', bad, 'application/yaml');
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid');
    expect(r.body.errors).toEqual([expect.objectContaining({ path: 'Skyhook/guarded.spec.packages.base.version' })]);
  });

  test('JSON with a missing field and an unknown kind', async () => {
    const r = await call('POST', '/v1/rollouts', [
      { kind: 'Skyhook', apiVersion: 'skyhook.nvidia.com/v1alpha1' },
      { kind: 'Pod' },
    ]);
    expect(r.status).toBe(400);
    const paths = (r.body.errors as { path: string }[]).map((e) => e.path);
    expect(paths).toContain('document[0].metadata');
    expect(paths).toContain('document[1].kind');
  });

  test('two rollouts in one body, none, not YAML, an empty body', async () => {
    const two = `${yaml}\n---\n${skyhookYaml('guarded-2', ['node-003'], { base: { version: '1.0.0' } })}`;
    expect((await call('POST', '/v1/rollouts', two, 'application/yaml')).body.errors).toEqual([
      { path: 'body', message: 'holds 2 rollouts (guarded, guarded-2); send one per request' },
    ]);
    const none = await call('POST', '/v1/rollouts', 'a: 1\n', 'application/yaml');
    expect(none.status).toBe(400);
    expect(none.body.errors[0].path).toBe('document[0].kind');
    const notYaml = await call('POST', '/v1/rollouts', 'a: [1, 2\n', 'application/yaml');
    expect(notYaml.status).toBe(400);
    expect(notYaml.body.errors[0].message).toMatch(/^manifest is not valid YAML/);
    const empty = await call('POST', '/v1/rollouts', '', 'application/yaml');
    expect(empty.status).toBe(400);
  });

  test('bad path parameters and bodies of the steering routes', async () => {
    const badName = await call('GET', '/v1/rollouts/Not_A_Name');
    expect(badName.status).toBe(400);
    expect(badName.body.errors[0].path).toBe('params.name');
    const extra = await call('POST', '/v1/rollouts/x/pause', { reason: 'r', sudo: true });
    expect(extra.status).toBe(400);
    expect(extra.body.errors).toEqual([
      { path: 'body.sudo', message: 'unknown field; the fields here are reason, actor' },
    ]);
    const reset = await call('POST', '/v1/nodes/node-001/reset', { rollout: 7 });
    expect(reset.status).toBe(400);
    expect(reset.body.errors).toEqual([{ path: 'body.rollout', message: 'expected string, got 7' }]);
  });
});

describe('hostile input never crashes the API', () => {
  test('malformed JSON, prototype pollution, wrong content type, a body over the limit, YAML alias bombs', async () => {
    const malformed = await call('POST', '/v1/rollouts', '{"kind": ', 'application/json');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('invalid');
    const proto = await call('POST', '/v1/rollouts', '{"__proto__": {"admin": true}}', 'application/json');
    expect(proto.status).toBe(400);
    const xml = await call('POST', '/v1/rollouts', '<a/>', 'application/xml');
    expect(xml.status).toBe(415);
    const huge = await call('POST', '/v1/rollouts', `${yaml}\n# ${'x'.repeat(70 * 1024)}\n`, 'application/yaml');
    expect(huge.status).toBe(413);
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 8 }, (_, i) => {
        const prev = i === 0 ? 'a' : `b${i - 1}`;
        return `b${i}: &b${i} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`;
      }),
    ].join('\n');
    const started = Date.now();
    const aliases = await call('POST', '/v1/rollouts', bomb, 'application/yaml');
    expect(aliases.status).toBe(400);
    expect(Date.now() - started).toBeLessThan(2_000);
    const deep = await call('POST', '/v1/rollouts', `${'['.repeat(5000)}${']'.repeat(5000)}`, 'application/json');
    expect(deep.status).toBe(400);
    expect((await fetch(`${k.url}/healthz`)).status).toBe(200);
  });
});

test('GET /openapi.json: every route of docs/api.md, with schemas generated from the model', async () => {
  const r = await call('GET', '/openapi.json');
  expect(r.status).toBe(200);
  expect(r.body.openapi).toBe('3.1.0');
  expect(Object.keys(r.body.paths).sort()).toEqual(
    [
      '/healthz',
      '/metrics',
      '/openapi.json',
      '/v1/nodes/ignore',
      '/v1/nodes/unignore',
      '/v1/nodes/{node}',
      '/v1/nodes/{node}/logs',
      '/v1/nodes/{node}/rerun',
      '/v1/nodes/{node}/reset',
      '/v1/rollouts',
      '/v1/rollouts/{name}',
      '/v1/rollouts/{name}/disable',
      '/v1/rollouts/{name}/enable',
      '/v1/rollouts/{name}/pause',
      '/v1/rollouts/{name}/reset-batches',
      '/v1/rollouts/{name}/resume',
      '/v1/version',
    ].sort(),
  );
  const schemas = r.body.components.schemas;
  expect(schemas.RolloutManifest.properties.spec.properties.packages).toBeDefined();
  expect(schemas.RerunBody.properties.stage.enum).toEqual([
    'uninstall',
    'upgrade',
    'apply',
    'config',
    'interrupt',
    'post-interrupt',
  ]);
  expect(schemas.ControlBody.required).toEqual(['reason']);
  expect(Object.keys(schemas.IgnoreBody.properties)).toEqual(['nodes', 'selector']);
  expect(schemas.IgnoreAnswer.properties.results.items.properties.outcome.enum).toContain('already ignored');
  const logs = r.body.paths['/v1/nodes/{node}/logs'].get;
  expect(logs.parameters.map((p: { name: string; required: boolean }) => `${p.name}${p.required ? '' : '?'}`)).toEqual([
    'node',
    'rollout',
    'package',
    'stage?',
    'container?',
    'tail?',
    'follow?',
  ]);
  expect(r.body.paths['/v1/rollouts'].post.responses['409']).toBeDefined();
});

test('GET /v1/version: the version of package.json, for a read token; 403 for a token without read', async () => {
  const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const r = await call('GET', '/v1/version');
  expect([r.status, r.body]).toEqual([200, { version, api: 'v1' }]);
  const reader = await caller(() => ({ url: k.url, token: SCOPED.reader.token }))('GET', '/v1/version');
  expect(reader.status).toBe(200);
  const deployer = await caller(() => ({ url: k.url, token: SCOPED.deployer.token }))('GET', '/v1/version');
  expect(deployer.status).toBe(403);
});

test('GET /metrics counts requests by route and status', async () => {
  await call('GET', '/v1/rollouts/Not_A_Name');
  const r = await call('GET', '/metrics');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toContain('text/plain');
  expect(r.text).toMatch(/keelson_api_requests_total\{method="GET",route="\/v1\/rollouts\/:name",status="400"\} [1-9]/);
  expect(r.text).toMatch(/keelson_api_requests_total\{method="POST",route="\/v1\/rollouts",status="401"\} [1-9]/);
  expect(r.text).toContain('keelson_api_request_duration_seconds_bucket');
});

test('unknown routes: 404 with a message', async () => {
  const r = await call('GET', '/v1/nothing');
  expect(r.status).toBe(404);
  expect(r.body).toEqual({ error: 'not_found', message: 'no route GET /v1/nothing' });
});
