import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { AuthorizationV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import YAML from 'yaml';
import { installCustomResourceDefinitions } from '../../deploy/dev/custom-resources';
import { projectRoot, toolPaths } from '../../deploy/dev/paths';
import { kubeClients } from '../../harness/kube';
import { mergePatch } from '../../activities/clients';
import { applyDocs, helmTemplate } from './chart-env';

// The chart's CustomResourceDefinitions on the local stack's kube-apiserver: installed only with
// customResources.enabled, accepted as structural schemas, serving the Skyhook-style manifests Keelson accepts,
// refusing what its schemas refuse, with the status subresource and Skyhook's printer columns.

const { kc, core } = kubeClients();
const custom = kc.makeApiClient(CustomObjectsApi);
const kubectl = path.join(toolPaths().kubeBin, 'kubectl');
const suffix = Date.now().toString(36);

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> };

const PLURALS: Record<string, string> = {
  Skyhook: 'skyhooks',
  NodeWright: 'nodewrights',
  DeploymentPolicy: 'deploymentpolicies',
};

function target(doc: Manifest) {
  const [group, version] = doc.apiVersion.split('/') as [string, string];
  return { group, version, plural: PLURALS[doc.kind]! };
}

/** A dry-run create with strict field validation, as `kubectl apply` sends by default. */
const dryRunCreate = (doc: Manifest) =>
  custom.createClusterCustomObject({ ...target(doc), body: doc, dryRun: 'All', fieldValidation: 'Strict' });

const manifests = (file: string) =>
  YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as Manifest | null)
    .filter((d): d is Manifest => d !== null);

const skyhook = (name: string, spec: Record<string, unknown>): Manifest => ({
  apiVersion: 'skyhook.nvidia.com/v1alpha1',
  kind: 'Skyhook',
  metadata: { name },
  spec,
});

/** The API server's refusal body of a failed request: 400 for strict field validation, 422 for a schema rule. */
async function refusal(request: Promise<unknown>, code: 400 | 422): Promise<string> {
  const error = await request.then(
    () => undefined,
    (err: unknown) => err as { code?: number; body?: string },
  );
  expect(error?.code).toBe(code);
  return String(error?.body);
}

beforeAll(() => {
  installCustomResourceDefinitions(process.env.KUBECONFIG!);
});

