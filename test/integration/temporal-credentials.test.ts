import { KeelsonClient } from '../../client';
import { ClientSettingsSchema } from '../../client/settings';
import { pem, selfSigned, signedBy, type KeyPair } from '../../harness/certificates';
import { grpcTlsProxy, type GrpcTlsProxy, type ProxiedCall } from '../../harness/grpc-tls-proxy';
import { kubeClients, testNamespace } from '../../harness/kube';
import { rolloutSpecOf } from '../../harness/manifests';
import { secretVolume, type SecretVolume } from '../../harness/secret-volume';
import { createItestNodes, eventually, InProcessKeelson } from './worker-stack';

// Temporal credentials rotated while Keelson runs: a whole worker (workers/worker.ts startWorker) and the client
// library the API and controller use both reach the shared Temporal server only through a TLS front that asks for a
// client certificate and an API key (harness/grpc-tls-proxy.ts). Their certificate, key, CA and API key files are
// a Secret volume that the test updates as the kubelet does; the front is told to accept the new credentials only
// once the processes say they loaded them, and then drops every connection, so only the new ones can get through.

jest.setTimeout(600_000);

const { core } = kubeClients();
const prefix = `ktc-${Date.now().toString(36).slice(-5)}`;
const LONG = 240_000;

const serverCa = selfSigned('temporal-server-ca');
const server = signedBy(serverCa, 'temporal-front');
const clientCa = selfSigned('temporal-client-ca');
const first = signedBy(clientCa, 'keelson-first');
const second = signedBy(clientCa, 'keelson-second');

let namespace = '';
let nodes: string[] = [];
let proxy: GrpcTlsProxy;
let volume: SecretVolume;
let keelson: InProcessKeelson;
let client: KeelsonClient;
let stopped = false;
const logged: string[] = [];
const stderrWrite = process.stderr.write.bind(process.stderr);

const files = (pair: KeyPair | 'garbage', apiKey: string) => ({
  'tls.crt': pair === 'garbage' ? 'not a certificate\n' : pem(pair.cert),
  'tls.key': pair === 'garbage' ? pem(second.key) : pem(pair.key),
  'ca.crt': pem(serverCa.cert),
  'api-key': `${apiKey}\n`,
});

/** Settings naming the volume's files and the front, as the chart gives them. */
const temporalEnv = () => ({
  TEMPORAL_ADDRESS: proxy.address,
  TEMPORAL_TLS_CERT: volume.path('tls.crt'),
  TEMPORAL_TLS_KEY: volume.path('tls.key'),
  TEMPORAL_TLS_CA: volume.path('ca.crt'),
  TEMPORAL_TLS_SERVER_NAME: 'localhost',
  TEMPORAL_API_KEY_FILE: volume.path('api-key'),
  KEELSON_TEMPORAL_RELOAD_CHECK_SECONDS: '1',
});

/** Waits until both the worker and the client library have logged a line containing `text` since `from`. */
async function bothLogged(text: string, from: number): Promise<void> {
  await eventually(
    `the worker and the client to log "${text}"`,
    () => {
      const lines = logged.slice(from).filter((l) => l.includes(text));
      expect(lines.some((l) => l.startsWith('keelson worker:'))).toBe(true);
      expect(lines.some((l) => l.startsWith('keelson client:'))).toBe(true);
    },
    30_000,
  );
}

/** Runs a one-package rollout on the node, started and watched through the front, until complete. */
async function rolloutCompletes(name: string): Promise<void> {
  await client.startRollout(rolloutSpecOf(name, nodes, { tune: { simSeconds: 1 } }));
  await eventually(
    `rollout ${name} complete`,
    async () => expect((await client.rolloutStatus(name)).status).toBe('complete'),
    LONG,
  );
}

beforeAll(async () => {
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk, ...rest) => {
    logged.push(...String(chunk).split('\n').filter(Boolean));
    return stderrWrite(chunk, ...(rest as []));
  });
  namespace = await testNamespace(core, 'ktc');
  nodes = await createItestNodes(core, prefix, 1);
  proxy = await grpcTlsProxy(process.env.TEMPORAL_ADDRESS!, server, clientCa);
  proxy.accept = { subjects: ['keelson-first'], apiKeys: ['key-one'] };
  volume = secretVolume(files(first, 'key-one'));
  keelson = await new InProcessKeelson(prefix, { KEELSON_NAMESPACE: namespace, ...temporalEnv() }).start();
  client = await KeelsonClient.connect(
    ClientSettingsSchema.parse({
      ...temporalEnv(),
      KEELSON_CLUSTER: keelson.cluster,
      KEELSON_TASK_QUEUE: keelson.taskQueue,
    }),
    (line) => process.stderr.write(`keelson client: ${line}\n`),
  );
});

