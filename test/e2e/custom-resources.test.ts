import { NotFoundError } from '../../client';
import { CLEANUP_FINALIZER, OPERATOR_FINALIZERS } from '../../controller/resources';
import { E2E, eventually, PREFIX, skyhook } from './e2e-stack';
import { leaveOperatorState, operatorEntry as entryOf } from './operator-state';
import { condition, ResourceDriver } from './resource-driver';

// Custom-resource mode end to end: a rollout driven only by `kubectl apply`, `kubectl annotate` and `kubectl
// delete` of a Skyhook resource, with the controller, the real worker and fake nodes; `.status` asserted at each
// step, the controller restarted midway (it keeps nothing in memory), and the finalizer proven to run the cleanup.

const e2e = new E2E('crmode');
const driver = new ResourceDriver(e2e);
const name = `cr-${e2e.cluster}`;
const migrated = `mig-${e2e.cluster}`;
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
afterAll(
  () =>
    driver.stop([
      { kind: 'Skyhook', name },
      { kind: 'Skyhook', name: migrated },
    ]),
  180_000,
);

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

test('migration in custom-resource mode: a Skyhook the stopped operator left mid-rollout is taken over; nothing done runs again', async () => {
  const [a, b] = e2e.nodes as [string, string];
  // As the operator left the cluster when it was stopped: its resource with its finalizer and status, and node A with
  // kmod done and the driver's apply done (its config not started). The controller starts after, as on install.
  await driver.controller!.stop();
  const workloads = await e2e.recordWorkloads();
  try {
    const stateOfA = {
      'kmod|1.0.0': entryOf('kmod', '1.0.0', 'config', 'complete'),
      'driver|2.0.0': entryOf('driver', '2.0.0', 'apply', 'complete'),
    };
    await leaveOperatorState(e2e.core, a, migrated, stateOfA);
    const packages = { kmod: { version: '1.0.0', simSeconds: 1 }, driver: { version: '2.0.0', simSeconds: 1 } };
    const doc = skyhook({ name: migrated, nodes: e2e.nodes, packages });
    const labels = { 'keelson.dev/e2e': e2e.cluster };
    await apply({ ...doc, metadata: { name: migrated, labels, finalizers: [OPERATOR_FINALIZERS[0]] } });
    const operatorStatus = { status: 'in_progress', observedGeneration: 1, completeNodes: '0/2', nodesInProgress: 1 };
    await kubectl([
      'patch',
      'skyhooks',
      migrated,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: operatorStatus }),
    ]);

    await driver.runController();
    const complete = await driver.statusBecomes('Skyhook', migrated, 'complete', {
      status: 'complete',
      completeNodes: '2/2',
      observedGeneration: 1,
    });
    expect(condition(complete, 'Valid')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(workloads.jobKeys(a)).toEqual(['driver@2.0.0:config']);
    expect(workloads.jobKeys(b)).toEqual([
      'driver@2.0.0:apply',
      'driver@2.0.0:config',
      'kmod@1.0.0:apply',
      'kmod@1.0.0:config',
    ]);
    expect(complete.nodeState![a]!['kmod|1.0.0']).toMatchObject({ stage: 'config', state: 'complete' });
    // On the Node: kmod's entry as the operator wrote it; the driver's config run by Keelson (its attempts counter).
    const onA = await e2e.nodeState(a, migrated);
    expect(onA!['kmod|1.0.0']).toEqual(stateOfA['kmod|1.0.0']);
    expect(onA!['driver|2.0.0']).toEqual({ ...entryOf('driver', '2.0.0', 'config', 'complete'), attempts: 1 });

    // The operator's finalizer does not hold the delete: the controller does its cleanup and removes both.
    await kubectl(['delete', 'skyhooks', migrated, '--timeout=120s']);
    await expect(driver.resource('Skyhook', migrated)).rejects.toMatchObject({ code: 404 });
    await eventually('node state cleared', async () => {
      for (const node of e2e.nodes) expect(await e2e.nodeState(node, migrated)).toBeUndefined();
    });
  } finally {
    workloads.stop();
  }
}, 300_000);
