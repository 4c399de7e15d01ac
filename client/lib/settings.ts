import { z } from 'zod';
import { WorkerConfigSchema } from '../../workers/config';

// Settings of anything that talks to Temporal on Keelson's behalf (the API, the TS client): the worker's Temporal,
// task-queue and cluster settings, plus TLS, API key and the Temporal UI address.

const worker = WorkerConfigSchema.shape;

const bool = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

export const ClientSettingsSchema = z.object({
  TEMPORAL_ADDRESS: worker.TEMPORAL_ADDRESS,
  TEMPORAL_NAMESPACE: worker.TEMPORAL_NAMESPACE,
  KEELSON_TASK_QUEUE: worker.KEELSON_TASK_QUEUE,
  KEELSON_CLUSTER: worker.KEELSON_CLUSTER,
  TEMPORAL_API_KEY: z.string().min(1).optional().describe('Temporal Cloud API key (implies TLS)'),
  TEMPORAL_TLS: bool.default(false).describe('connect to Temporal with TLS'),
  TEMPORAL_TLS_CERT: z.string().min(1).optional().describe('client certificate file (mTLS; implies TLS)'),
  TEMPORAL_TLS_KEY: z.string().min(1).optional().describe('client key file (mTLS; with TEMPORAL_TLS_CERT)'),
  TEMPORAL_TLS_CA: z.string().min(1).optional().describe('CA certificate file of the Temporal server'),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional().describe('TLS server name override (SNI)'),
  TEMPORAL_UI_URL: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
    .default('http://127.0.0.1:8233')
    .transform((u) => u.replace(/\/+$/, ''))
    .describe('Temporal Web UI, for links in responses'),
});
export type ClientSettings = z.infer<typeof ClientSettingsSchema>;

export class SettingsError extends Error {
  override name = 'SettingsError';
}

/**
 * Reads the keys of an object schema from an environment (empty values count as unset). Throws SettingsError with
 * one `NAME="value": rule` line per bad setting.
 */
export function loadSettings<S extends z.ZodObject>(
  schema: S,
  what: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): z.infer<S> {
  const known = Object.fromEntries(Object.keys(schema.shape).map((k) => [k, env[k] === '' ? undefined : env[k]]));
  const parsed = schema.safeParse(known);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => {
    const key = String(issue.path[0]);
    return `${key}=${JSON.stringify(env[key] ?? '')}: ${issue.message}`;
  });
  throw new SettingsError(`invalid ${what} settings:\n${lines.join('\n')}`);
}

export function loadClientSettings(env: Readonly<Record<string, string | undefined>> = process.env): ClientSettings {
  const settings = loadSettings(ClientSettingsSchema, 'client', env);
  if (settings.TEMPORAL_TLS_CERT && !settings.TEMPORAL_TLS_KEY) {
    throw new SettingsError('invalid client settings:\nTEMPORAL_TLS_KEY="": is required with TEMPORAL_TLS_CERT');
  }
  return settings;
}
