import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SettingsError } from '../workers/temporal-settings';
import type { ApiSettings } from './settings';

// The API's TLS material, read from the files its settings name and checked before use: every file readable, every
// certificate PEM that parses, a key that parses and belongs to the certificate. Each failure names the setting, the
// file and what is wrong, at start-up (exit 2) and when the files change while the API runs (the old ones are kept).

/** What the HTTPS server is given: the certificate (chain), its key, and the CAs of client certificates (mTLS). */
export interface ApiTls {
  cert: Buffer;
  key: Buffer;
  clientCa?: Buffer;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

type TlsSetting = 'KEELSON_API_TLS_CERT_FILE' | 'KEELSON_API_TLS_KEY_FILE' | 'KEELSON_API_TLS_CLIENT_CA_FILE';

const problem = (setting: TlsSetting, file: string, what: string) =>
  new SettingsError(`invalid API settings:\n${setting}=${JSON.stringify(file)}: ${what}`);

function read(setting: TlsSetting, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw problem(setting, file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

/** Every certificate of a PEM file, the first one first; at least one. */
function certificates(setting: TlsSetting, file: string, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('utf8').match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw problem(setting, file, 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw problem(setting, file, `certificate ${i + 1} is not valid PEM (${(err as Error).message})`);
    }
  });
}

function privateKey(file: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw problem('KEELSON_API_TLS_KEY_FILE', file, `is not a PEM private key (${(err as Error).message})`);
  }
}

/** The TLS material the settings name, checked; undefined when the API serves plain HTTP. */
export function readApiTls(settings: ApiSettings): ApiTls | undefined {
  const certFile = settings.KEELSON_API_TLS_CERT_FILE;
  const keyFile = settings.KEELSON_API_TLS_KEY_FILE;
  if (!certFile || !keyFile) return undefined;
  const cert = read('KEELSON_API_TLS_CERT_FILE', certFile);
  const key = read('KEELSON_API_TLS_KEY_FILE', keyFile);
  const [leaf] = certificates('KEELSON_API_TLS_CERT_FILE', certFile, cert);
  if (!leaf!.checkPrivateKey(privateKey(keyFile, key))) {
    throw problem('KEELSON_API_TLS_KEY_FILE', keyFile, `is not the key of the certificate in ${certFile}`);
  }
  const caFile = settings.KEELSON_API_TLS_CLIENT_CA_FILE;
  if (!caFile) return { cert, key };
  const clientCa = read('KEELSON_API_TLS_CLIENT_CA_FILE', caFile);
  certificates('KEELSON_API_TLS_CLIENT_CA_FILE', caFile, clientCa);
  return { cert, key, clientCa };
}

/** The files to watch for a reload of the TLS material: those the settings name. */
export function apiTlsFiles(settings: ApiSettings): string[] {
  return [
    settings.KEELSON_API_TLS_CERT_FILE,
    settings.KEELSON_API_TLS_KEY_FILE,
    settings.KEELSON_API_TLS_CLIENT_CA_FILE,
  ].filter((f): f is string => !!f);
}
