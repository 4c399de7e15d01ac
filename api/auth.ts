import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseTokenFile, unnamedToken, type ApiToken } from '../model/access';
import { SettingsError } from '../workers/temporal-settings';
import type { ApiSettings } from './settings';

// Bearer-token auth. Named, scoped tokens come from a file (model/access.ts has its format) and/or one unnamed
// token from the environment. Every presented token is compared with every accepted one in constant time (both
// hashed first, so lengths never differ).

export function loadTokens(settings: ApiSettings): ApiToken[] {
  const tokens: ApiToken[] = [];
  const file = settings.KEELSON_API_TOKENS_FILE;
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new SettingsError(
        `invalid API settings:\nKEELSON_API_TOKENS_FILE=${JSON.stringify(file)}: cannot be read (${code})`,
      );
    }
    const parsed = parseTokenFile(text);
    if (parsed.errors.length > 0) {
      const lines = parsed.errors.map(
        (e) => `KEELSON_API_TOKENS_FILE=${JSON.stringify(file)}: line ${e.line}: ${e.message}`,
      );
      throw new SettingsError(`invalid API settings:\n${lines.join('\n')}`);
    }
    tokens.push(...parsed.tokens);
  }
  if (settings.KEELSON_API_TOKEN) {
    // One token, one set of scopes: the unnamed token has them all, so it must not also be a scoped one.
    const scoped = tokens.find((t) => t.token === settings.KEELSON_API_TOKEN);
    if (scoped) {
      throw new SettingsError(
        `invalid API settings:\nKEELSON_API_TOKEN="<redacted>": is also token ${scoped.name} of KEELSON_API_TOKENS_FILE; give each token once`,
      );
    }
    tokens.push(unnamedToken(settings.KEELSON_API_TOKEN));
  }
  if (tokens.length === 0) {
    throw new SettingsError(
      `invalid API settings:\nKEELSON_API_TOKENS_FILE=${JSON.stringify(file ?? '')}: holds no token`,
    );
  }
  return tokens;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The accepted token an `Authorization` header value presents, or undefined. `tokens` may be a function giving the
 * tokens accepted now: each new set it returns is hashed once, when first used.
 */
export function tokenChecker(
  tokens: readonly ApiToken[] | (() => readonly ApiToken[]),
): (header: string | undefined) => ApiToken | undefined {
  const current = typeof tokens === 'function' ? tokens : () => tokens;
  let hashedFrom: readonly ApiToken[] | undefined;
  let accepted: { t: ApiToken; d: Buffer }[] = [];
  return (header) => {
    const match = /^Bearer (\S+)$/.exec(header ?? '');
    if (!match) return undefined;
    const now = current();
    if (now !== hashedFrom) {
      accepted = now.map((t) => ({ t, d: digest(t.token) }));
      hashedFrom = now;
    }
    const presented = digest(match[1]!);
    let found: ApiToken | undefined;
    for (const a of accepted) if (timingSafeEqual(a.d, presented)) found = a.t;
    return found;
  };
}
