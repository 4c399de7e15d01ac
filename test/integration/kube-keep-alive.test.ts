import { AsyncLocalStorage } from 'node:async_hooks';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KeepAliveKubeConfig, type KeepAliveTimes } from '../../workers/kube-config';
import { sleep } from '../../harness/wait';

// The Kubernetes client as the worker, the API and the controller make it: API calls share keep-alive connections to
// the real kube-apiserver instead of a new TLS connection each, and new TLS settings (a rotated client certificate)
// get a connection of their own.

function load<T extends KubeConfig>(kc: T): T {
  kc.loadFromFile(process.env.KUBECONFIG!);
  return kc;
}

const counting = new AsyncLocalStorage<true>();

/**
 * New TLS connections `calls` opens (any https.Agent). Only those made in its own async context count: a watch or a
 * client another test file left running in this process may connect meanwhile.
 */
async function connectionsDuring(calls: () => Promise<void>): Promise<number> {
  const createConnection = https.Agent.prototype.createConnection;
  let opened = 0;
  const spy = jest.spyOn(https.Agent.prototype, 'createConnection').mockImplementation(function (
    this: https.Agent,
    ...args: Parameters<typeof createConnection>
  ) {
    if (counting.getStore()) opened++;
    return createConnection.apply(this, args);
  });
  try {
    await counting.run(true, calls);
    return opened;
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
  expect(await connectionsDuring(burst)).toBeLessThanOrEqual(5);
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

const short: KeepAliveTimes = { callTimeoutMs: 1_000, idleConnectionMs: 1_000, retiredAgentCloseMs: 3_000 };

test('an idle connection is closed after idleConnectionMs, and the next call opens a new one', async () => {
  const core = load(new KeepAliveKubeConfig(short)).makeApiClient(CoreV1Api);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 2))).toBe(1);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 2))).toBe(0);
  await sleep(2_000);
  expect(await connectionsDuring(() => readDefaultNamespace(core, 2))).toBe(1);
});

test('the agent of the TLS settings before a rotation is closed retiredAgentCloseMs later, not at once', async () => {
  // Idle connections kept longer than the retirement, so the last call shows the agent in use was not the one closed.
  const kc = load(new KeepAliveKubeConfig({ ...short, idleConnectionMs: 10_000 }));
  const core = kc.makeApiClient(CoreV1Api);
  await readDefaultNamespace(core, 1);
  const destroy = jest.spyOn(https.Agent.prototype, 'destroy');
  try {
    const user = kc.getCurrentUser()!;
    const rotated = `${Buffer.from(user.certData!, 'base64').toString('utf8')}\n`;
    Object.assign(user, { certData: Buffer.from(rotated).toString('base64') });
    await readDefaultNamespace(core, 1);
    expect(destroy).not.toHaveBeenCalled();
    await sleep(3_500);
    expect(destroy).toHaveBeenCalledTimes(1);
    // The agent in use now is not the one closed: the next call goes on its connection.
    expect(await connectionsDuring(() => readDefaultNamespace(core, 1))).toBe(0);
  } finally {
    destroy.mockRestore();
  }
});

/** A server that accepts connections and never says a word: the TLS handshake hangs, as on a dead peer. */
async function silentServer(): Promise<{ port: number; close: () => void }> {
  const accepted: net.Socket[] = [];
  const server = net.createServer((socket) => accepted.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of accepted) socket.destroy();
      server.close();
    },
  };
}

function clientOf(port: number): CoreV1Api {
  const kc = load(new KeepAliveKubeConfig(short));
  Object.assign(kc.getCurrentCluster()!, { server: `https://127.0.0.1:${port}` });
  return kc.makeApiClient(CoreV1Api);
}

test('a call that the server never answers is aborted after callTimeoutMs', async () => {
  const silent = await silentServer();
  try {
    const core = clientOf(silent.port);
    const started = Date.now();
    await expect(core.readNamespace({ name: 'default' })).rejects.toThrow(/abort/i);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(10_000);
  } finally {
    silent.close();
  }
});

test('a log read is not aborted after callTimeoutMs: the kube-apiserver lets it run as long as the log takes', async () => {
  const silent = await silentServer();
  try {
    const core = clientOf(silent.port);
    const read = core.readNamespacedPodLog({ name: 'p', namespace: 'default' }).then(
      () => 'answered',
      (err: unknown) => `failed: ${String(err)}`,
    );
    expect(await Promise.race([read, sleep(2_500).then(() => 'still reading')])).toBe('still reading');
    silent.close();
    expect(await read).toMatch(/^failed/);
  } finally {
    silent.close();
  }
});
