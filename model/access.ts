import { z } from 'zod';

// Who may call which API route. A token has a name (the actor recorded with every change it makes) and scopes; each
// route needs one of the scopes the table below gives it. Pure: the API reads the token file and applies the table.

export const ScopeSchema = z.enum(['read', 'operate', 'deploy', 'metrics']);
export type Scope = z.infer<typeof ScopeSchema>;

/** The actor of a token that has no name: `KEELSON_API_TOKEN`, or a bare line of the token file. */
export const DEFAULT_ACTOR = 'api';
export const MIN_TOKEN_LENGTH = 16;
const TOKEN_NAME = /^[a-z0-9]([a-z0-9._@-]{0,62}[a-z0-9])?$/;

export const ApiTokenSchema = z.object({
  name: z.string().regex(TOKEN_NAME),
  scopes: z.array(ScopeSchema).min(1),
  token: z.string().min(MIN_TOKEN_LENGTH),
});
export type ApiToken = z.infer<typeof ApiTokenSchema>;

/** A token without name or scopes: every scope, under the default actor name. */
export function unnamedToken(token: string): ApiToken {
  return { name: DEFAULT_ACTOR, scopes: [...ScopeSchema.options], token };
}

export interface TokenLineError {
  line: number;
  message: string;
}

function parseLine(text: string): ApiToken | string {
  const first = text.indexOf(':');
  if (first < 0) {
    return text.length < MIN_TOKEN_LENGTH
      ? `the token is shorter than ${MIN_TOKEN_LENGTH} characters`
      : unnamedToken(text);
  }
  const second = text.indexOf(':', first + 1);
  if (second < 0) return 'expected name:scope[,scope...]:token, or a bare token without ":"';
  const name = text.slice(0, first);
  const scopes = text.slice(first + 1, second).split(',');
  const token = text.slice(second + 1);
  if (!TOKEN_NAME.test(name)) {
    return `name ${JSON.stringify(name)} must be 1 to 64 lowercase letters, digits, ".", "_", "@" or "-", starting and ending with a letter or digit`;
  }
  const unknown = scopes.find((s) => !ScopeSchema.safeParse(s).success);
  if (unknown !== undefined) {
    return `scope ${JSON.stringify(unknown)} is not one of ${ScopeSchema.options.join(', ')}`;
  }
  if (token.length < MIN_TOKEN_LENGTH) return `the token of ${name} is shorter than ${MIN_TOKEN_LENGTH} characters`;
  return { name, scopes: [...new Set(scopes as Scope[])], token };
}

/**
 * The tokens of a token file: one `name:scope[,scope...]:token` or one bare token a line (every scope, actor
 * DEFAULT_ACTOR); blank lines and `#` comments ignored. Every bad line is reported with its number; a token given
 * twice is refused, as its actor would be ambiguous.
 */
export function parseTokenFile(text: string): { tokens: ApiToken[]; errors: TokenLineError[] } {
  const tokens: ApiToken[] = [];
  const errors: TokenLineError[] = [];
  const seen = new Map<string, number>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parsed = parseLine(line);
    if (typeof parsed === 'string') return void errors.push({ line: i + 1, message: parsed });
    const earlier = seen.get(parsed.token);
    if (earlier !== undefined) return void errors.push({ line: i + 1, message: `the same token as line ${earlier}` });
    seen.set(parsed.token, i + 1);
    tokens.push(parsed);
  });
  return { tokens, errors };
}

/** Anyone (`public`), any valid token (`any`), or a token with one of the scopes listed. */
export type RouteAccess = 'public' | 'any' | readonly Scope[];

const ROUTE_ACCESS: Record<string, RouteAccess> = {
  'GET /healthz': 'public',
  'GET /openapi.json': 'any',
  'GET /metrics': ['metrics', 'read'],
  'GET /v1/rollouts': ['read'],
  'GET /v1/rollouts/:name': ['read'],
  'GET /v1/nodes/:node': ['read'],
  'GET /v1/nodes/:node/logs': ['read'],
  'POST /v1/rollouts': ['deploy'],
  'PUT /v1/rollouts/:name': ['deploy'],
  'DELETE /v1/rollouts/:name': ['deploy'],
  'POST /v1/rollouts/:name/pause': ['operate'],
  'POST /v1/rollouts/:name/resume': ['operate'],
  'POST /v1/rollouts/:name/disable': ['operate'],
  'POST /v1/rollouts/:name/enable': ['operate'],
  'POST /v1/rollouts/:name/reset-batches': ['operate'],
  'POST /v1/nodes/:node/rerun': ['operate'],
  'POST /v1/nodes/:node/reset': ['operate'],
  'POST /v1/nodes/ignore': ['operate'],
  'POST /v1/nodes/unignore': ['operate'],
};

/**
 * What a route (method and Fastify route pattern) needs: a request matching no route needs a valid token (and is
 * answered 404); a route missing from the table is undefined, and the server refuses to register it.
 */
export function routeAccess(method: string, route: string | undefined): RouteAccess | undefined {
  if (route === undefined) return 'any';
  // HEAD is answered by the GET route.
  return ROUTE_ACCESS[`${method === 'HEAD' ? 'GET' : method} ${route}`];
}

/** The scopes of a route that the token lacks, or [] when it may call it. */
export function missingScopes(access: RouteAccess, scopes: readonly Scope[]): readonly Scope[] {
  if (access === 'public' || access === 'any') return [];
  return access.some((s) => scopes.includes(s)) ? [] : access;
}
