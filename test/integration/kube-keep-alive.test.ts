import https from 'node:https';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KeepAliveKubeConfig } from '../../workers/kube-config';

// The Kubernetes client as the worker, the API and the controller make it: API calls share keep-alive connections to
// the real kube-apiserver instead of a new TLS connection each, and new TLS settings (a rotated client certificate)
// get a connection of their own.

function load<T extends KubeConfig>(kc: T): T {
  kc.loadFromFile(process.env.KUBECONFIG!);
  return kc;
}

/** New TLS connections opened by any https.Agent while `calls` runs. */
async function connectionsDuring(calls: () => Promise<void>): Promise<number> {
  const spy = jest.spyOn(https.Agent.prototype, 'createConnection');
  try {
    await calls();
    return spy.mock.calls.length;
  } finally {
    spy.mockRestore();
  }
}

async function readDefaultNamespace(core: CoreV1Api, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await core.readNamespace({ name: 'default' });
}

test("the library's own KubeConfig opens a connection per call (what the keep-alive one replaces)", async () => {
  const core = load(new KubeConfig()).makeApiClient(CoreV1Api);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 10))).toBe(10);
});

test('ten API calls in a row share one connection', async () => {
  const core = load(new KeepAliveKubeConfig()).makeApiClient(CoreV1Api);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 10))).toBe(1);
});

test('calls at once open at most one connection each, and the next calls reuse them', async () => {
  const core = load(new KeepAliveKubeConfig()).makeApiClient(CoreV1Api);
  const burst = () =>
    Promise.all(Array.from({ length: 5 }, () => core.readNamespace({ name: 'default' }))).then(() => {});
  const first = await connectionsDuring(burst);
  expect(first).toBeGreaterThanOrEqual(1);
  expect(first).toBeLessThanOrEqual(5);
  expect(await connectionsDuring(burst)).toBe(0);
});

test('a rotated client certificate gets a new connection, used from then on', async () => {
  const kc = load(new KeepAliveKubeConfig());
  const core = kc.makeApiClient(CoreV1Api);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 3))).toBe(1);
  const user = kc.getCurrentUser()!;
  // The same certificate written anew (a trailing newline): other bytes, as a rotated file's are, still valid.
  const rotated = `${Buffer.from(user.certData!, 'base64').toString('utf8')}\n`;
  Object.assign(user, { certData: Buffer.from(rotated).toString('base64') });
  expect(await connectionsDuring(() => readDefaultNamespace(core, 3))).toBe(1);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 3))).toBe(0);
});
