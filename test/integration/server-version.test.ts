import type { V1Pod } from '@kubernetes/client-node';
import { checkKubernetes, serverVersion } from '../../activities/server-version';
import { ChangeSignal, WatchCache } from '../../activities/watch-cache';
import { KUBE_FEATURES } from '../../model/kube-version';
import { until, useTestNamespace } from '../../harness/kube';
import { testActivities } from './activity-env';

const env = testActivities('placeholder');
const ns = useTestNamespace(env.core, 'floor');

test('G8 the local apiserver reports its version and passes the floor, dry-run fields included', async () => {
  const { gitVersion, version } = await serverVersion(env.clients);
  expect(gitVersion).toMatch(/^v1\.37\./);
  expect(version.minor).toBe(37);
  await expect(checkKubernetes(env.clients, ns)).resolves.toEqual({ ok: true, gitVersion });
  expect((await env.batch.listNamespacedJob({ namespace: ns })).items).toHaveLength(0); // the probe was a dry run
});

test('G8 a server below the floor is refused at start with what is missing and the version needed', async () => {
  const future = [
    ...KUBE_FEATURES,
    { name: 'Job spec.futureField', since: { major: 1, minor: 99, patch: 0 }, why: 'a test feature' },
  ];
  const result = await checkKubernetes(env.clients, ns, future);
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.message).toMatch(
    /^Kubernetes 1\.37\.\d+ is below Keelson's floor 1\.99: missing Job spec\.futureField \(needs 1\.99/,
  );
});

test('the watch cache re-lists after 410 Gone and keeps following changes', async () => {
  const signal = new ChangeSignal();
  const cache = new WatchCache<V1Pod>({
    kc: env.kc,
    path: `/api/v1/namespaces/${ns}/pods`,
    list: (q) => env.core.listNamespacedPod({ namespace: ns, ...q }),
    onChange: signal.notify,
    startFrom: '1', // compacted long ago: the server answers 410 Gone
  });
  await cache.start();
  try {
    await until('a re-list after 410', async () => (cache.lists >= 1 ? true : undefined), 15_000);
    await env.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'seen' }, spec: { containers: [{ name: 'a', image: 'registry.example/a:1' }] } },
    });
    await until('the new pod in the cache', async () =>
      cache.items().some((p) => p.metadata?.name === 'seen') ? true : undefined,
    );
  } finally {
    cache.stop();
  }
});
