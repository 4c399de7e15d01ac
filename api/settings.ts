import { z } from 'zod';
import { WorkerConfigSchema } from '../workers/config';
import { ImagePolicySettingsSchema } from '../workers/image-policy-settings';
import { loadSettings, SettingsError } from '../workers/temporal-settings';
import { ClientSettingsSchema } from '../client/settings';

// Every API setting in one schema read from the environment: the client's Temporal settings plus the listener,
// the token source, the body size limit, the image policy, and the Kubernetes access of `node ignore` and `logs`
// (the worker's settings of the same names). A bad value stops start-up with a message naming it.

export const ApiSettingsSchema = ClientSettingsSchema.extend({
  KEELSON_API_HOST: z
    .string()
    .regex(/^[A-Za-z0-9.:-]+$/, 'must be a host name or IP address')
    .default('127.0.0.1')
    .describe('address the API listens on'),
  KEELSON_API_PORT: z.coerce
    .number()
    .int('must be a whole number from 0 to 65535')
    .min(0, 'must be a whole number from 0 to 65535')
    .max(65_535, 'must be a whole number from 0 to 65535')
    .default(7480)
    .describe('port the API listens on (0: any free port)'),
  KEELSON_API_TOKENS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('file of accepted bearer tokens, one per line (# comments and blank lines ignored)'),
  KEELSON_API_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe('one accepted bearer token'),
  KEELSON_API_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int('must be a whole number from 1024 to 16777216')
    .min(1024, 'must be a whole number from 1024 to 16777216')
    .max(16 * 1024 * 1024, 'must be a whole number from 1024 to 16777216')
    .default(1024 * 1024)
    .describe('largest request body accepted'),
  ...ImagePolicySettingsSchema.shape,
  KUBECONFIG: WorkerConfigSchema.shape.KUBECONFIG,
  KEELSON_NAMESPACE: WorkerConfigSchema.shape.KEELSON_NAMESPACE.describe(
    'namespace of stage Jobs, whose pods `GET /v1/nodes/:node/logs` reads',
  ),
  KEELSON_KEY_PREFIX: WorkerConfigSchema.shape.KEELSON_KEY_PREFIX.describe(
    "the worker's node-state key prefix: `node ignore` sets its ignore label too",
  ),
});
export type ApiSettings = z.infer<typeof ApiSettingsSchema>;

export function loadApiSettings(env: Readonly<Record<string, string | undefined>> = process.env): ApiSettings {
  const settings = loadSettings(ApiSettingsSchema, 'API', env);
  if (!settings.KEELSON_API_TOKENS_FILE && !settings.KEELSON_API_TOKEN) {
    throw new SettingsError(
      'invalid API settings:\nKEELSON_API_TOKENS_FILE="", KEELSON_API_TOKEN="": one of them must be set (the API never runs without auth)',
    );
  }
  return settings;
}
