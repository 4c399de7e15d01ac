import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// A private CA for the local control plane: a serving certificate for kube-apiserver on 127.0.0.1, an admin client
// certificate in system:masters, and the service-account signing key pair. Made once, kept under .keelson/pki.
export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function signedCert(dir: string, name: string, subject: string, extensions: string): void {
  openssl(['genrsa', '-out', `${name}.key`, '2048'], dir);
  openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], dir);
  fs.writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '3650',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
}

export function ensurePki(dir: string): Pki {
  const pki: Pki = {
    dir,
    caCert: path.join(dir, 'ca.crt'),
    caKey: path.join(dir, 'ca.key'),
    serverCert: path.join(dir, 'apiserver.crt'),
    serverKey: path.join(dir, 'apiserver.key'),
    adminCert: path.join(dir, 'admin.crt'),
    adminKey: path.join(dir, 'admin.key'),
    serviceAccountKey: path.join(dir, 'sa.key'),
    serviceAccountPub: path.join(dir, 'sa.pub'),
  };
  if (Object.values(pki).every((file) => fs.existsSync(file))) return pki;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  openssl(['genrsa', '-out', 'ca.key', '2048'], dir);
  openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=keelson-local-ca', '-days', '3650', '-out', 'ca.crt'],
    dir,
  );
  signedCert(
    dir,
    'apiserver',
    '/CN=kube-apiserver',
    'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' +
      'extendedKeyUsage=serverAuth\n',
  );
  signedCert(dir, 'admin', '/O=system:masters/CN=keelson-admin', 'extendedKeyUsage=clientAuth\n');
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  return pki;
}

/** A kubeconfig for the given client certificate, with every credential embedded so the file stands alone. */
export function kubeconfigYaml(server: string, pki: Pki, user: { name: string; cert: string; key: string }): string {
  const b64 = (file: string) => fs.readFileSync(file).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: keelson-local',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(pki.caCert)}`,
    'users:',
    `- name: ${user.name}`,
    '  user:',
    `    client-certificate-data: ${b64(user.cert)}`,
    `    client-key-data: ${b64(user.key)}`,
    'contexts:',
    '- name: keelson-local',
    '  context:',
    '    cluster: keelson-local',
    `    user: ${user.name}`,
    'current-context: keelson-local',
    '',
  ].join('\n');
}
