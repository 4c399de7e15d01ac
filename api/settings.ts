import { z } from 'zod';
import { WorkerConfigSchema } from '../workers/config';
import { ImagePolicySettingsSchema } from '../workers/image-policy-settings';
import { loadSettings, SettingsError } from '../workers/temporal-settings';
import { ClientSettingsSchema } from '../client/settings';

// Every API setting in one schema read from the environment: the client's Temporal settings plus the listener and
// its TLS files, the token source, the body size limit, the image policy, and the Kubernetes access of `node ignore`
// and `logs` (the worker's settings of the same names). A bad value stops start-up with a message naming it.

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
  KEELSON_API_TLS_CERT_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('PEM certificate (chain) the API serves HTTPS with (with KEELSON_API_TLS_KEY_FILE); unset: plain HTTP'),
  KEELSON_API_TLS_KEY_FILE: z.string().min(1).optional().describe('PEM private key of KEELSON_API_TLS_CERT_FILE'),
  KEELSON_API_TLS_CLIENT_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('PEM CA certificates: when set, every client must present a certificate they signed (mTLS)'),
  KEELSON_API_RELOAD_CHECK_SECONDS: z.coerce
    .number()
    .int('must be a whole number from 1 to 3600')
    .min(1, 'must be a whole number from 1 to 3600')
    .max(3600, 'must be a whole number from 1 to 3600')
    .default(30)
    .describe('how often the token and TLS files are compared with what is loaded, besides file-change events'),
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
  const cert = settings.KEELSON_API_TLS_CERT_FILE;
  const key = settings.KEELSON_API_TLS_KEY_FILE;
  if (!cert !== !key) {
    const [missing, given, value] = cert
      ? ['KEELSON_API_TLS_KEY_FILE', 'KEELSON_API_TLS_CERT_FILE', cert]
      : ['KEELSON_API_TLS_CERT_FILE', 'KEELSON_API_TLS_KEY_FILE', key];
    throw new SettingsError(
      `invalid API settings:\n${missing}="": must be set together with ${given} (${JSON.stringify(value)}) for HTTPS`,
    );
  }
  if (settings.KEELSON_API_TLS_CLIENT_CA_FILE && !cert) {
    throw new SettingsError(
      `invalid API settings:\nKEELSON_API_TLS_CLIENT_CA_FILE=${JSON.stringify(settings.KEELSON_API_TLS_CLIENT_CA_FILE)}: ` +
        'client certificates need HTTPS: set KEELSON_API_TLS_CERT_FILE and KEELSON_API_TLS_KEY_FILE too',
    );
  }
  return settings;
}
