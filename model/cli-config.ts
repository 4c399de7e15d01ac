import { parseDocument } from 'yaml';
import { z } from 'zod';
import { describeValue, errorMap, toValidationErrors } from './manifests/validation-error';

// The CLI's config file (~/.config/keelson/config.yaml, or $KEELSON_CONFIG): named contexts, each an API URL and a
// token (inline, or read from a file), and the one in use. Pure: client/cli-config-file.ts reads and writes it.

export const DEFAULT_API_URL = 'http://127.0.0.1:7480';

const CONTEXT_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$/;

export const ContextNameSchema = z
  .string()
  .regex(CONTEXT_NAME, 'must be 1 to 64 letters, digits, ".", "_" or "-", starting and ending with a letter or digit');

export const ApiUrlSchema = z
  .url({
    protocol: /^https?$/,
    error: (iss) => (iss.input === undefined ? undefined : `${describeValue(iss.input)} is not an http(s) URL`),
  })
  .transform((u) => u.replace(/\/+$/, ''));

export const CliContextSchema = z
  .strictObject({
    name: ContextNameSchema,
    url: ApiUrlSchema,
    token: z.string().min(1).optional(),
    /** Read when the context is used; relative to the config file's folder. */
    tokenFile: z.string().min(1).optional(),
  })
  .refine((c) => c.token === undefined || c.tokenFile === undefined, {
    message: 'give token or tokenFile, not both',
    path: ['tokenFile'],
  });
export type CliContext = z.infer<typeof CliContextSchema>;

export const CliConfigSchema = z
  .strictObject({
    'current-context': ContextNameSchema.optional(),
    contexts: z.array(CliContextSchema).default([]),
  })
  .superRefine((config, ctx) => {
    const seen = new Set<string>();
    config.contexts.forEach((c, i) => {
      if (seen.has(c.name))
        ctx.addIssue({ code: 'custom', path: ['contexts', i, 'name'], message: `"${c.name}" is given twice` });
      seen.add(c.name);
    });
    const current = config['current-context'];
    if (current !== undefined && !seen.has(current)) {
      ctx.addIssue({
        code: 'custom',
        path: ['current-context'],
        message: `"${current}" is not a context of this file (${namesOf(config.contexts)})`,
      });
    }
  });
export type CliConfig = z.infer<typeof CliConfigSchema>;

export const EMPTY_CLI_CONFIG: CliConfig = { contexts: [] };

const namesOf = (contexts: readonly CliContext[]) =>
  contexts.length ? `contexts: ${contexts.map((c) => c.name).join(', ')}` : 'it has no contexts';

/** The config in `text` (read from `file`), or one `file: field: message` line per problem. Empty text: no contexts. */
export function parseCliConfig(text: string, file: string): { config: CliConfig } | { errors: string[] } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return { errors: doc.errors.map((e) => `${file}: ${e.message.split('\n')[0]}`) };
  const value: unknown = doc.toJS() ?? {};
  const parsed = CliConfigSchema.safeParse(value, { error: errorMap });
  if (parsed.success) return { config: parsed.data };
  return {
    errors: toValidationErrors('', parsed.error).map(
      (e) => `${file}: ${e.path.replace(/^\./, '') || '(top)'}: ${e.message}`,
    ),
  };
}

/** Where a setting came from, for messages: a flag, a variable, or a context of the config file. */
export type SettingSource = string;

/** The token to send: given as is, or the path of a file holding it (relative to the config file's folder). */
export type TokenSetting = { token: string; from: SettingSource } | { tokenFile: string; from: SettingSource };

export interface ApiTarget {
  url: string;
  urlFrom: SettingSource;
  token?: TokenSetting;
  /** The context used, if any. */
  context?: string;
}

export interface TargetFlags {
  apiUrl?: string;
  token?: string;
  context?: string;
}

/**
 * The API and token to use. Each setting on its own: a flag (`--api-url`, `--token`) wins over the environment
 * (KEELSON_API_URL, KEELSON_API_TOKEN), which wins over the context (`--context`, else KEELSON_CONTEXT, else the
 * file's current-context); the URL defaults to DEFAULT_API_URL. Errors name the flag, variable or field.
 */
