import { NotFoundError } from '../../client';
import { CLEANUP_FINALIZER, OPERATOR_FINALIZERS } from '../../controller/resources';
import { E2E, eventually, PREFIX, skyhook } from './e2e-stack';
import { condition, ResourceDriver } from './resource-driver';

// Custom-resource mode end to end: a rollout driven only by `kubectl apply`, `kubectl annotate` and `kubectl
// delete` of a Skyhook resource, with the controller, the real worker and fake nodes; `.status` asserted at each
// step, the controller restarted midway (it keeps nothing in memory), and the finalizer proven to run the cleanup.

const e2e = new E2E('crmode');
const driver = new ResourceDriver(e2e);
const name = `cr-${e2e.cluster}`;
const kubectl = (args: string[]) => driver.kubectl(args);
const apply = (manifest: Record<string, unknown>) => driver.apply(manifest);
const resource = () => driver.resource('Skyhook', name);
const statusBecomes = (what: string, expected: Record<string, unknown>) =>
  driver.statusBecomes('Skyhook', name, what, expected);

function manifest(version: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const doc = skyhook({ name, nodes: e2e.nodes, packages: { hello: { version, simSeconds: 2, ...extra } } });
  // With the finalizer Skyhook's operator leaves on what it handled (migration: the operator is stopped).
  const metadata = { name, labels: { 'keelson.dev/e2e': e2e.cluster }, finalizers: [OPERATOR_FINALIZERS[0]] };
  return { ...doc, metadata };
}

beforeAll(() => driver.start(2), 180_000);
afterAll(() => driver.stop([{ kind: 'Skyhook', name }]), 180_000);

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
  await driver.controller!.stop();
  await driver.runController();
  await kubectl(['annotate', 'skyhooks', name, `${PREFIX}disable=true`]);
  await eventually('the rollout disabled', async () =>
    expect((await driver.keelson.rolloutStatus(name)).disabled).toBe(true),
  );
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
  expect((await driver.keelson.rolloutStatus(name)).status).toBe('complete');

  // kubectl delete waits for the finalizers (the operator's too): the rollout's workflow ended, node state cleared.
  await kubectl(['delete', 'skyhooks', name, '--timeout=120s']);
  await expect(resource()).rejects.toMatchObject({ code: 404 });
  await expect(driver.keelson.rolloutStatus(name)).rejects.toBeInstanceOf(NotFoundError);
  await eventually('node state cleared', async () => {
    for (const node of e2e.nodes) expect(await e2e.nodeState(node, name)).toBeUndefined();
  });
}, 480_000);