describe('custom-resource definitions in the chart', () => {
  test('installed only when customResources.enabled is on', () => {
    const crds = (sets: string[]) =>
      helmTemplate('crd', 'default', ...sets)
        .filter((d) => d.kind === 'CustomResourceDefinition')
        .map((d) => d.metadata.name)
        .sort();
    expect(crds([])).toEqual([]);
    expect(crds(['customResources.enabled=true'])).toEqual([
      'deploymentpolicies.nodewright.nvidia.com',
      'deploymentpolicies.skyhook.nvidia.com',
      'nodewrights.nodewright.nvidia.com',
      'skyhooks.skyhook.nvidia.com',
    ]);
  });

  test('one controller at most: two replicas are refused, the value named (it has no leader election)', () => {
    const controllers = (replicas: string) =>
      helmTemplate('crd', 'default', 'customResources.enabled=true', `customResources.controller.replicas=${replicas}`)
        .filter((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-controller'))
        .map((d) => (d as { spec?: { replicas?: number } }).spec?.replicas);
    expect(controllers('1')).toEqual([1]);
    expect(controllers('0')).toEqual([0]);
    expect(() => controllers('2')).toThrow(/customResources\.controller\.replicas is 2: must be 0 or 1/);
  });

  test('the apiserver accepts the Skyhook, NodeWright and policy manifests Keelson accepts', async () => {
    const files = [
      'test/fixtures/manifests/skyhook-valid.yaml',
      'test/fixtures/manifests/nodewright-valid.yaml',
      'test/fixtures/manifests/policy-and-rollout.yaml',
      'docs/examples/gpu-driver.yaml',
      'docs/examples/policy-and-rollout.yaml',
    ];
    const kinds: string[] = [];
    for (const file of files) {
      for (const doc of manifests(path.join(projectRoot, file))) {
        const created = (await dryRunCreate(doc)) as Manifest;
        expect(created.spec.packages ?? null).toEqual(doc.spec.packages ?? null);
        kinds.push(doc.kind);
      }
    }
    expect(new Set(kinds)).toEqual(new Set(['Skyhook', 'NodeWright', 'DeploymentPolicy']));
  });

  test('the apiserver fills Skyhook defaults and keeps packages: null', async () => {
    const created = (await dryRunCreate(skyhook(`defaults-${suffix}`, { packages: null }))) as Manifest;
    expect(created.spec).toMatchObject({ packages: null, priority: 200, serial: false, deploymentPolicy: '' });
  });

  test('an unknown field, a wrong enum and a bad package field are refused, each named', async () => {
    const pkg = { version: '1.0.0', image: 'ghcr.io/nvidia/skyhook/agentless' };
    const unknown = await refusal(
      dryRunCreate(skyhook(`unknown-${suffix}`, { packages: { hello: { ...pkg, dependOn: {} } } })),
      400,
    );
    expect(unknown).toContain('spec.packages.hello.dependOn');
    const badEnum = await refusal(
      dryRunCreate(skyhook(`enum-${suffix}`, { packages: { hello: { ...pkg, interrupt: { type: 'reboots' } } } })),
      422,
    );
    expect(badEnum).toContain('spec.packages.hello.interrupt.type');
    expect(badEnum).toContain('reboots');
    const badSha = await refusal(
      dryRunCreate(skyhook(`sha-${suffix}`, { packages: { hello: { ...pkg, containerSHA: 'abc' } } })),
      422,
    );
    expect(badSha).toContain('spec.packages.hello.containerSHA');
  });

  test('status is a subresource, and kubectl get prints it in Skyhook columns', async () => {
    const name = `columns-${suffix}`;
    const where = { group: 'skyhook.nvidia.com', version: 'v1alpha1', plural: 'skyhooks', name };
    await custom.createClusterCustomObject({
      ...target(skyhook(name, {})),
      body: skyhook(name, { packages: { hello: { version: '1.0.0', image: 'ghcr.io/x/hello' } } }),
    });
    try {
      const status = {
        status: 'in_progress',
        completeNodes: '1/3',
        nodesInProgress: 2,
        packageList: 'hello:1.0.0',
        observedGeneration: 1,
        nodeStatus: { 'node-001': 'complete' },
        nodeState: {
          'node-001': {
            'hello|1.0.0': {
              name: 'hello',
              version: '1.0.0',
              image: 'ghcr.io/x/hello',
              stage: 'config',
              state: 'complete',
            },
          },
        },
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'InProgress',
            message: '1/3 nodes complete',
            lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          },
        ],
      };
      // A status sent to the main resource is dropped: only the status subresource writes it.
      const ignored = (await custom.patchClusterCustomObject({ ...where, body: { status } }, mergePatch)) as {
        status?: unknown;
      };
      expect(ignored.status).toBeUndefined();
      const written = (await custom.patchClusterCustomObjectStatus({ ...where, body: { status } }, mergePatch)) as {
        status: unknown;
      };
      expect(written.status).toEqual(status);
      const table = execFileSync(kubectl, ['get', 'skyhooks', name], {
        env: { ...process.env, KUBECONFIG: process.env.KUBECONFIG },
        encoding: 'utf8',
      });
      const [header, row] = table
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s{2,}/));
      expect(header).toEqual([
        'NAME',
        'STATUS',
        'PRIORITY',
        'AGE',
        'NODES IN-PROGRESS',
        'COMPLETE NODES',
        'PACKAGES',
        'POLICY',
      ]);
      expect(row).toEqual([name, 'in_progress', '200', expect.any(String), '2', '1/3', 'hello:1.0.0']);
    } finally {
      await custom.deleteClusterCustomObject(where);
    }
  });
});

