import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { KeelsonClient, loadClientSettings, NotFoundError } from '../../client';
import { startController, type RunningController } from '../../controller/controller';
import { CLEANUP_FINALIZER, OPERATOR_FINALIZERS, type RolloutResource } from '../../controller/resources';
import { installCustomResourceDefinitions } from '../../deploy/dev/custom-resources';
import { toolPaths } from '../../deploy/dev/paths';
import { stackEnv } from '../../deploy/dev/stack';
import type { RolloutResourceStatus } from '../../model/custom-resource/status';
import { E2E, eventually, PREFIX, skyhook } from './e2e-stack';

// Custom-resource mode end to end: a rollout driven only by `kubectl apply`, `kubectl annotate` and `kubectl
// delete` of a Skyhook resource, with the controller, the real worker and fake nodes; `.status` asserted at each
// step, the controller restarted midway (it keeps nothing in memory), and the finalizer proven to run the cleanup.

const e2e = new E2E('crmode');
const env = stackEnv();
const kubectlBin = path.join(toolPaths().kubeBin, 'kubectl');
const name = `cr-${e2e.cluster}`;
const where = { group: 'skyhook.nvidia.com', version: 'v1alpha1', plural: 'skyhooks', name };
let custom: CustomObjectsApi;
let keelson: KeelsonClient;
let controller: RunningController | undefined;
const controllerLog: string[] = [];

// Asynchronous: the controller runs in this process, and `kubectl delete` waits on it to remove the finalizer.
async function kubectl(args: string[], input?: string): Promise<string> {
  const run = promisify(execFile)(kubectlBin, args, { env: { ...process.env, KUBECONFIG: env.KUBECONFIG } });
  if (input !== undefined) run.child.stdin!.end(input);
  return (await run).stdout;
}

const apply = (manifest: Record<string, unknown>) => kubectl(['apply', '-f', '-'], JSON.stringify(manifest));

function manifest(version: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const doc = skyhook({ name, nodes: e2e.nodes, packages: { hello: { version, simSeconds: 2, ...extra } } });
  // With the finalizer Skyhook's operator leaves on what it handled (migration: the operator is stopped).
  const metadata = { name, labels: { 'keelson.dev/e2e': e2e.cluster }, finalizers: [OPERATOR_FINALIZERS[0]] };
  return { ...doc, metadata };
}

const resource = async () => (await custom.getClusterCustomObject(where)) as RolloutResource;

/** Waits until `.status` matches, and returns it. */
const statusBecomes = (what: string, expected: Record<string, unknown>) =>
  eventually(
    `.status ${what}`,
    async () => {
      const status = (await resource()).status ?? {};
      expect(status).toMatchObject(expected);
      return status as RolloutResourceStatus;
    },
    120_000,
  );

const condition = (status: RolloutResourceStatus, type: string) => status.conditions?.find((c) => c.type === type);

async function runController(): Promise<void> {
  controller = await startController({
    kc: e2e.kc,
    keelson: keelson.ctx,
    selector: `keelson.dev/e2e=${e2e.cluster}`,
    resyncMs: 1_000,
    log: (line) => controllerLog.push(line),
  });
}

beforeAll(async () => {
  installCustomResourceDefinitions(env.KUBECONFIG!);
  await e2e.start({ nodes: 2 });
  custom = e2e.kc.makeApiClient(CustomObjectsApi);
  keelson = await KeelsonClient.connect(
    loadClientSettings({
      TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS,
      KEELSON_CLUSTER: e2e.cluster,
      KEELSON_TASK_QUEUE: e2e.taskQueue,
    }),
  );
  await runController();
}, 180_000);

afterAll(async () => {
  await controller?.stop();
  await custom?.deleteClusterCustomObject(where).catch(() => undefined);
  await keelson?.close();
  await e2e.stop();
  if (controllerLog.length > 0) console.log(`controller log:\n${controllerLog.join('\n')}`);
}, 180_000);

