import { resolveApiTarget, type TargetFlags } from '../model/cli-config';
import { cliConfigPath, readCliConfig, tokenOf } from './cli-config-file';
import { ApiClient } from './http-client';
import { clientTlsFromEnv } from './tls-fetch';

// The API client of one CLI run: flags, then the environment, then the config file's context
// (model/cli-config.ts, resolveApiTarget); for an https URL, the CA and client certificate files of the environment.

export function apiClientFor(
  flags: TargetFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
  timeoutMs?: number,
): ApiClient {
  const file = cliConfigPath(env);
  const resolved = resolveApiTarget(flags, env, readCliConfig(file), file);
  if ('error' in resolved) throw new Error(resolved.error);
  const { url, token } = resolved.target;
  return new ApiClient(url, token && tokenOf(token, file), timeoutMs, clientTlsFromEnv(env));
}
