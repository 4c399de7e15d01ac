import { spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { loadApiSettings } from '../../api/settings';
import { readApiTls } from '../../api/tls';
import { apiClientFor } from '../../client/api-target';
import { ApiClient, ApiError } from '../../client/http-client';
import { SettingsError } from '../../workers/temporal-settings';
import { watchFiles } from '../../workers/watched-files';
import { pem, selfSigned, signedBy, type KeyPair } from '../../harness/certificates';
import { secretVolume } from '../../harness/secret-volume';
import { eventually, until } from '../../harness/wait';

// The API entry point over TLS, as operators run it: bad TLS settings stop start-up naming the setting and the file;
// a self-signed certificate serves HTTPS that the client reaches with the CA file and is refused without it; client
// certificates are required when a client CA is set; and the token file and the certificate are reloaded when their
// Secret volume changes, with no restart, a bad new file leaving what is in use in place.

const root = join(__dirname, '..', '..');
const main = join(root, 'api', 'main.ts');
const baseEnv = { PATH: process.env.PATH, TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' };
const TOKEN = 'tls-test-token-0123456789';
const scratch = mkdtempSync(join(tmpdir(), 'keelson-api-tls-'));

function startUp(env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['--require', 'tsx/cjs', main], {
    cwd: root,
    env: { ...baseEnv, KEELSON_API_TOKEN: TOKEN, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stderr: r.stderr };
}

interface RunningApi {
  url: string;
  port: number;
  stderr(): string;
  stop(): Promise<number | null>;
}

async function startApi(env: Record<string, string>): Promise<RunningApi> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', main], {
    cwd: root,
    env: { ...baseEnv, KEELSON_API_PORT: '0', KEELSON_CLUSTER: 'api-tls', ...env },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    // A process that never listens is stopped, so that no test leaves one behind.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no listen line in: ${stderr}`));
    }, 90_000);
    child.stderr.on('data', () => {
      const m = /listening on (https?:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    stderr: () => stderr,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A reload is seen within 10 s, looked for every 100 ms. */
const RELOAD_MS = 10_000;
const RELOAD_POLL_MS = 100;

const client = (url: string, token: string, tls: Record<string, string> = {}) =>
  apiClientFor({}, { KEELSON_API_URL: url, KEELSON_API_TOKEN: token, KEELSON_CONFIG: '/nonexistent', ...tls });

/** The status of `GET /v1/rollouts`, or the refusal's message when the API could not be reached. */
async function listStatus(c: ApiClient): Promise<number | string> {
  try {
    return (await c.request('GET', '/v1/rollouts')).status;
  } catch (err) {
    if (err instanceof ApiError) return err.status === 0 ? err.message : err.status;
    throw err;
  }
}

/** The SHA-256 fingerprint of the certificate a new TLS connection to the port is served. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

const fingerprintOf = (pair: KeyPair) => new X509Certificate(pem(pair.cert)).fingerprint256;

describe('bad TLS settings stop start-up (exit 2) naming the setting and the file', () => {
  const good = selfSigned();
  const other = selfSigned();
  const garbled = join(scratch, 'garbled.crt');
  writeFileSync(garbled, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');

  test.each([
    [
      'a certificate without its key',
      { KEELSON_API_TLS_CERT_FILE: good.cert },
      `KEELSON_API_TLS_KEY_FILE="": must be set together with KEELSON_API_TLS_CERT_FILE (${JSON.stringify(good.cert)}) for HTTPS`,
    ],
    [
      'a key without its certificate',
      { KEELSON_API_TLS_KEY_FILE: good.key },
      `KEELSON_API_TLS_CERT_FILE="": must be set together with KEELSON_API_TLS_KEY_FILE (${JSON.stringify(good.key)}) for HTTPS`,
    ],
    [
      'a client CA without HTTPS',
      { KEELSON_API_TLS_CLIENT_CA_FILE: good.cert },
      `KEELSON_API_TLS_CLIENT_CA_FILE=${JSON.stringify(good.cert)}: client certificates need HTTPS: set KEELSON_API_TLS_CERT_FILE and KEELSON_API_TLS_KEY_FILE too`,
    ],
    [
      'an unreadable certificate file',
      { KEELSON_API_TLS_CERT_FILE: '/nonexistent/api.crt', KEELSON_API_TLS_KEY_FILE: good.key },
      'KEELSON_API_TLS_CERT_FILE="/nonexistent/api.crt": cannot be read (ENOENT)',
    ],
    [
      'a key file given as the certificate',
      { KEELSON_API_TLS_CERT_FILE: good.key, KEELSON_API_TLS_KEY_FILE: good.key },
      `KEELSON_API_TLS_CERT_FILE=${JSON.stringify(good.key)}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    ],
    [
      'a certificate block that is not a certificate',
      { KEELSON_API_TLS_CERT_FILE: garbled, KEELSON_API_TLS_KEY_FILE: good.key },
      `KEELSON_API_TLS_CERT_FILE=${JSON.stringify(garbled)}: certificate 1 is not valid PEM (`,
    ],
    [
      'a certificate given as the key',
      { KEELSON_API_TLS_CERT_FILE: good.cert, KEELSON_API_TLS_KEY_FILE: good.cert },
      `KEELSON_API_TLS_KEY_FILE=${JSON.stringify(good.cert)}: is not a PEM private key (`,
    ],
    [
      "another certificate's key",
      { KEELSON_API_TLS_CERT_FILE: good.cert, KEELSON_API_TLS_KEY_FILE: other.key },
      `KEELSON_API_TLS_KEY_FILE=${JSON.stringify(other.key)}: is not the key of the certificate in ${good.cert}`,
    ],
    [
      'a client CA file without a certificate',
      {
        KEELSON_API_TLS_CERT_FILE: good.cert,
        KEELSON_API_TLS_KEY_FILE: good.key,
        KEELSON_API_TLS_CLIENT_CA_FILE: good.key,
      },
      `KEELSON_API_TLS_CLIENT_CA_FILE=${JSON.stringify(good.key)}: holds no PEM certificate`,
    ],
    [
      'a reload check period out of range',
      { KEELSON_API_RELOAD_CHECK_SECONDS: '0' },
      'KEELSON_API_RELOAD_CHECK_SECONDS="0": must be a whole number from 1 to 3600',
    ],
  ])('%s', (_what, env, message) => {
    // The reading main does before anything else; the two spawned cases below show it stops start-up with exit 2.
    const read = () => readApiTls(loadApiSettings({ KEELSON_API_TOKEN: TOKEN, ...env }));
    expect(read).toThrow(SettingsError);
    expect(read).toThrow(`invalid API settings:\n${message}`);
  });

  test.each([
    [{ KEELSON_API_TLS_CERT_FILE: good.cert }, 'KEELSON_API_TLS_KEY_FILE="": must be set together with'],
    [
      { KEELSON_API_TLS_CERT_FILE: '/nonexistent/api.crt', KEELSON_API_TLS_KEY_FILE: good.key },
      'KEELSON_API_TLS_CERT_FILE="/nonexistent/api.crt": cannot be read (ENOENT)',
    ],
  ])('the API process with %j exits 2 with the message', (env, message) => {
    const r = startUp(env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`keelson api: invalid API settings:\n${message}`);
  });
});

describe('HTTPS with a self-signed certificate, reloaded with the token file from Secret volumes', () => {
  const first = selfSigned();
  const second = selfSigned();
  const tls = secretVolume({ 'tls.crt': pem(first.cert), 'tls.key': pem(first.key) });
  const tokens = secretVolume({ tokens: `alice:read:alice-token-0123456789\n` });
  let api: RunningApi;

  beforeAll(async () => {
    api = await startApi({
      KEELSON_API_TLS_CERT_FILE: tls.path('tls.crt'),
      KEELSON_API_TLS_KEY_FILE: tls.path('tls.key'),
      KEELSON_API_TOKENS_FILE: tokens.path('tokens'),
    });
  });
  afterAll(async () => {
    expect(await api.stop()).toBe(0);
  });

  test('the client reaches the API with the CA file, and is refused without it or with another CA', async () => {
    expect(api.url).toMatch(/^https:/);
    expect(await listStatus(client(api.url, 'alice-token-0123456789', { KEELSON_API_CA_FILE: first.cert }))).toBe(200);
    expect(await listStatus(client(api.url, 'alice-token-0123456789'))).toBe(
      `cannot reach the Keelson API at ${api.url} (DEPTH_ZERO_SELF_SIGNED_CERT)`,
    );
    expect(await listStatus(client(api.url, 'alice-token-0123456789', { KEELSON_API_CA_FILE: second.cert }))).toMatch(
      /^cannot reach the Keelson API at https:.* \(DEPTH_ZERO_SELF_SIGNED_CERT\)$/,
    );
    // Plain HTTP to the TLS port gets no answer.
    await expect(fetch(`http://127.0.0.1:${api.port}/healthz`)).rejects.toThrow();
  });

  test('a client CA file that cannot be read is an error naming the setting and the file', () => {
    expect(() => client(api.url, 'alice-token-0123456789', { KEELSON_API_CA_FILE: '/nonexistent/ca.crt' })).toThrow(
      'KEELSON_API_CA_FILE="/nonexistent/ca.crt": cannot be read (ENOENT)',
    );
  });

  test('a new token file is used without a restart: the new token accepted, the old refused', async () => {
    const withCa = (token: string) => client(api.url, token, { KEELSON_API_CA_FILE: first.cert });
    tokens.update({ tokens: `bob:read:bob-token-0123456789\n` });
    // 401 until the new file is loaded; any other answer (a refused connection) fails at once.
    await until(
      'the new token is accepted',
      async () => {
        const status = await listStatus(withCa('bob-token-0123456789'));
        if (status === 401) return undefined;
        expect(status).toBe(200);
        return status;
      },
      RELOAD_MS,
      RELOAD_POLL_MS,
    );
    expect(await listStatus(withCa('alice-token-0123456789'))).toBe(401);
    expect(api.stderr()).toContain(`keelson api: reloaded 1 token(s) from ${tokens.path('tokens')}`);
  });

  test('a bad new token file keeps the tokens in use and is reported naming the file and the line', async () => {
    const withCa = (token: string) => client(api.url, token, { KEELSON_API_CA_FILE: first.cert });
    const bobStatus = await listStatus(withCa('bob-token-0123456789'));
    tokens.update({ tokens: `carol:admin:carol-token-0123456789\n` });
    const report =
      `keelson api: token file not reloaded, the tokens in use are kept: ` +
      `KEELSON_API_TOKENS_FILE=${JSON.stringify(tokens.path('tokens'))}: line 1: scope "admin" is not one of read, operate, deploy, metrics`;
    await eventually(
      'the bad file is reported',
      () => expect(api.stderr()).toContain(report),
      RELOAD_MS,
      RELOAD_POLL_MS,
    );
    expect(await listStatus(withCa('bob-token-0123456789'))).toBe(bobStatus);
    expect(bobStatus).toBe(200);
    expect(await listStatus(withCa('carol-token-0123456789'))).toBe(401);
  });

  test('a new certificate is served to new connections without a restart; a bad one keeps the old', async () => {
    expect(await servedFingerprint(api.port)).toBe(fingerprintOf(first));
    tls.update({ 'tls.crt': pem(second.cert), 'tls.key': pem(second.key) });
    // The old certificate until the new one is loaded; a failed handshake or any other certificate fails at once.
    await until(
      'the new certificate is served',
      async () => {
        const served = await servedFingerprint(api.port);
        if (served === fingerprintOf(first)) return undefined;
        expect(served).toBe(fingerprintOf(second));
        return served;
      },
      RELOAD_MS,
      RELOAD_POLL_MS,
    );
    expect(api.stderr()).toContain(`keelson api: reloaded the TLS certificate from ${tls.path('tls.crt')}`);
    expect(await listStatus(client(api.url, 'bob-token-0123456789', { KEELSON_API_CA_FILE: second.cert }))).toBe(200);
    expect(await listStatus(client(api.url, 'bob-token-0123456789', { KEELSON_API_CA_FILE: first.cert }))).toMatch(
      /DEPTH_ZERO_SELF_SIGNED_CERT/,
    );

    // The key of another certificate: refused, the served one stays.
    tls.update({ 'tls.crt': pem(second.cert), 'tls.key': pem(first.key) });
    const report =
      'keelson api: TLS files not reloaded, the certificate in use is kept: ' +
      `KEELSON_API_TLS_KEY_FILE=${JSON.stringify(tls.path('tls.key'))}: is not the key of the certificate in ${tls.path('tls.crt')}`;
    await eventually(
      'the bad pair is reported',
      () => expect(api.stderr()).toContain(report),
      RELOAD_MS,
      RELOAD_POLL_MS,
    );
    expect(await servedFingerprint(api.port)).toBe(fingerprintOf(second));
    expect(await listStatus(client(api.url, 'bob-token-0123456789', { KEELSON_API_CA_FILE: second.cert }))).toBe(200);
  });
});

describe('mTLS: with a client CA, only clients presenting a certificate it signed pass, /healthz excepted', () => {
  const server = selfSigned();
  const clientCa = selfSigned('client-ca');
  const strangerCa = selfSigned('stranger-ca');
  const alice = signedBy(clientCa, 'alice');
  const mallory = signedBy(strangerCa, 'mallory');
  let api: RunningApi;

  beforeAll(async () => {
    api = await startApi({
      KEELSON_API_TLS_CERT_FILE: server.cert,
      KEELSON_API_TLS_KEY_FILE: server.key,
      KEELSON_API_TLS_CLIENT_CA_FILE: clientCa.cert,
      KEELSON_API_TOKEN: TOKEN,
    });
  });
  afterAll(async () => {
    expect(await api.stop()).toBe(0);
  });

  test('a client certificate signed by the client CA is answered; none, or a stranger one, is refused', async () => {
    const withCert = (pair?: KeyPair) =>
      client(api.url, TOKEN, {
        KEELSON_API_CA_FILE: server.cert,
        ...(pair && { KEELSON_API_CLIENT_CERT_FILE: pair.cert, KEELSON_API_CLIENT_KEY_FILE: pair.key }),
      });
    expect(await listStatus(withCert(alice))).toBe(200);
    const refusal = async (pair?: KeyPair) => {
      const err = await withCert(pair)
        .request('GET', '/v1/rollouts')
        .catch((e: unknown) => e);
      return err instanceof ApiError ? [err.status, err.message] : err;
    };
    expect(await refusal()).toEqual([
      401,
      "a client certificate signed by the API's client CA is required (none was presented)",
    ]);
    expect(await refusal(mallory)).toEqual([
      401,
      "a client certificate signed by the API's client CA is required (the one presented was refused: UNABLE_TO_VERIFY_LEAF_SIGNATURE)",
    ]);
    // /healthz is public: kubelet probes, which present no certificate, reach it.
    expect((await withCert().request('GET', '/healthz')).status).toBe(200);
  });

  test('a client certificate without its key is an error naming the missing setting', () => {
    expect(() =>
      client(api.url, TOKEN, { KEELSON_API_CA_FILE: server.cert, KEELSON_API_CLIENT_CERT_FILE: alice.cert }),
    ).toThrow(
      'KEELSON_API_CLIENT_KEY_FILE="": must be set together with KEELSON_API_CLIENT_CERT_FILE (a client certificate and its key)',
    );
  });
});

describe('watched files', () => {
  test('the periodic check sees a change that no file event reports, and only a change of content', async () => {
    // The directory does not exist when watching begins, so there is nothing to watch: only the check can see it.
    const dir = join(scratch, 'created-later');
    const file = join(dir, 'tokens');
    const seen: string[] = [];
    const watch = await watchFiles([file], () => void seen.push('changed'), { pollMs: 200 });
    try {
      await new Promise((r) => setTimeout(r, 500));
      expect(seen).toEqual([]);
      mkdirSync(dir);
      writeFileSync(file, 'first\n');
      await eventually(
        'the periodic check sees the new file',
        () => expect(seen).toHaveLength(1),
        RELOAD_MS,
        RELOAD_POLL_MS,
      );
      writeFileSync(file, 'first\n');
      await new Promise((r) => setTimeout(r, 500));
      expect(seen).toEqual(['changed']);
      writeFileSync(file, 'second\n');
      await eventually(
        'the periodic check sees the new content',
        () => expect(seen).toHaveLength(2),
        RELOAD_MS,
        RELOAD_POLL_MS,
      );
    } finally {
      watch.close();
    }
  });
});
