import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KubeConfig, type V1PodSpec } from '@kubernetes/client-node';
import YAML from 'yaml';
import { createActivities, workloadInformer } from '../../activities';
import { jsonPatch, makeClients, mergePatch } from '../../activities/clients';
import { checkKubernetes } from '../../activities/server-version';
import { kubeFloor, formatKubeVersion } from '../../model/kube-version';
import { kubeClients, testNamespace } from '../../harness/kube';
import { pkg, stageInput, testSettings } from '../integration/activity-env';
import {
  applyDocs,
  chart,
  helm,
  helmTemplate as render,
  jobsNamespaceOf,
  removeChart,
  serviceAccountKubeconfig,
  type Doc,
} from './chart-env';

// The Helm chart, rendered with the pinned helm, applied to the local RBAC apiserver; then the real activities run
// with the chart's ServiceAccount token, so a permission the chart lacks fails here, and one it must not have is
// shown refused.

const { kc: adminKc, core, batch } = kubeClients();
const release = `kt${Date.now().toString(36)}`;
const node = 'node-009';
let namespace = '';
let jobsNamespace = '';

const helmTemplate = (ns: string, ...sets: string[]) => render(release, ns, ...sets);

const EXPECTED_CLUSTER_RULES = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'delete'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list', 'watch'] },
];
const EXPECTED_JOBS_RULES = [
  { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'patch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['list'] },
];

let docs: Doc[] = [];
const find = (kind: string, suffix: string) => docs.find((d) => d.kind === kind && d.metadata.name.endsWith(suffix))!;

beforeAll(async () => {
  namespace = await testNamespace(core, 'kchart');
  jobsNamespace = jobsNamespaceOf(namespace);
  docs = helmTemplate(namespace);
});

afterAll(async () => {
  await removeChart(adminKc, release, namespace);
});

describe('helm chart', () => {
  test('helm template renders the worker, API, RBAC, NetworkPolicy and PodDisruptionBudget', () => {
    const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`).sort();
    expect(kinds).toEqual(
      [
        `ClusterRole/${release}-keelson-${namespace}-api`,
        `ClusterRole/${release}-keelson-${namespace}-worker`,
        `ClusterRoleBinding/${release}-keelson-${namespace}-api`,
        `ClusterRoleBinding/${release}-keelson-${namespace}-worker`,
        `Deployment/${release}-keelson-api`,
        `Deployment/${release}-keelson-worker`,
        `Namespace/${namespace}-jobs`,
        `NetworkPolicy/${release}-keelson-api`,
        `NetworkPolicy/${release}-keelson-worker`,
        `PodDisruptionBudget/${release}-keelson-api`,
        `PodDisruptionBudget/${release}-keelson-worker`,
        `Role/${release}-keelson-api-logs`,
        `Role/${release}-keelson-jobs`,
        `RoleBinding/${release}-keelson-api-logs`,
        `RoleBinding/${release}-keelson-jobs`,
        `Service/${release}-keelson-api`,
        `Service/${release}-keelson-worker-metrics`,
        `ServiceAccount/${release}-keelson-api`,
        `ServiceAccount/${release}-keelson-worker`,
      ].sort(),
    );
    expect(find('Deployment', '-worker').spec!.replicas).toBe(2);
    expect(find('ClusterRole', '-worker').rules).toEqual(EXPECTED_CLUSTER_RULES);
    expect(find('Role', '-jobs').rules).toEqual(EXPECTED_JOBS_RULES);
    expect(find('Role', '-jobs').metadata.namespace).toBe(jobsNamespace);
  });

  test('stage Jobs get a namespace of their own that allows privileged pods; the release namespace is not it', () => {
    const ns = find('Namespace', '-jobs');
    expect(ns.metadata.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'privileged' });
    expect(ns.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(JSON.stringify(find('Deployment', '-worker'))).toContain(
      `{"name":"KEELSON_NAMESPACE","value":"${jobsNamespace}"}`,
    );
    const named = helmTemplate(namespace, 'jobsNamespace=stage-jobs');
    expect(named.find((d) => d.kind === 'Namespace')!.metadata.name).toBe('stage-jobs');
    expect(() => helmTemplate(namespace, `jobsNamespace=${namespace}`)).toThrow(
      `jobsNamespace "${namespace}" is the release namespace: with createJobsNamespace the chart makes a namespace of its own`,
    );
    // Not created: the chart expects it, and may share the release namespace if that one allows privileged pods.
    const shared = helmTemplate(namespace, `jobsNamespace=${namespace}`, 'createJobsNamespace=false');
    expect(shared.filter((d) => d.kind === 'Namespace')).toEqual([]);
    expect(shared.find((d) => d.kind === 'Role' && d.metadata.name.endsWith('-jobs'))!.metadata.namespace).toBe(
      namespace,
    );
  });

  test('Temporal TLS and API key Secrets are mounted as files (reloaded on change) by the worker, the API and the controller', () => {
    const rendered = helmTemplate(
      namespace,
      'temporal.tlsSecret=temporal-mtls',
      'temporal.apiKeySecret=temporal-key',
      'customResources.enabled=true',
    );
    for (const suffix of ['-worker', '-api', '-controller']) {
      const dep = rendered.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith(suffix))!;
      const text = JSON.stringify(dep);
      expect(text).toContain('"secretName":"temporal-mtls"');
      expect(text).toContain('"name":"TEMPORAL_TLS_CERT","value":"/etc/keelson/temporal-tls/tls.crt"');
      expect(text).toContain('"name":"TEMPORAL_API_KEY_FILE","value":"/etc/keelson/temporal-api-key/api-key"');
      expect(text).toContain('{"name":"temporal-api-key","mountPath":"/etc/keelson/temporal-api-key","readOnly":true}');
      expect(text).toContain('"secretName":"temporal-key"');
      expect(text).not.toContain('"name":"TEMPORAL_API_KEY"');
    }
    expect(JSON.stringify(find('Deployment', '-api'))).toContain('"secretName":"keelson-api-tokens"');
  });

  test("every Secret a Keelson pod mounts is readable by the pod's user: group-readable and fsGroup the user's group", () => {
    const rendered = helmTemplate(
      namespace,
      'temporal.tlsSecret=temporal-mtls',
      'temporal.apiKeySecret=temporal-key',
      'api.tls.secret=api-tls',
      'api.tls.clientCASecret=api-client-ca',
      'customResources.enabled=true',
    );
    type PodSpec = {
      securityContext: { runAsUser: number; runAsGroup: number; fsGroup: number };
      volumes?: { name: string; secret?: { defaultMode: number } }[];
    };
    const deployments = rendered.filter((d) => d.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.name.split('-').pop()).sort()).toEqual(['api', 'controller', 'worker']);
    let secrets = 0;
    for (const dep of deployments) {
      const pod = (dep as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
      expect(pod.securityContext).toEqual(
        expect.objectContaining({ runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001 }),
      );
      for (const volume of pod.volumes ?? []) {
        if (!volume.secret) continue;
        secrets++;
        // Owned by root with the pod's fsGroup: the group bit is what lets user 10001 read it.
        expect({ volume: volume.name, groupReadable: (volume.secret.defaultMode & 0o040) !== 0 }).toEqual({
          volume: volume.name,
          groupReadable: true,
        });
        expect({ volume: volume.name, worldReadable: (volume.secret.defaultMode & 0o004) !== 0 }).toEqual({
          volume: volume.name,
          worldReadable: false,
        });
      }
    }
    // worker: Temporal TLS and API key; API: those, its tokens, its certificate and client CA; controller: as the worker.
    expect(secrets).toBe(9);
  });

  test('worker versioning: each revision a build of the release-named Worker Deployment, ready once current', () => {
    const worker = (...sets: string[]) =>
      helmTemplate(namespace, ...sets).find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-worker'))!;
    const envOf = (dep: Doc) =>
      (
        dep as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]!.env;
    const versioned = worker('worker.versioning.enabled=true', 'image.tag=1.4.0');
    expect(envOf(versioned).filter((e) => e.name.startsWith('KEELSON_WORKER_'))).toEqual([
      { name: 'KEELSON_WORKER_DEPLOYMENT', value: `${release}-keelson` },
      { name: 'KEELSON_WORKER_BUILD_ID', value: '1.4.0-r1' },
      { name: 'KEELSON_WORKER_PROMOTION', value: 'replay-checked' },
    ]);
    expect(JSON.stringify(versioned)).toContain('"readinessProbe":{"httpGet":{"path":"/readyz","port":"metrics"}');
    expect(JSON.stringify(versioned)).toContain('"rollingUpdate":{"maxUnavailable":0,"maxSurge":1}');
    expect(envOf(worker()).filter((e) => e.name.startsWith('KEELSON_WORKER_'))).toEqual([]);
    expect(() => worker('worker.versioning.promotion=auto')).toThrow(
      /worker\.versioning\.promotion is "auto": must be replay-checked or manual/,
    );
  });

  test("the chart's kubeVersion is the floor the worker enforces (G8)", () => {
    const chartYaml = YAML.parse(fs.readFileSync(path.join(chart, 'Chart.yaml'), 'utf8')) as { kubeVersion: string };
    expect(chartYaml.kubeVersion).toBe(`>=${formatKubeVersion(kubeFloor())}-0`);
    const below = `1.${kubeFloor().minor - 1}.0`;
    expect(() => execFileSync(helm, ['template', release, chart, '--kube-version', below], { stdio: 'pipe' })).toThrow(
      /incompatible with Kubernetes v1\.\d+\.0/,
    );
  });

  test('the rendered manifests apply to the local cluster', () => {
    // Zero replicas: the Keelson image is not on the fake nodes, and its pods would sit in other tests' drains.
    const rendered = helmTemplate(namespace, 'worker.replicas=0', 'api.replicas=0');
    const out = applyDocs(rendered);
    expect(out.trim().split('\n')).toHaveLength(rendered.length);
    expect(out).toContain(
      `clusterrole.rbac.authorization.k8s.io/${release}-keelson-${namespace}-worker serverside-applied`,
    );
    expect(out).toContain(`namespace/${jobsNamespace} serverside-applied`);
  });

  test('the Keelson pods pass the restricted Pod Security profile in the release namespace', async () => {
    await core.patchNamespace(
      { name: namespace, body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } },
      mergePatch,
    );
    for (const suffix of ['-worker', '-api']) {
      const template = find('Deployment', suffix).spec!.template as { metadata: object; spec: V1PodSpec };
      const pod = await core.createNamespacedPod({
        namespace,
        dryRun: 'All',
        body: { metadata: { ...template.metadata, name: `restricted${suffix}` }, spec: template.spec },
      });
      expect(pod.metadata?.name).toBe(`restricted${suffix}`);
    }
    // The same profile refuses a stage pod: why stage Jobs run elsewhere.
    const refused = await core
      .createNamespacedPod({
        namespace,
        dryRun: 'All',
        body: {
          metadata: { name: 'privileged' },
          spec: { hostPID: true, containers: [{ name: 'c', image: 'x', securityContext: { privileged: true } }] },
        },
      })
      .then(
        () => 'admitted',
        (e: { code?: number; body?: string }) =>
          `${e.code} ${(JSON.parse(String(e.body)) as { message: string }).message}`,
      );
    expect(refused).toMatch(/^403 .*violates PodSecurity "restricted:latest"/);
  });
});

describe('the worker with the chart ServiceAccount on the RBAC apiserver', () => {
  let saKc: KubeConfig;
  const rollout = `rbac-${Date.now().toString(36)}`;

  beforeAll(async () => {
    saKc = new KubeConfig();
    saKc.loadFromFile(await serviceAccountKubeconfig(adminKc, release, namespace));
  });

  afterAll(async () => {
    const annotations = [`skyhook.nvidia.com/nodeState_${rollout}`, `skyhook.nvidia.com/status_${rollout}`];
    for (const a of annotations) {
      await core
        .patchNode(
          { name: node, body: [{ op: 'remove', path: `/metadata/annotations/${a.replace(/\//g, '~1')}` }] },
          jsonPatch,
        )
        .catch(() => undefined);
    }
  });

  test('the start-up check (G8 floor and dry-run Job) passes with the chart permissions', async () => {
    const result = await checkKubernetes(makeClients(saKc), jobsNamespace);
    expect(result).toEqual({ ok: true, gitVersion: 'v1.37.2' });
  });

  test('stage Job, node state and node listing work with the chart permissions', async () => {
    const settings = testSettings(jobsNamespace);
    const activities = createActivities({
      kubeConfig: saKc,
      settings,
      workloads: workloadInformer(saKc, settings),
    });
    const nodes = await activities.listNodes({ selector: {} });
    expect(nodes.map((n) => n.name)).toContain(node);

    const p = pkg('rbac-probe', { KEELSON_SIM_SECONDS: '1' });
    const result = await activities.runStage(stageInput(node, p, { rollout }));
    expect(result.outcome).toBe('complete');
    const job = await batch.readNamespacedJob({ name: result.jobName, namespace: jobsNamespace });
    expect(job.metadata?.name).toBe(result.jobName);
    await activities.deleteStageJob({ jobName: result.jobName });
    const gone = await batch
      .readNamespacedJob({ name: result.jobName, namespace: jobsNamespace })
      .then((j) => j.metadata?.deletionTimestamp !== undefined)
      .catch(() => true);
    expect(gone).toBe(true);

    const state = {
      'rbac-probe|1.0.0': {
        name: 'rbac-probe',
        version: '1.0.0',
        image: p.image,
        stage: 'apply' as const,
        state: 'complete' as const,
      },
    };
    const ref = { rollout, kind: 'Skyhook' as const, generation: 1, node };
    const written = await activities.writeNodeState({ ...ref, state, status: 'complete', previous: null });
    const read = await activities.readNode(ref);
    expect(read.nodeState).toBe(written.written);
  });

  test('an action the chart does not grant is refused with 403', async () => {
    const sa = makeClients(saKc);
    const status = (p: Promise<unknown>) =>
      p.then(
        () => 200,
        (e: { code?: number }) => e.code,
      );
    // Jobs only in the Jobs namespace; no Secrets; no Node deletion; no Job deletion outside the Jobs namespace.
    expect(
      await status(
        sa.batch.createNamespacedJob({
          namespace: 'default',
          dryRun: 'All',
          body: {
            metadata: { name: 'not-granted' },
            spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x' }] } } },
          },
        }),
      ),
    ).toBe(403);
    expect(await status(sa.core.listNamespacedSecret({ namespace }))).toBe(403);
    expect(await status(sa.core.deleteNode({ name: node, dryRun: 'All' }))).toBe(403);
    expect(
      await status(
        sa.core.createNamespacedConfigMap({ namespace: 'default', dryRun: 'All', body: { metadata: { name: 'x' } } }),
      ),
    ).toBe(403);
  });
});
