import { BatchV1Api, CoreV1Api, KubeConfig, type V1OwnerReference } from '@kubernetes/client-node';

/** Clients for the local stack's kube-apiserver, as admin (KUBECONFIG is set by the global setup). */
export function kubeClients() {
  const kc = new KubeConfig();
  kc.loadFromFile(process.env.KUBECONFIG!);
  return { kc, core: kc.makeApiClient(CoreV1Api), batch: kc.makeApiClient(BatchV1Api) };
}

/** Creates a namespace for one test file, named uniquely so reruns never collide. */
const namespaceName = (prefix: string) => `${prefix}-${Date.now().toString(36)}`;

async function createNamespace(core: CoreV1Api, name: string, prefix: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name, labels: { 'keelson.dev/test': prefix } } } });
}

export async function testNamespace(core: CoreV1Api, prefix: string): Promise<string> {
  const name = namespaceName(prefix);
  await createNamespace(core, name, prefix);
  return name;
}

/** A namespace of the test file's own: named at once, created before its tests and deleted after them. */
export function useTestNamespace(core: CoreV1Api, prefix: string): string {
  const name = namespaceName(prefix);
  beforeAll(() => createNamespace(core, name, prefix));
  afterAll(async () => {
    await core.deleteNamespace({ name });
  });
  return name;
}

export { until } from './wait';

/**
 * Owner references that make a hand-made pod one a controller manages, so a drain evicts it without `force` (as
 * kubectl drain does): a ConfigMap stands in for the controller, so nothing recreates or deletes the pod, and the
 * garbage collector keeps it while the ConfigMap exists.
 */
export async function standInController(core: CoreV1Api, namespace: string): Promise<V1OwnerReference[]> {
  const name = 'stand-in-controller';
  const cm = await core
    .createNamespacedConfigMap({ namespace, body: { metadata: { name } } })
    .catch(async (err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
      return core.readNamespacedConfigMap({ name, namespace });
    });
  return [{ apiVersion: 'v1', kind: 'ConfigMap', name, uid: cm.metadata!.uid!, controller: true }];
}
