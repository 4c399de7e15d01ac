import { AuthorizationV1Api, KubeConfig } from '@kubernetes/client-node';
import { clusterAccess } from '../../api/cluster';
import { setIgnored } from '../../api/node-ignore';
import { readLog, stagePod } from '../../api/stage-logs';
import { JOB_LABELS, safeLabelValue } from '../../model';
import { eventually } from '../../harness/wait';
import { kubeClients, testNamespace } from '../../harness/kube';
import { applyDocs, helmTemplate, jobsNamespaceOf, removeChart, serviceAccountKubeconfig, type Doc } from './chart-env';

// The API's RBAC in the chart: rendered, applied to the local RBAC apiserver, asked of the apiserver itself
// (SubjectAccessReview), then used: `node ignore` and `logs` run with the API ServiceAccount's token.

const { kc: adminKc, core } = kubeClients();
const authz = adminKc.makeApiClient(AuthorizationV1Api);
const release = `ka${Date.now().toString(36)}`;
const node = 'node-009';
let namespace = '';
let jobsNamespace = '';
let docs: Doc[] = [];
let apiUser = '';

beforeAll(async () => {
  namespace = await testNamespace(core, 'kapi');
  jobsNamespace = jobsNamespaceOf(namespace);
  apiUser = `system:serviceaccount:${namespace}:${release}-keelson-api`;
  docs = helmTemplate(release, namespace, 'worker.replicas=0', 'api.replicas=0');
  applyDocs(docs);
});

afterAll(async () => {
  await removeChart(adminKc, release, namespace);
});

/** The apiserver's answer: may the API's ServiceAccount do `verb` on `resource` (in `ns`, or cluster-wide)? */
async function allowed(verb: string, resource: string, ns?: string): Promise<boolean> {
  const [plural, subresource] = resource.split('/');
  const review = await authz.createSubjectAccessReview({
    body: {
      spec: {
        user: apiUser,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
        resourceAttributes: {
          verb,
          group: resource === 'jobs' ? 'batch' : '',
          resource: plural,
          ...(subresource && { subresource }),
          ...(ns && { namespace: ns }),
        },
      },
    },
  });
  return review.status?.allowed ?? false;
}

test('the API ServiceAccount: patch nodes (cluster-wide), read pods and their logs in the Jobs namespace', () => {
  const find = (kind: string, suffix: string) => docs.find((d) => d.kind === kind && d.metadata.name.endsWith(suffix))!;
  expect(find('ClusterRole', '-api').rules).toEqual([
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch'] },
  ]);
  expect(find('Role', '-api-logs').rules).toEqual([
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  ]);
  const api = find('Deployment', '-api') as Doc & { spec: { template: { spec: Record<string, unknown> } } };
  expect(api.spec.template.spec.automountServiceAccountToken).toBeUndefined();
  expect(JSON.stringify(api)).toContain(`{"name":"KEELSON_NAMESPACE","value":"${jobsNamespace}"}`);
  const jobs = helmTemplate(release, namespace, 'jobsNamespace=stage-jobs');
  expect(jobs.find((d) => d.kind === 'Role' && d.metadata.name.endsWith('-api-logs'))!.metadata.namespace).toBe(
    'stage-jobs',
  );
});

test('SubjectAccessReview: exactly those verbs; nothing else on nodes, pods elsewhere, Jobs or Secrets', async () => {
  for (const verb of ['get', 'list', 'patch']) expect([verb, await allowed(verb, 'nodes')]).toEqual([verb, true]);
  for (const verb of ['delete', 'update', 'create', 'watch'])
    expect([verb, await allowed(verb, 'nodes')]).toEqual([verb, false]);
  expect(await allowed('patch', 'nodes/status')).toBe(false);
  for (const verb of ['get', 'list']) expect(await allowed(verb, 'pods', jobsNamespace)).toBe(true);
  expect(await allowed('get', 'pods/log', jobsNamespace)).toBe(true);
  for (const verb of ['create', 'delete', 'patch']) expect(await allowed(verb, 'pods', jobsNamespace)).toBe(false);
  expect(await allowed('create', 'pods/exec', jobsNamespace)).toBe(false);
  // Nothing on pods in the release namespace, where the API itself runs.
  expect(await allowed('list', 'pods', namespace)).toBe(false);
  expect(await allowed('get', 'pods/log', 'default')).toBe(false);
  expect(await allowed('list', 'pods', 'default')).toBe(false);
  expect(await allowed('list', 'pods')).toBe(false);
  expect(await allowed('get', 'secrets', namespace)).toBe(false);
  expect(await allowed('create', 'jobs', jobsNamespace)).toBe(false);
});

test('node ignore and logs work with the API ServiceAccount token, and a pod outside the Jobs namespace is refused', async () => {
  const saKc = new KubeConfig();
  saKc.loadFromFile(await serviceAccountKubeconfig(adminKc, release, namespace, `${release}-keelson-api`));
  const cluster = clusterAccess(saKc, jobsNamespace);
  try {
    expect(await setIgnored(cluster, 'ignore', node)).toEqual({ node, outcome: 'ignored' });
    expect((await core.readNode({ name: node })).metadata?.labels?.['skyhook.nvidia.com/ignore']).toBe('true');
  } finally {
    expect(await setIgnored(cluster, 'unignore', node)).toEqual({ node, outcome: 'unignored' });
  }

  // A pod labelled as a stage Job's: the simulator runs it and writes its log, which kwok serves.
  const key = { rollout: 'rbac', package: 'probe', node, stage: 'apply' as const };
  await core.createNamespacedPod({
    namespace: jobsNamespace,
    body: {
      metadata: {
        name: 'rbac-probe-apply',
        labels: {
          [JOB_LABELS.rollout]: key.rollout,
          [JOB_LABELS.package]: key.package,
          [JOB_LABELS.node]: safeLabelValue(node),
          [JOB_LABELS.stage]: key.stage,
        },
      },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        containers: [
          { name: 'probe', image: 'registry.example/probe:1', env: [{ name: 'KEELSON_SIM_SECONDS', value: '1' }] },
        ],
      },
    },
  });
  const pod = await stagePod(cluster, key);
  expect(pod.metadata?.name).toBe('rbac-probe-apply');
  const log = await eventually(async () => {
    const text = await readLog(cluster, pod, 'probe');
    expect(text).toContain('[keelson-sim] apply succeeded');
    return text;
  }, 30_000);
  expect(log).toContain(`[keelson-sim] apply started on ${node}`);
  const elsewhere = clusterAccess(saKc, 'default');
  await expect(stagePod(elsewhere, key)).rejects.toThrow(/Kubernetes refused or did not answer list pods .*forbidden/);
});
