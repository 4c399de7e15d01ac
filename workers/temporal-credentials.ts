import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import { credentials as grpcCredentials, experimental, Metadata } from '@grpc/grpc-js';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { SettingsError, type TemporalSettings } from './temporal-settings';
import { watchFiles, type WatchedFiles } from './watched-files';

// A process's Temporal credentials (client certificate and key, server CA, API key), following their files while it
// runs, so a rotation needs no restart. A new version that does not load (a file missing, not PEM, a key that does
// not match its certificate, an empty key file) is reported and the version in use is kept; the next change is tried
// again. How each kind of connection takes a new version:
// - @temporalio/client's Connection (grpc-js) reads the certificates at every new TLS connection, through the
//   CertificateProvider below, and the API key at every call: nothing is replaced, open connections finish as they
//   began.
// - The worker's NativeConnection (Rust core) fixes its TLS when it connects: a new certificate version means a new
//   connection that the worker switches to (workers/worker.ts); the API key is set in place.

type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

export interface TemporalCredentialVersion {
  /** Whether the connection uses TLS at all (a certificate, a CA, an API key or TEMPORAL_TLS). */
  tls: boolean;
  /** The server's CA; unset: the system's CAs. */
  ca?: Buffer;
  /** The client certificate and key (mTLS), both or neither. */
  cert?: Buffer;
  key?: Buffer;
  apiKey?: string;
}

/** What changed between two versions, for the connections that must act on it. */
export interface CredentialChange {
  certificates: boolean;
  apiKey: boolean;
}

/** The files a version is read from. */
export function credentialFiles(s: TemporalSettings): string[] {
  return [s.TEMPORAL_TLS_CA, s.TEMPORAL_TLS_CERT, s.TEMPORAL_TLS_KEY, s.TEMPORAL_API_KEY_FILE].filter(
    (p): p is string => !!p,
  );
}

async function readSetting(name: string, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new SettingsError(`${name}=${JSON.stringify(path)}: cannot be read (${(err as NodeJS.ErrnoException).code})`);
  }
}

/** Reads and checks one version: each failure names its setting, its file and what is wrong. */
export async function readTemporalCredentials(s: TemporalSettings): Promise<TemporalCredentialVersion> {
  const ca = s.TEMPORAL_TLS_CA ? await readSetting('TEMPORAL_TLS_CA', s.TEMPORAL_TLS_CA) : undefined;
  if (ca) {
    try {
      new X509Certificate(ca);
    } catch {
      throw new SettingsError(`TEMPORAL_TLS_CA=${JSON.stringify(s.TEMPORAL_TLS_CA)}: is not a PEM certificate`);
    }
  }
  const cert = s.TEMPORAL_TLS_CERT ? await readSetting('TEMPORAL_TLS_CERT', s.TEMPORAL_TLS_CERT) : undefined;
  const key = s.TEMPORAL_TLS_KEY ? await readSetting('TEMPORAL_TLS_KEY', s.TEMPORAL_TLS_KEY) : undefined;
  if (cert && key) {
    try {
      createSecureContext({ cert, key });
    } catch (err) {
      throw new SettingsError(
        `TEMPORAL_TLS_CERT=${JSON.stringify(s.TEMPORAL_TLS_CERT)}, TEMPORAL_TLS_KEY=${JSON.stringify(s.TEMPORAL_TLS_KEY)}: ` +
          `not a certificate and its private key in PEM (${(err as Error).message})`,
      );
    }
  }
  let apiKey = s.TEMPORAL_API_KEY;
  if (s.TEMPORAL_API_KEY_FILE) {
    apiKey = (await readSetting('TEMPORAL_API_KEY_FILE', s.TEMPORAL_API_KEY_FILE)).toString('utf8').trim();
    if (!apiKey) throw new SettingsError(`TEMPORAL_API_KEY_FILE=${JSON.stringify(s.TEMPORAL_API_KEY_FILE)}: is empty`);
  }
  const tls = s.TEMPORAL_TLS || !!cert || !!ca || !!apiKey;
  return { tls, ...(ca && { ca }), ...(cert && key && { cert, key }), ...(apiKey && { apiKey }) };
}

/** Options of a NativeConnection with one version: its TLS stays as given until the connection is replaced. */
export function nativeConnectionOptions(s: TemporalSettings, v: TemporalCredentialVersion): NativeConnectionOptions {
  return {
    address: s.TEMPORAL_ADDRESS,
    ...(v.tls && {
      tls: {
        ...(s.TEMPORAL_TLS_SERVER_NAME && { serverNameOverride: s.TEMPORAL_TLS_SERVER_NAME }),
        ...(v.ca && { serverRootCACertificate: v.ca }),
        ...(v.cert && v.key && { clientCertPair: { crt: v.cert, key: v.key } }),
      },
    }),
    ...(v.apiKey && { apiKey: v.apiKey }),
  };
}

