import { readFileSync } from 'node:fs';
import { z } from 'zod';

// Settings read from the environment, and the Temporal connection they describe: one schema of the Temporal
// settings, one reader, one error and one set of connection options for the worker, the API and the client library.

export class SettingsError extends Error {
  override name = 'SettingsError';
}

export const bool = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

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
    .describe('CA certificate file of the Temporal server; unset: system CAs'),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional().describe('TLS server name override (SNI)'),
  TEMPORAL_API_KEY: z.string().min(1).optional().describe('Temporal Cloud API key (implies TLS)'),
});
export type TemporalSettings = z.infer<typeof TemporalSettingsSchema>;

/** mTLS needs both halves of the pair. */
function checkCertificatePair(settings: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (!!settings.TEMPORAL_TLS_CERT === !!settings.TEMPORAL_TLS_KEY) return;
  ctx.addIssue({
    code: 'custom',
    path: [settings.TEMPORAL_TLS_CERT ? 'TEMPORAL_TLS_KEY' : 'TEMPORAL_TLS_CERT'],
    message: 'must be set together with TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (mTLS)',
  });
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
  const checked = 'TEMPORAL_TLS_CERT' in schema.shape ? schema.superRefine(checkCertificatePair) : schema;
  const parsed = checked.safeParse(known);
  if (parsed.success) return parsed.data as z.infer<S>;
  const lines = parsed.error.issues.map((issue) => {
    const key = String(issue.path[0]);
    return `${key}=${JSON.stringify(env[key] ?? '')}: ${issue.message}`;
  });
  throw new SettingsError(`invalid ${what} settings:\n${lines.join('\n')}`);
}

/** Address, TLS (server CA, SNI, client certificate pair) and API key: the same for every Temporal connection. */
export function temporalConnectionOptions(s: TemporalSettings) {
  const file = (p: string) => readFileSync(p);
  const tls = s.TEMPORAL_TLS || !!s.TEMPORAL_TLS_CERT || !!s.TEMPORAL_TLS_CA || !!s.TEMPORAL_API_KEY;
  return {
    address: s.TEMPORAL_ADDRESS,
    ...(tls && {
      tls: {
        ...(s.TEMPORAL_TLS_SERVER_NAME && { serverNameOverride: s.TEMPORAL_TLS_SERVER_NAME }),
        ...(s.TEMPORAL_TLS_CA && { serverRootCACertificate: file(s.TEMPORAL_TLS_CA) }),
        ...(s.TEMPORAL_TLS_CERT &&
          s.TEMPORAL_TLS_KEY && { clientCertPair: { crt: file(s.TEMPORAL_TLS_CERT), key: file(s.TEMPORAL_TLS_KEY) } }),
      },
    }),
    ...(s.TEMPORAL_API_KEY && { apiKey: s.TEMPORAL_API_KEY }),
  };
}