describe('custom-resource mode RBAC in the chart', () => {
  const release = `kr${suffix}`;
  const namespace = 'default';
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const authz = kc.makeApiClient(AuthorizationV1Api);
  const users = { editor: `editor-${suffix}`, viewer: `viewer-${suffix}`, scraper: `scraper-${suffix}` };
  const roleOf = { editor: 'editor', viewer: 'viewer', scraper: 'metrics-reader' };
  const controllerUser = `system:serviceaccount:${namespace}:${release}-keelson-controller`;

  beforeAll(async () => {
    const docs = helmTemplate(
      release,
      namespace,
      'customResources.enabled=true',
      'worker.replicas=0',
      'api.enabled=false',
    )
      .filter((d) => ['ClusterRole', 'ClusterRoleBinding', 'ServiceAccount'].includes(d.kind))
      .filter((d) => /-(controller|editor|viewer|metrics-reader)$/.test(d.metadata.name));
    applyDocs(docs);
    for (const [who, user] of Object.entries(users)) {
      const role = `${release}-keelson-${roleOf[who as keyof typeof users]}`;
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: `${role}-${user}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
        },
      });
    }
  });

  afterAll(async () => {
    for (const [who, user] of Object.entries(users)) {
      const role = `${release}-keelson-${roleOf[who as keyof typeof users]}`;
      await rbac.deleteClusterRoleBinding({ name: `${role}-${user}` }).catch(() => undefined);
    }
    for (const name of ['controller', 'editor', 'viewer', 'metrics-reader'].map((r) => `${release}-keelson-${r}`)) {
      await rbac.deleteClusterRole({ name }).catch(() => undefined);
    }
    await rbac.deleteClusterRoleBinding({ name: `${release}-keelson-${namespace}-controller` }).catch(() => undefined);
    await rbac.deleteClusterRole({ name: `${release}-keelson-${namespace}-controller` }).catch(() => undefined);
    await core
      .deleteNamespacedServiceAccount({ name: `${release}-keelson-controller`, namespace })
      .catch(() => undefined);
  });

  /** The apiserver's own answer: may `user` do `verb` on `resource` of `group`? */
  async function allowed(user: string, verb: string, group: string, resource: string): Promise<boolean> {
    const [plural, subresource] = resource.split('/');
    const review = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user,
          ...(user.startsWith('system:serviceaccount:') && { groups: ['system:serviceaccounts'] }),
          resourceAttributes: { verb, group, resource: plural, ...(subresource && { subresource }) },
        },
      },
    });
    return review.status?.allowed ?? false;
  }

  test('the controller reads rollouts and policies, patches finalizers and status, and deletes nothing', async () => {
    for (const [group, plural] of [
      ['skyhook.nvidia.com', 'skyhooks'],
      ['nodewright.nvidia.com', 'nodewrights'],
    ] as const) {
      for (const verb of ['get', 'list', 'watch', 'patch'])
        expect(await allowed(controllerUser, verb, group, plural)).toBe(true);
      expect(await allowed(controllerUser, 'patch', group, `${plural}/status`)).toBe(true);
      expect(await allowed(controllerUser, 'delete', group, plural)).toBe(false);
      expect(await allowed(controllerUser, 'create', group, plural)).toBe(false);
      expect(await allowed(controllerUser, 'watch', group, 'deploymentpolicies')).toBe(true);
      expect(await allowed(controllerUser, 'patch', group, 'deploymentpolicies')).toBe(false);
    }
  });

  test("editor, viewer and metrics-reader: what Skyhook's roles allow", async () => {
    for (const group of ['skyhook.nvidia.com', 'nodewright.nvidia.com']) {
      const plural = group.startsWith('skyhook') ? 'skyhooks' : 'nodewrights';
      for (const verb of ['create', 'patch', 'delete', 'list'])
        expect(await allowed(users.editor, verb, group, plural)).toBe(true);
      expect(await allowed(users.editor, 'create', group, 'deploymentpolicies')).toBe(true);
      expect(await allowed(users.editor, 'patch', group, `${plural}/status`)).toBe(false);
      expect(await allowed(users.viewer, 'list', group, plural)).toBe(true);
      expect(await allowed(users.viewer, 'get', group, `${plural}/status`)).toBe(true);
      for (const verb of ['create', 'patch', 'delete'])
        expect(await allowed(users.viewer, verb, group, plural)).toBe(false);
      expect(await allowed(users.scraper, 'get', group, plural)).toBe(false);
    }
    const metrics = async (user: string) =>
      (
        await authz.createSubjectAccessReview({
          body: { spec: { user, nonResourceAttributes: { verb: 'get', path: '/metrics' } } },
        })
      ).status?.allowed ?? false;
    expect(await metrics(users.scraper)).toBe(true);
    expect(await metrics(users.viewer)).toBe(false);
  });
});
