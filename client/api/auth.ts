import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SettingsError } from '../lib/settings';
import type { ApiSettings } from './settings';

// Bearer-token auth. Tokens come from a file (one per line) and/or one environment variable. Every presented
// token is compared with every accepted one in constant time (both hashed first, so lengths never differ).

const MIN_TOKEN_LENGTH = 16;

export function loadTokens(settings: ApiSettings): string[] {
  const tokens: string[] = [];
  if (settings.KEELSON_API_TOKENS_FILE) {
    let text: string;
    try {
      text = readFileSync(settings.KEELSON_API_TOKENS_FILE, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new SettingsError(
        `invalid API settings:\nKEELSON_API_TOKENS_FILE=${JSON.stringify(settings.KEELSON_API_TOKENS_FILE)}: cannot be read (${code})`,
      );
    }
    const lines = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const short = lines.findIndex((l) => l.length < MIN_TOKEN_LENGTH);
    if (short >= 0) {
      throw new SettingsError(
        `invalid API settings:\nKEELSON_API_TOKENS_FILE=${JSON.stringify(settings.KEELSON_API_TOKENS_FILE)}: ` +
          `token ${short + 1} is shorter than ${MIN_TOKEN_LENGTH} characters`,
      );
    }
    tokens.push(...lines);
  }
  if (settings.KEELSON_API_TOKEN) tokens.push(settings.KEELSON_API_TOKEN);
  if (tokens.length === 0) {
    throw new SettingsError(
      `invalid API settings:\nKEELSON_API_TOKENS_FILE=${JSON.stringify(settings.KEELSON_API_TOKENS_FILE ?? '')}: holds no token`,
    );
  }
  return tokens;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** A checker of `Authorization` header values against the accepted tokens. */
export function tokenChecker(tokens: readonly string[]): (header: string | undefined) => boolean {
  const accepted = tokens.map(digest);
  return (header) => {
    const match = /^Bearer (\S+)$/.exec(header ?? '');
    if (!match) return false;
    const presented = digest(match[1]!);
    let ok = false;
    for (const a of accepted) ok = timingSafeEqual(a, presented) || ok;
    return ok;
  };
}