test('kubectl apply, annotate and delete drive a rollout; .status follows each step', async () => {
  // Created paused: the rollout starts, nothing runs, and .status says so in Skyhook's form.
  await apply({
    ...manifest('1.0.0'),
    metadata: { ...(manifest('1.0.0').metadata as object), annotations: { [`${PREFIX}pause`]: 'true' } },
  });
  const paused = await statusBecomes('paused', {
    status: 'paused',
    observedGeneration: 1,
    completeNodes: '0/2',
    nodesInProgress: 0,
    packageList: 'hello:1.0.0',
  });
  expect(condition(paused, 'Valid')).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1 });
  expect(condition(paused, 'Ready')).toMatchObject({ status: 'False', reason: 'Paused' });
  expect((await resource()).metadata.finalizers).toEqual([OPERATOR_FINALIZERS[0], CLEANUP_FINALIZER]);
  expect(await e2e.nodeState(e2e.nodes[0]!, name)).toBeUndefined();

  // Resumed by removing the annotation: every node completes.
  await kubectl(['annotate', 'skyhooks', name, `${PREFIX}pause-`]);
  const complete = await statusBecomes('complete', { status: 'complete', completeNodes: '2/2', nodesInProgress: 0 });
  expect(complete.nodeStatus).toEqual({ [e2e.nodes[0]!]: 'complete', [e2e.nodes[1]!]: 'complete' });
  for (const node of e2e.nodes) {
    expect(complete.nodeState![node]!['hello|1.0.0']).toMatchObject({
      name: 'hello',
      version: '1.0.0',
      image: 'registry.example/keelson/hello',
      stage: 'config',
      state: 'complete',
    });
  }
  expect(condition(complete, 'Ready')).toMatchObject({ status: 'True', reason: 'Complete' });

  // A restarted controller reads its state from the resource and the workflow: disable, then a new version applied
  // while disabled, then enable, which runs it.
  await controller!.stop();
  await runController();
  await kubectl(['annotate', 'skyhooks', name, `${PREFIX}disable=true`]);
  await eventually('the rollout disabled', async () => expect((await keelson.rolloutStatus(name)).disabled).toBe(true));
  await apply(manifest('1.1.0'));
  const disabled = await statusBecomes('disabled with generation 2', { status: 'disabled', observedGeneration: 2 });
  expect(Object.keys(disabled.nodeState![e2e.nodes[0]!]!)).toContain('hello|1.0.0');
  await kubectl(['annotate', 'skyhooks', name, `${PREFIX}disable-`]);
  const upgraded = await statusBecomes('complete at 1.1.0', {
    status: 'complete',
    completeNodes: '2/2',
    observedGeneration: 2,
  });
  expect(upgraded.nodeState![e2e.nodes[1]!]!['hello|1.1.0']).toMatchObject({ state: 'complete' });

  // A manifest the apiserver stores but Keelson refuses: a condition names the field, the rollout runs on as it was.
  await apply(manifest('1.2.0', { dependsOn: { missing: '1.0' } }));
  const invalid = await eventually('Valid=False', async () => {
    const status = (await resource()).status!;
    expect(condition(status, 'Valid')).toMatchObject({ status: 'False', reason: 'Invalid', observedGeneration: 3 });
    return status;
  });
  expect(condition(invalid, 'Valid')!.message).toContain(`Skyhook/${name}.spec.packages.hello.dependsOn.missing`);
  expect(invalid).toMatchObject({ status: 'complete', observedGeneration: 2 });
  expect((await keelson.rolloutStatus(name)).status).toBe('complete');

  // kubectl delete waits for the finalizers (the operator's too): the rollout's workflow ended, node state cleared.
  await kubectl(['delete', 'skyhooks', name, '--timeout=120s']);
  await expect(resource()).rejects.toMatchObject({ code: 404 });
  await expect(keelson.rolloutStatus(name)).rejects.toBeInstanceOf(NotFoundError);
  await eventually('node state cleared', async () => {
    for (const node of e2e.nodes) expect(await e2e.nodeState(node, name)).toBeUndefined();
  });
}, 480_000);
