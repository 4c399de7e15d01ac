import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import YAML from 'yaml';
import { installCustomResourceDefinitions } from '../../deploy/dev/custom-resources';
import { projectRoot, toolPaths } from '../../deploy/dev/paths';
import { kubeClients } from '../harness/kube';
import { mergePatch } from '../../activities/clients';
import { helmTemplate } from './chart-env';

// The chart's CustomResourceDefinitions on the local stack's kube-apiserver: installed only with
// customResources.enabled, accepted as structural schemas, serving the Skyhook-style manifests Keelson accepts,
// refusing what its schemas refuse, with the status subresource and Skyhook's printer columns.

const { kc } = kubeClients();
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

/** The API server's refusal body of a failed request. */
async function refusal(request: Promise<unknown>): Promise<string> {
  const error = await request.then(
    () => undefined,
    (err: unknown) => err as { code?: number; body?: string },
  );
  expect(error?.code).toBe(422);
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
    );
    expect(unknown).toContain('.spec.packages.hello.dependOn');
    const badEnum = await refusal(
      dryRunCreate(skyhook(`enum-${suffix}`, { packages: { hello: { ...pkg, interrupt: { type: 'reboots' } } } })),
    );
    expect(badEnum).toContain('spec.packages.hello.interrupt.type');
    expect(badEnum).toContain('"reboots"');
    const badSha = await refusal(
      dryRunCreate(skyhook(`sha-${suffix}`, { packages: { hello: { ...pkg, containerSHA: 'abc' } } })),
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
        packageList: 'hello',
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
      expect(row).toEqual([name, 'in_progress', '200', expect.any(String), '2', '1/3', 'hello']);
    } finally {
      await custom.deleteClusterCustomObject(where);
    }
  });
});
