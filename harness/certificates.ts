import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Test certificates made with the openssl command (node:crypto cannot make X.509): self-signed server
// certificates for 127.0.0.1, and a CA with a client certificate it signed, for mTLS.

export interface KeyPair {
  cert: string;
  key: string;
}

const dir = mkdtempSync(join(tmpdir(), 'keelson-certs-'));
let made = 0;

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

/** A new self-signed certificate for 127.0.0.1 and localhost (each call: a new key and serial), as PEM files. */
export function selfSigned(commonName = 'keelson-api'): KeyPair {
  const base = join(dir, `${commonName}-${++made}`);
  const pair = { cert: `${base}.crt`, key: `${base}.key` };
  openssl(
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'],
    ...['-keyout', pair.key, '-out', pair.cert, '-subj', `/CN=${commonName}`],
    ...['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
  );
  return pair;
}

/**
 * An X.509 v3 certificate signed by `ca`, for 127.0.0.1 and localhost, usable by a client (mTLS) or a server: Rust's
 * TLS stack refuses v1 certificates and a CA certificate as a server's.
 */
export function signedBy(ca: KeyPair, commonName: string): KeyPair {
  const base = join(dir, `${commonName}-${++made}`);
  const pair = { cert: `${base}.crt`, key: `${base}.key` };
  openssl(
    ...['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'],
    ...['-keyout', pair.key, '-out', `${base}.csr`, '-subj', `/CN=${commonName}`],
  );
  const extensions = `${base}.ext`;
  writeFileSync(
    extensions,
    'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  openssl(
    ...['x509', '-req', '-in', `${base}.csr`, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial'],
    ...['-days', '1', '-out', pair.cert, '-extfile', extensions],
  );
  return pair;
}

export const pem = (file: string) => readFileSync(file);
