import { z } from 'zod';

// Settings read from the environment: one schema of the Temporal connection's settings, one reader and one error for
// the worker, the API, the controller and the client library. The credentials they name: workers/temporal-credentials.ts.

export class SettingsError extends Error {
  override name = 'SettingsError';
}

export const bool = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

/** A whole number of seconds within bounds, with its default. */
export const seconds = (min: number, max: number, fallback: number) =>
  z.coerce
    .number({ message: `must be a whole number of seconds from ${min} to ${max}` })
    .int(`must be a whole number of seconds from ${min} to ${max}`)
    .min(min, `must be a whole number of seconds from ${min} to ${max}`)
    .max(max, `must be a whole number of seconds from ${min} to ${max}`)
    .default(fallback);

export const TemporalSettingsSchema = z.object({
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')
    .default('127.0.0.1:7233')
    .describe('Temporal frontend'),
  TEMPORAL_NAMESPACE: z.string().min(1, 'must not be empty').default('default').describe('Temporal namespace'),
  TEMPORAL_TLS: bool
    .default(false)
    .describe('connect to Temporal with TLS (implied by the certificate, CA or API key)'),
  TEMPORAL_TLS_CERT: z.string().min(1).optional().describe('client certificate file for mTLS (with TEMPORAL_TLS_KEY)'),
  TEMPORAL_TLS_KEY: z.string().min(1).optional().describe('client private key file for mTLS (with TEMPORAL_TLS_CERT)'),
  TEMPORAL_TLS_CA: z
    .string()
    .min(1)
    .optional()
    .describe("CA certificate file of the Temporal server; unset: Node's default CAs"),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional().describe('TLS server name override (SNI)'),
  TEMPORAL_API_KEY: z.string().min(1).optional().describe('Temporal Cloud API key (implies TLS)'),
  TEMPORAL_API_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('file holding the Temporal API key (implies TLS), reloaded on change; instead of TEMPORAL_API_KEY'),
  KEELSON_TEMPORAL_RELOAD_CHECK_SECONDS: seconds(1, 3600, 60).describe(
    'how often the Temporal TLS and API key files are compared, besides file-change events',
  ),
});
export type TemporalSettings = z.infer<typeof TemporalSettingsSchema>;

/** mTLS needs both halves of the pair; the API key comes from one source. */
function checkTemporalCredentials(settings: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (!!settings.TEMPORAL_TLS_CERT !== !!settings.TEMPORAL_TLS_KEY) {
    ctx.addIssue({
      code: 'custom',
      path: [settings.TEMPORAL_TLS_CERT ? 'TEMPORAL_TLS_KEY' : 'TEMPORAL_TLS_CERT'],
      message: 'must be set together with TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (mTLS)',
    });
  }
  if (settings.TEMPORAL_API_KEY && settings.TEMPORAL_API_KEY_FILE) {
    ctx.addIssue({
      code: 'custom',
      path: ['TEMPORAL_API_KEY_FILE'],
      message: 'set either TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both',
    });
  }
}

/**
 * Reads the keys of an object schema from an environment (empty values count as unset). Throws SettingsError with
 * one `NAME="value": rule` line per bad setting, every one at once.
 */
export function loadSettings<S extends z.ZodObject>(
  schema: S,
  what: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): z.infer<S> {
  const known = Object.fromEntries(Object.keys(schema.shape).map((k) => [k, env[k] === '' ? undefined : env[k]]));
  const checked = 'TEMPORAL_TLS_CERT' in schema.shape ? schema.superRefine(checkTemporalCredentials) : schema;
  const parsed = checked.safeParse(known);
  if (parsed.success) return parsed.data as z.infer<S>;
  const lines = parsed.error.issues.map((issue) => {
    const key = String(issue.path[0]);
    return `${key}=${JSON.stringify(env[key] ?? '')}: ${issue.message}`;
  });
  throw new SettingsError(`invalid ${what} settings:\n${lines.join('\n')}`);
}
