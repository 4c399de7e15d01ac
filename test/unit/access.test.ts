import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTokens } from '../../api/auth';
import { loadApiSettings } from '../../api/settings';
import { DEFAULT_ACTOR, missingScopes, parseTokenFile, routeAccess, ScopeSchema, type Scope } from '../../model/access';

// The token file's format and who may call which route (model/access.ts), without I/O; the last test reads a file as
// the API does (api/auth.ts).

describe('token file', () => {
  test('named tokens with scopes, old bare tokens, comments and blank lines', () => {
    const { tokens, errors } = parseTokenFile(
      [
        '# operators',
        'alice:read,operate:alice-token-0123456789',
        '',
        '  ci:deploy,read:ci-token-with:colons-0123  ',
        'legacy-bare-token-0123456789',
        'prom:metrics:prom-token-0123456789\r',
      ].join('\n'),
    );
    expect(errors).toEqual([]);
    expect(tokens).toEqual([
      { name: 'alice', scopes: ['read', 'operate'], token: 'alice-token-0123456789' },
      { name: 'ci', scopes: ['deploy', 'read'], token: 'ci-token-with:colons-0123' },
      { name: DEFAULT_ACTOR, scopes: ScopeSchema.options, token: 'legacy-bare-token-0123456789' },
      { name: 'prom', scopes: ['metrics'], token: 'prom-token-0123456789' },
    ]);
  });

  test('every bad line is named with its number and what is wrong', () => {
    const { tokens, errors } = parseTokenFile(
      [
        'short',
        'alice:read:alice-token-0123456789',
        'bob:admin:bob-token-0123456789',
        'Bob:read:bob-token-0123456789',
        'carol:read:short',
        'dave:dave-token-0123456789',
        'erin:read:alice-token-0123456789',
        'frank::frank-token-0123456789',
      ].join('\n'),
    );
    expect(tokens.map((t) => t.name)).toEqual(['alice']);
    expect(errors).toEqual([
      { line: 1, message: 'the token is shorter than 16 characters' },
      { line: 3, message: 'scope "admin" is not one of read, operate, deploy, metrics' },
      { line: 4, message: expect.stringMatching(/^name "Bob" must be 1 to 64 lowercase letters/) },
      { line: 5, message: 'the token of carol is shorter than 16 characters' },
      { line: 6, message: 'expected name:scope[,scope...]:token, or a bare token without ":"' },
      { line: 7, message: 'the same token as line 2' },
      { line: 8, message: 'scope "" is not one of read, operate, deploy, metrics' },
    ]);
  });
});

describe('scopes per route', () => {
  const may = (method: string, route: string | undefined, scopes: Scope[]) => {
    const access = routeAccess(method, route);
    if (access === undefined) throw new Error(`no rule for ${method} ${route}`);
    return missingScopes(access, scopes).length === 0;
  };
  const reads = [
    ['GET', '/v1/rollouts'],
    ['GET', '/v1/rollouts/:name'],
    ['HEAD', '/v1/rollouts/:name'],
    ['GET', '/v1/nodes/:node'],
    ['GET', '/v1/nodes/:node/logs'],
  ] as const;
  const operates = [
    ...['pause', 'resume', 'disable', 'enable', 'reset-batches'].map(
      (k) => ['POST', `/v1/rollouts/:name/${k}`] as const,
    ),
    ['POST', '/v1/nodes/:node/rerun'],
    ['POST', '/v1/nodes/:node/reset'],
    ['POST', '/v1/nodes/ignore'],
    ['POST', '/v1/nodes/unignore'],
  ] as const;
  const deploys = [
    ['POST', '/v1/rollouts'],
    ['PUT', '/v1/rollouts/:name'],
    ['DELETE', '/v1/rollouts/:name'],
  ] as const;

  test.each([
    ['read', reads],
    ['operate', operates],
    ['deploy', deploys],
  ] as const)('%s routes take that scope and no other', (scope, routes) => {
    for (const [method, route] of routes) {
      expect([method, route, may(method, route, [scope])]).toEqual([method, route, true]);
      for (const other of ScopeSchema.options.filter((s) => s !== scope)) {
        expect([method, route, other, may(method, route, [other])]).toEqual([method, route, other, false]);
      }
      expect(may(method, route, [...ScopeSchema.options])).toBe(true);
    }
  });

  test('/metrics: metrics or read, never needing deploy; /healthz public; documents and 404s any token', () => {
    expect(may('GET', '/metrics', ['metrics'])).toBe(true);
    expect(may('GET', '/metrics', ['read'])).toBe(true);
    expect(may('GET', '/metrics', ['deploy'])).toBe(false);
    expect(routeAccess('GET', '/healthz')).toBe('public');
    expect(routeAccess('GET', '/openapi.json')).toBe('any');
    expect(routeAccess('GET', undefined)).toBe('any');
  });

  test('a route without a rule has no access (the server refuses to register it)', () => {
    expect(routeAccess('PATCH', '/v1/rollouts/:name')).toBeUndefined();
    expect(routeAccess('POST', '/v1/rollouts/:name/ignore')).toBeUndefined();
  });
});

test('a token given both in the file (scoped) and as KEELSON_API_TOKEN (every scope) is refused, not widened', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-tokens-'));
  const file = path.join(dir, 'tokens');
  const secret = 'r'.repeat(32);
  fs.writeFileSync(file, `viewer:read:${secret}\n`);
  const settings = loadApiSettings({ KEELSON_API_TOKENS_FILE: file, KEELSON_API_TOKEN: secret });
  expect(() => loadTokens(settings)).toThrow(
    'KEELSON_API_TOKEN="<redacted>": is also token viewer of KEELSON_API_TOKENS_FILE; give each token once',
  );
  const other = loadApiSettings({ KEELSON_API_TOKENS_FILE: file, KEELSON_API_TOKEN: 'u'.repeat(32) });
  expect(loadTokens(other).map((t) => t.name)).toEqual(['viewer', 'api']);
  fs.rmSync(dir, { recursive: true });
});
