import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { experimental } from '@grpc/grpc-js';
import { pem, selfSigned, signedBy } from '../../harness/certificates';
import {
  readTemporalCredentials,
  TemporalCredentials,
  type CredentialChange,
} from '../../workers/temporal-credentials';
import { loadSettings, SettingsError, TemporalSettingsSchema } from '../../workers/temporal-settings';

// Reading and reloading the Temporal credential files (workers/temporal-credentials.ts): what a bad file is told,
// and what a new version changes. The connections that use them: test/integration/temporal-credentials.test.ts.

const ca = selfSigned('unit-ca');
const one = signedBy(ca, 'unit-one');
const two = signedBy(ca, 'unit-two');
const dir = mkdtempSync(join(tmpdir(), 'keelson-tc-'));

function file(name: string, content: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

const settings = (env: Record<string, string>) => loadSettings(TemporalSettingsSchema, 'worker', env);

test('one copy of grpc-js: the credentials Keelson makes are the class the Temporal client checks them against', () => {
  const fromClient = require.resolve('@grpc/grpc-js', { paths: [require.resolve('@temporalio/client')] });
  expect(fromClient).toBe(require.resolve('@grpc/grpc-js'));
});

test('the API key comes from one source: both TEMPORAL_API_KEY and TEMPORAL_API_KEY_FILE are refused, naming them', () => {
  expect(() => settings({ TEMPORAL_API_KEY: 'k', TEMPORAL_API_KEY_FILE: '/x' })).toThrow(
    'TEMPORAL_API_KEY_FILE="/x": set either TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both',
  );
  expect(() => settings({ KEELSON_TEMPORAL_RELOAD_CHECK_SECONDS: '0' })).toThrow(
    'KEELSON_TEMPORAL_RELOAD_CHECK_SECONDS="0": must be a whole number of seconds from 1 to 3600',
  );
});

test('a bad credential file is named with its setting and what is wrong', async () => {
  const cert = file('cert.pem', pem(one.cert));
  const key = file('key.pem', pem(one.key));
  const cases: [Record<string, string>, string][] = [
    [
      { TEMPORAL_TLS_CA: join(dir, 'missing.pem') },
      `TEMPORAL_TLS_CA="${join(dir, 'missing.pem')}": cannot be read (ENOENT)`,
    ],
    [{ TEMPORAL_TLS_CA: file('ca-bad.pem', 'not pem') }, 'is not a PEM certificate'],
    [
      { TEMPORAL_TLS_CERT: file('c-bad.pem', 'nope'), TEMPORAL_TLS_KEY: key },
      'not a certificate and its private key in PEM',
    ],
    [
      { TEMPORAL_TLS_CERT: cert, TEMPORAL_TLS_KEY: file('k2.pem', pem(two.key)) },
      'not a certificate and its private key in PEM',
    ],
    [{ TEMPORAL_API_KEY_FILE: file('empty-key', '\n') }, `TEMPORAL_API_KEY_FILE="${join(dir, 'empty-key')}": is empty`],
  ];
  for (const [env, message] of cases) {
    const read = readTemporalCredentials(settings(env));
    await expect(read).rejects.toThrow(SettingsError);
    await expect(read).rejects.toThrow(message);
  }
});

test('a version: TLS implied by a file or an API key; the key file trimmed', async () => {
  expect(await readTemporalCredentials(settings({}))).toEqual({ tls: false });
  const v = await readTemporalCredentials(
    settings({
      TEMPORAL_TLS_CERT: file('c.pem', pem(one.cert)),
      TEMPORAL_TLS_KEY: file('k.pem', pem(one.key)),
      TEMPORAL_API_KEY_FILE: file('api-key', ' key-one\n'),
    }),
  );
  expect({ tls: v.tls, apiKey: v.apiKey, cert: v.cert?.equals(pem(one.cert)), ca: v.ca }).toEqual({
    tls: true,
    apiKey: 'key-one',
    cert: true,
    ca: undefined,
  });
});

test('a reload hands a new version to grpc-js and to change listeners, says what changed, and keeps a version in use when the new one does not load', async () => {
  const certPath = file('r-cert.pem', pem(one.cert));
  const keyPath = file('r-key.pem', pem(one.key));
  const apiKeyPath = file('r-api-key', 'key-one');
  const lines: string[] = [];
  const credentials = await TemporalCredentials.load(
    settings({ TEMPORAL_TLS_CERT: certPath, TEMPORAL_TLS_KEY: keyPath, TEMPORAL_API_KEY_FILE: apiKeyPath }),
    (line) => lines.push(line),
  );
  const identities: (experimental.IdentityCertificateUpdate | null)[] = [];
  credentials.addIdentityCertificateListener((u) => identities.push(u));
  const changes: CredentialChange[] = [];
  credentials.onChange(async (c) => void changes.push(c));

  await credentials.reload();
  expect(changes).toEqual([]);

  writeFileSync(apiKeyPath, 'key-two');
  await credentials.reload();
  expect(changes).toEqual([{ certificates: false, apiKey: true }]);
  expect(credentials.version.apiKey).toBe('key-two');
  expect(identities).toHaveLength(1);

  writeFileSync(certPath, pem(two.cert));
  writeFileSync(keyPath, pem(two.key));
  await credentials.reload();
  expect(changes[1]).toEqual({ certificates: true, apiKey: false });
  expect(identities.map((u) => u?.certificate.equals(pem(two.cert)))).toEqual([false, true]);
  expect(lines.slice(-1)[0]).toContain('reloaded the Temporal certificates from');

  writeFileSync(certPath, 'torn write');
  await credentials.reload();
  expect(changes).toHaveLength(2);
  expect(credentials.version.cert?.equals(pem(two.cert))).toBe(true);
  expect(lines.slice(-1)[0]).toContain(
    `Temporal credentials not reloaded, the ones in use are kept: TEMPORAL_TLS_CERT="${certPath}"`,
  );
});

test('a change between reading the first version and starting the watch is still taken', async () => {
  const apiKeyPath = file('gap-api-key', 'before');
  const credentials = await TemporalCredentials.load(settings({ TEMPORAL_API_KEY_FILE: apiKeyPath }), () => undefined);
  writeFileSync(apiKeyPath, 'after');
  await credentials.watch();
  expect(credentials.version.apiKey).toBe('after');
  credentials.close();
  writeFileSync(apiKeyPath, 'after close');
  await credentials.reload();
  expect(credentials.version.apiKey).toBe('after');
});

test("without a CA file grpc-js is given no CA, so Node's defaults (NODE_EXTRA_CA_CERTS included) apply", async () => {
  const credentials = await TemporalCredentials.load(settings({ TEMPORAL_API_KEY: 'k' }), () => undefined);
  const updates = await new Promise<experimental.CaCertificateUpdate | null>((resolve) =>
    credentials.addCaCertificateListener(resolve),
  );
  expect(updates).toEqual({ caCertificate: undefined });
  const withCa = await TemporalCredentials.load(
    settings({ TEMPORAL_TLS_CA: file('gap-ca.pem', pem(ca.cert)) }),
    () => undefined,
  );
  const given = await new Promise<experimental.CaCertificateUpdate | null>((resolve) =>
    withCa.addCaCertificateListener(resolve),
  );
  expect(given?.caCertificate?.equals(pem(ca.cert))).toBe(true);
});
