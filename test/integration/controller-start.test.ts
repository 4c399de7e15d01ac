import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { WatchCache, type KubeObject } from '../../activities/watch-cache';
import { startWhenServed } from '../../controller/served';
import { kubeClients, until } from '../../harness/kube';

// The controller started before its CustomResourceDefinition, as GitOps may apply them: start-up waits through the
// apiserver's 404 (and the 429 of a just-created CRD's storage), saying why, and lists once the resource is served.
// A throwaway CRD of its own group, so the Skyhook CRDs other suites use are never touched.

const { kc } = kubeClients();
const extensions = kc.makeApiClient(ApiextensionsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const group = `ctl${Date.now().toString(36)}.keelson.test`;
const where = { group, version: 'v1', plural: 'widgets' };
const path = `/apis/${group}/v1/widgets`;

afterAll(async () => {
  await extensions.deleteCustomResourceDefinition({ name: `widgets.${group}` }).catch(() => undefined);
});

test('the controller waits for a resource its CRD does not serve yet, then lists and watches it', async () => {
  const cache = new WatchCache<KubeObject>({
    kc,
    path,
    list: (q) => custom.listClusterCustomObject({ ...where, ...q }) as Promise<{ items: KubeObject[] }>,
    onChange: () => undefined,
  });
  const log: string[] = [];
  let served = false;
  const started = startWhenServed(cache, path, (line) => log.push(line)).then(() => (served = true));
  try {
    await until('a wait logged', async () => (log.length > 0 ? true : undefined), 15_000);
    expect(log[0]).toMatch(
      new RegExp(`^waiting for ${path.replace(/\./g, '\\.')} to be served: .*HTTP 404.*customResources\\.enabled`),
    );
    expect(served).toBe(false);

    await extensions.createCustomResourceDefinition({
      body: {
        metadata: { name: `widgets.${group}` },
        spec: {
          group,
          scope: 'Cluster',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
    await started;
    expect(cache.lists).toBe(1);
    await until('a created object seen by the watch', async () => {
      await custom
        .createClusterCustomObject({
          ...where,
          body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w' } },
        })
        .catch(() => undefined);
      return cache.get('', 'w') ? true : undefined;
    });
  } finally {
    cache.stop();
  }
});
