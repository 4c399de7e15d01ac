import type { Server as TlsServer } from 'node:tls';
import type { ApiToken } from '../model/access';
import { SettingsError } from '../workers/temporal-settings';
import { watchFiles, type WatchedFiles } from '../workers/watched-files';
import { loadTokens } from './auth';
import type { ApiSettings } from './settings';
import { apiTlsFiles, readApiTls } from './tls';

// The API's credentials follow their files while it runs: a changed token file replaces the accepted tokens, a
// changed certificate or key (or client CA) serves new connections; open connections keep what they began with. A
// new file that does not load leaves what is in use in place and is reported on stderr, naming the file and what is
// wrong, as at start-up; the next change is tried again.

export interface CredentialTargets {
  /** Takes the tokens of a token file that loaded. */
  setTokens(tokens: readonly ApiToken[]): void;
  /** The HTTPS server, when the API serves TLS. */
  server?: TlsServer;
  log(line: string): void;
}

/** What is wrong with a file, without start-up's heading. */
const problemOf = (err: unknown) =>
  err instanceof SettingsError
    ? err.message.replace(/^invalid API settings:\n/, '').replace(/\n/g, '; ')
    : err instanceof Error
      ? err.message
      : String(err);

/** Starts watching the token file and the TLS files the settings name; the answer's close() stops it. */
export async function reloadCredentials(settings: ApiSettings, targets: CredentialTargets): Promise<{ close(): void }> {
  const opts = { pollMs: settings.KEELSON_API_RELOAD_CHECK_SECONDS * 1000 };
  const watches: WatchedFiles[] = [];
  const tokenFile = settings.KEELSON_API_TOKENS_FILE;
  if (tokenFile) {
    const reloadTokens = () => {
      try {
        const tokens = loadTokens(settings);
        targets.setTokens(tokens);
        targets.log(`reloaded ${tokens.length} token(s) from ${tokenFile}`);
      } catch (err) {
        targets.log(`token file not reloaded, the tokens in use are kept: ${problemOf(err)}`);
      }
    };
    watches.push(await watchFiles([tokenFile], reloadTokens, opts));
  }
  const server = targets.server;
  if (server) {
    const reloadTls = () => {
      try {
        const tls = readApiTls(settings)!;
        server.setSecureContext({ cert: tls.cert, key: tls.key, ...(tls.clientCa && { ca: tls.clientCa }) });
        targets.log(`reloaded the TLS certificate from ${settings.KEELSON_API_TLS_CERT_FILE}`);
      } catch (err) {
        targets.log(`TLS files not reloaded, the certificate in use is kept: ${problemOf(err)}`);
      }
    };
    watches.push(await watchFiles(apiTlsFiles(settings), reloadTls, opts));
  }
  return { close: () => watches.forEach((w) => w.close()) };
}