export class TemporalCredentials implements experimental.CertificateProvider {
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private readonly changeListeners: ((change: CredentialChange) => Promise<void>)[] = [];
  private watched: WatchedFiles | undefined;
  private closed = false;

  private constructor(
    readonly settings: TemporalSettings,
    private current: TemporalCredentialVersion,
    private readonly log: (line: string) => void,
  ) {}

  /** Reads the first version; a bad file here is a start-up error (SettingsError). */
  static async load(settings: TemporalSettings, log: (line: string) => void): Promise<TemporalCredentials> {
    return new TemporalCredentials(settings, await readTemporalCredentials(settings), log);
  }

  get version(): TemporalCredentialVersion {
    return this.current;
  }

  /** Options for @temporalio/client's Connection that follow every later version by themselves. */
  clientOptions(): ConnectionOptions {
    const s = this.settings;
    if (!this.current.tls) return { address: s.TEMPORAL_ADDRESS };
    const sni = s.TEMPORAL_TLS_SERVER_NAME;
    const apiKey = grpcCredentials.createFromMetadataGenerator((_params, callback) => {
      const metadata = new Metadata();
      if (this.current.apiKey) metadata.set('authorization', `Bearer ${this.current.apiKey}`);
      callback(null, metadata);
    });
    return {
      address: s.TEMPORAL_ADDRESS,
      credentials: experimental.createCertificateProviderChannelCredentials(this, this.current.cert ? this : null),
      callCredentials: [apiKey],
      ...(sni && { channelArgs: { 'grpc.ssl_target_name_override': sni, 'grpc.default_authority': sni } }),
    };
  }

  nativeOptions(): NativeConnectionOptions {
    return nativeConnectionOptions(this.settings, this.current);
  }

  /** Called after a new version is in use, with what changed; a listener reports its own failures. */
  onChange(listener: (change: CredentialChange) => Promise<void>): void {
    this.changeListeners.push(listener);
  }

  /** Starts following the files (no-op without any). */
  async watch(): Promise<void> {
    const files = credentialFiles(this.settings);
    if (files.length === 0 || this.watched) return;
    const pollMs = this.settings.KEELSON_TEMPORAL_RELOAD_CHECK_SECONDS * 1000;
    this.watched = await watchFiles(files, () => this.reload(), { pollMs });
    // The watch compares with the files as they are now: a change since load() is caught here.
    await this.reload();
  }

  /** Reads the files again; a version that loads replaces the one in use. */
  async reload(): Promise<void> {
    if (this.closed) return;
    let next: TemporalCredentialVersion;
    try {
      next = await readTemporalCredentials(this.settings);
    } catch (err) {
      this.log(`Temporal credentials not reloaded, the ones in use are kept: ${(err as Error).message}`);
      return;
    }
    if (this.closed) return;
    const before = this.current;
    const change: CredentialChange = {
      certificates: !sameCertificates(before, next),
      apiKey: before.apiKey !== next.apiKey,
    };
    if (!change.certificates && !change.apiKey) return;
    this.current = next;
    if (change.certificates) {
      for (const listener of this.caListeners) listener(this.caUpdate());
      for (const listener of this.identityListeners) listener(this.identityUpdate());
    }
    const what = [change.certificates && 'certificates', change.apiKey && 'API key'].filter(Boolean).join(' and ');
    this.log(`reloaded the Temporal ${what} from ${credentialFiles(this.settings).join(', ')}`);
    for (const listener of this.changeListeners) await listener(change);
  }

  /** Stops following the files; a check in flight changes nothing after this. */
  close(): void {
    this.closed = true;
    this.watched?.close();
  }

  private caUpdate(): experimental.CaCertificateUpdate {
    // Without a CA file, none is given, so Node's defaults apply (NODE_EXTRA_CA_CERTS and --use-openssl-ca included);
    // grpc-js hands the value to tls.createSecureContext as is.
    return { caCertificate: this.current.ca as Buffer };
  }

  private identityUpdate(): experimental.IdentityCertificateUpdate | null {
    const { cert, key } = this.current;
    return cert && key ? { certificate: cert, privateKey: key } : null;
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    process.nextTick(listener, this.caUpdate());
  }
  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }
  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    process.nextTick(listener, this.identityUpdate());
  }
  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }
}

const same = (a: Buffer | undefined, b: Buffer | undefined) => (a && b ? a.equals(b) : a === b);

/** Whether two versions have the same CA, certificate and key. */
export const sameCertificates = (a: TemporalCredentialVersion, b: TemporalCredentialVersion) =>
  same(a.ca, b.ca) && same(a.cert, b.cert) && same(a.key, b.key);