afterAll(async () => {
  await client?.close();
  if (!stopped) await keelson?.stop();
  await proxy?.close();
  for (const n of nodes) await core.deleteNode({ name: n }).catch(() => undefined);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  jest.restoreAllMocks();
});

/** The (subject, API key) pairs of the calls since `from`, by whether the front let them through. */
function callsSince(from: number) {
  const pairs = (calls: ProxiedCall[]) => [...new Set(calls.map((c) => `${c.subject} ${c.apiKey}`))].sort();
  const since = proxy.calls.slice(from);
  return { passed: pairs(since.filter((c) => c.passed)), refused: pairs(since.filter((c) => !c.passed)) };
}

test('the worker and the client follow rotated Temporal certificates and API key without a restart, and keep theirs when a new version does not load', async () => {
  await rolloutCompletes('tc-first');
  expect(callsSince(0)).toEqual({ passed: ['keelson-first key-one'], refused: [] });

  // A new certificate and API key, which the front accepts beside the old ones (as a server does during a rotation),
  // arrive while the front is down: the worker's new connection fails and is tried again.
  let mark = logged.length;
  proxy.accept = { subjects: ['keelson-first', 'keelson-second'], apiKeys: ['key-one', 'key-two'] };
  proxy.refuseConnections = true;
  volume.update(files(second, 'key-two'));
  await bothLogged('reloaded the Temporal certificates and API key', mark);
  await eventually('the worker to try a new connection and fail', () =>
    expect(logged.slice(mark).join('\n')).toContain('a new one with the new credentials failed'),
  );
  proxy.refuseConnections = false;
  await eventually(
    'the worker on a new connection',
    () =>
      expect(logged.slice(mark).join('\n')).toContain('now polls Temporal on a connection with the new certificates'),
    90_000,
  );
  // Only now does the front take the new credentials alone, and every connection must be made again.
  proxy.accept = { subjects: ['keelson-second'], apiKeys: ['key-two'] };
  let calls = proxy.calls.length;
  proxy.dropConnections();
  await rolloutCompletes('tc-second');
  const afterRotation = callsSince(calls);
  expect(afterRotation.passed).toEqual(['keelson-second key-two']);
  // Nothing kept calling with the old credentials after the switch (a stray late call would be refused).
  expect(afterRotation.refused.filter((pair) => pair !== 'keelson-first key-one')).toEqual([]);
  // The worker's native connection polls; its activities' client signals the rollout; the client starts it.
  const methods = new Set(
    proxy.calls
      .slice(calls)
      .filter((c) => c.passed)
      .map((c) => c.path.split('/').pop()),
  );
  for (const method of [
    'PollWorkflowTaskQueue',
    'PollActivityTaskQueue',
    'SignalWorkflowExecution',
    'StartWorkflowExecution',
  ])
    expect({ method, seen: methods.has(method) }).toEqual({ method, seen: true });

  // The API key alone: set in place on the worker's connection, read at the next call by the client.
  mark = logged.length;
  proxy.accept = { subjects: ['keelson-second'], apiKeys: ['key-two', 'key-three'] };
  volume.update(files(second, 'key-three'));
  await bothLogged('reloaded the Temporal API key', mark);
  await eventually('the worker to set the key', () =>
    expect(logged.slice(mark).join('\n')).toContain('the worker now calls Temporal with the new API key'),
  );
  proxy.accept = { subjects: ['keelson-second'], apiKeys: ['key-three'] };
  calls = proxy.calls.length;
  proxy.dropConnections();
  await rolloutCompletes('tc-third');
  expect(callsSince(calls).passed).toEqual(['keelson-second key-three']);
  expect(proxy.calls.slice(calls).some((c) => c.passed && c.path.endsWith('/PollActivityTaskQueue'))).toBe(true);

  // A certificate file that is not PEM: both say why and keep the version in use, which still gets through.
  mark = logged.length;
  volume.update(files('garbage', 'key-three'));
  await bothLogged('Temporal credentials not reloaded, the ones in use are kept: TEMPORAL_TLS_CERT=', mark);
  calls = proxy.calls.length;
  proxy.dropConnections();
  await rolloutCompletes('tc-fourth');
  expect(callsSince(calls)).toEqual({ passed: ['keelson-second key-three'], refused: [] });

  // The worker stops cleanly while a new connection keeps failing: no switch after its stop, nothing left running.
  mark = logged.length;
  proxy.refuseConnections = true;
  volume.update(files(first, 'key-three'));
  await eventually('a new connection to fail', () =>
    expect(logged.slice(mark).join('\n')).toContain('a new one with the new credentials failed'),
  );
  await keelson.stop();
  stopped = true;
  proxy.refuseConnections = false;
  const stoppedAt = logged.length;
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect(logged.slice(stoppedAt).filter((l) => l.startsWith('keelson worker:'))).toEqual([]);
});