export function resolveApiTarget(
  flags: TargetFlags,
  env: Readonly<Record<string, string | undefined>>,
  config: CliConfig,
  file: string,
): { target: ApiTarget } | { error: string } {
  const contextName = flags.context ?? (env.KEELSON_CONTEXT || undefined) ?? config['current-context'];
  const contextFrom =
    flags.context !== undefined ? '--context' : env.KEELSON_CONTEXT ? 'KEELSON_CONTEXT' : `${file}: current-context`;
  let context: CliContext | undefined;
  if (contextName !== undefined) {
    context = config.contexts.find((c) => c.name === contextName);
    if (!context)
      return { error: `${contextFrom}: "${contextName}" is not a context of ${file} (${namesOf(config.contexts)})` };
  }
  const urls: [string | undefined, SettingSource][] = [
    [flags.apiUrl, '--api-url'],
    [env.KEELSON_API_URL || undefined, 'KEELSON_API_URL'],
    [context?.url, `context ${contextName}`],
    [DEFAULT_API_URL, 'default'],
  ];
  const [rawUrl, urlFrom] = urls.find(([u]) => u !== undefined)!;
  const url = ApiUrlSchema.safeParse(rawUrl);
  if (!url.success) return { error: `${urlFrom}: ${url.error.issues[0]!.message}` };
  if (flags.token === '') return { error: '--token: is empty; give the token, or leave the flag out' };
  const token: TokenSetting | undefined =
    flags.token !== undefined
      ? { token: flags.token, from: '--token' }
      : env.KEELSON_API_TOKEN
        ? { token: env.KEELSON_API_TOKEN, from: 'KEELSON_API_TOKEN' }
        : context?.token !== undefined
          ? { token: context.token, from: `context ${contextName}` }
          : context?.tokenFile !== undefined
            ? { tokenFile: context.tokenFile, from: `context ${contextName}` }
            : undefined;
  return {
    target: {
      url: url.data,
      urlFrom,
      ...(token && { token }),
      ...(context && { context: context.name }),
    },
  };
}

/** `keelson config use-context NAME`: the config with NAME current, or the error naming the contexts there are. */
export function useContext(config: CliConfig, name: string, file: string): { config: CliConfig } | { error: string } {
  if (!config.contexts.some((c) => c.name === name))
    return { error: `context "${name}" is not in ${file} (${namesOf(config.contexts)})` };
  return { config: { ...config, 'current-context': name } };
}

export interface ContextChange {
  name: string;
  url?: string;
  token?: string;
  tokenFile?: string;
}

/**
 * `keelson config set-context NAME [--url U] [--token T | --token-file F]`: adds the context (a URL is needed then)
 * or changes the fields given; a token replaces a token file and the other way round. The first context becomes
 * current.
 */
export function setContext(config: CliConfig, change: ContextChange): { config: CliConfig } | { error: string } {
  const name = ContextNameSchema.safeParse(change.name);
  if (!name.success) return { error: `context name "${change.name}": ${name.error.issues[0]!.message}` };
  if (change.token !== undefined && change.tokenFile !== undefined)
    return { error: '--token and --token-file: give one of them, not both' };
  const old = config.contexts.find((c) => c.name === change.name);
  const url = change.url ?? old?.url;
  if (url === undefined) return { error: `context "${change.name}" is new: give its --url` };
  const parsedUrl = ApiUrlSchema.safeParse(url);
  if (!parsedUrl.success) return { error: `--url: ${parsedUrl.error.issues[0]!.message}` };
  const auth =
    change.token !== undefined
      ? { token: change.token }
      : change.tokenFile !== undefined
        ? { tokenFile: change.tokenFile }
        : {
            ...(old?.token !== undefined && { token: old.token }),
            ...(old?.tokenFile !== undefined && { tokenFile: old.tokenFile }),
          };
  const context: CliContext = { name: change.name, url: parsedUrl.data, ...auth };
  const contexts = old
    ? config.contexts.map((c) => (c.name === change.name ? context : c))
    : [...config.contexts, context];
  return { config: { ...config, 'current-context': config['current-context'] ?? change.name, contexts } };
}
