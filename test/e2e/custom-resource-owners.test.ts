import { ConflictError, NotFoundError } from '../../client';
import { ROLLOUT_WORKFLOW_TYPE } from '../../client/rollouts';
import { CONTROLLER_ACTOR } from '../../model/custom-resource/ownership';
import { parsedRollouts } from '../../harness/manifests';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { API_GROUPS, ROLLOUT_KINDS, type RolloutKind } from '../../model/wire';
import { pauseSignal, STARTED_BY_MEMO, updateSpecUpdate } from '../../workflows/messages';
import { E2E, eventually, skyhook, sleep, type PackageDef } from './e2e-stack';
import { ResourceDriver } from './resource-driver';

// Custom-resource mode where a resource does not simply own its rollout: a name another owner holds (the API,
// Skyhook/foo against NodeWright/foo, a rollout started before owners were recorded), a spec that fails validation
// while an operator pauses or disables, and specs the worker's image policy refuses.

const ALLOWED = 'registry.example/keelson/';
const e2e = new E2E('crowners', { KEELSON_IMAGE_ALLOWED_PREFIXES: ALLOWED });
const driver = new ResourceDriver(e2e);
const made: { kind: RolloutKind; name: string }[] = [];
const nameOf = (what: string) => `${what}-${e2e.cluster}`;

function manifest(kind: RolloutKind, name: string, hello: PackageDef, annotations: Record<string, string> = {}) {
  const doc = skyhook({ name, nodes: e2e.nodes, packages: { hello: { simSeconds: 1, ...hello } } });
  const metadata = { name, labels: { 'keelson.dev/e2e': e2e.cluster }, annotations };
  made.push({ kind, name });
  return { ...doc, apiVersion: ROLLOUT_KINDS[kind], kind, metadata };
}

const specOf = (doc: Record<string, unknown>) => parsedRollouts([doc])[0]!;
/** Waits until the Skyhook's Valid condition says the worker's image policy refused the generation. */
const refusedAt = (name: string, observedGeneration: number) =>
  driver.conditionBecomes('Skyhook', name, 'Valid', { status: 'False', reason: 'Refused', observedGeneration });
const plural = (kind: RolloutKind) => `${kind.toLowerCase()}s.${API_GROUPS[kind]}`;
const handleOf = (name: string) => driver.keelson.ctx.client.workflow.getHandle(rolloutWorkflowId(e2e.cluster, name));
const rolloutComplete = (name: string) =>
  eventually(`rollout ${name} complete`, async () =>
    expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ status: 'complete' }),
  );

beforeAll(() => driver.start(2), 180_000);
afterAll(() => driver.stop(made), 180_000);

test('a rollout started through the API is not steered, paused or deleted by a resource of its name', async () => {
  const name = nameOf('api');
  await driver.keelson.startRollout(specOf(manifest('Skyhook', name, { version: '1.0.0' })));
  await rolloutComplete(name);

  await driver.apply(manifest('Skyhook', name, { version: '2.0.0' }, { [`${API_GROUPS.Skyhook}/pause`]: 'true' }));
  const taken = await driver.conditionBecomes('Skyhook', name, 'Valid', { status: 'False', reason: 'NameTaken' });
  expect(taken.message).toContain(`rollout ${name} is owned by the API`);
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({
    owner: 'api',
    paused: false,
    packageList: 'hello:1.0.0',
  });

  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=60s']);
  await expect(driver.resource('Skyhook', name)).rejects.toMatchObject({ code: 404 });
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ status: 'complete', owner: 'api' });
  await driver.keelson.deleteRollout(name);
}, 240_000);

test('Skyhook/foo and NodeWright/foo: the first owns the rollout, the other is told so and its delete leaves it', async () => {
  const name = nameOf('shared');
  const first = manifest('Skyhook', name, { version: '1.0.0' });
  await driver.apply(first);
  await driver.statusBecomes('Skyhook', name, 'complete', { status: 'complete', observedGeneration: 1 });

  await driver.apply(manifest('NodeWright', name, { version: '1.1.0' }));
  const taken = await driver.conditionBecomes('NodeWright', name, 'Valid', { status: 'False', reason: 'NameTaken' });
  expect(taken.message).toContain(`rollout ${name} is owned by Skyhook/${name} (skyhook.nvidia.com)`);
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({
    owner: 'Skyhook.skyhook.nvidia.com',
    packageList: 'hello:1.0.0',
  });
  // Nor may the API start, change or delete it: the resource's next pass would not see the one and would undo the
  // other; a start with the resource's own spec would answer with a rollout the caller does not own.
  const changed = specOf({ ...skyhook({ name, nodes: e2e.nodes, packages: { hello: { version: '3.0.0' } } }) });
  const owned = `rollout ${name} is owned by Skyhook/${name} (skyhook.nvidia.com)`;
  await expect(driver.keelson.startRollout(specOf(first))).rejects.toThrow(`${owned}; it may not be started through`);
  await expect(driver.keelson.updateSpec(name, changed)).rejects.toThrow(owned);
  await expect(driver.keelson.deleteRollout(name)).rejects.toBeInstanceOf(ConflictError);
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ status: 'complete', packageList: 'hello:1.0.0' });

  await driver.kubectl(['delete', plural('NodeWright'), name, '--timeout=60s']);
  await expect(driver.resource('NodeWright', name)).rejects.toMatchObject({ code: 404 });
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ status: 'complete', packageList: 'hello:1.0.0' });

  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=120s']);
  await expect(driver.keelson.rolloutStatus(name)).rejects.toBeInstanceOf(NotFoundError);
}, 240_000);

test('a rollout started by the controller before owners were recorded: adopted by a resource of the kind it runs', async () => {
  const name = nameOf('legacy');
  // The start as the controller made it before owners were recorded: its actor in the memo, no owner.
  const spec = specOf(manifest('Skyhook', name, { version: '1.0.0' }));
  await driver.keelson.ctx.client.workflow.start(ROLLOUT_WORKFLOW_TYPE, {
    workflowId: rolloutWorkflowId(e2e.cluster, name),
    taskQueue: e2e.taskQueue,
    args: [{ cluster: e2e.cluster, spec }],
    memo: { [STARTED_BY_MEMO]: CONTROLLER_ACTOR },
  });
  await rolloutComplete(name);

  await driver.apply(manifest('NodeWright', name, { version: '1.0.0' }));
  const taken = await driver.conditionBecomes('NodeWright', name, 'Valid', { status: 'False', reason: 'NameTaken' });
  expect(taken.message).toContain(`is owned by Skyhook/${name} (skyhook.nvidia.com)`);

  await driver.apply(manifest('Skyhook', name, { version: '1.0.0' }, { [`${API_GROUPS.Skyhook}/pause`]: 'true' }));
  await driver.statusBecomes('Skyhook', name, 'adopted and paused', { status: 'paused', observedGeneration: 1 });
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ paused: true, packageList: 'hello:1.0.0' });
  expect((await driver.keelson.rolloutStatus(name)).owner).toBeUndefined();

  await driver.kubectl(['delete', plural('NodeWright'), name, '--timeout=60s']);
  expect((await driver.keelson.rolloutStatus(name)).paused).toBe(true);
  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=120s']);
  await expect(driver.keelson.rolloutStatus(name)).rejects.toBeInstanceOf(NotFoundError);
}, 240_000);

test('pause, disable, resume and enable reach the rollout while the spec is invalid', async () => {
  const name = nameOf('invalid');
  const pause = `${API_GROUPS.Skyhook}/pause`;
  const disable = `${API_GROUPS.Skyhook}/disable`;
  await driver.apply(manifest('Skyhook', name, { version: '1.0.0' }));
  await driver.statusBecomes('Skyhook', name, 'complete', { status: 'complete', observedGeneration: 1 });
  await driver.apply(manifest('Skyhook', name, { version: '1.1.0', dependsOn: { missing: '1.0' } }));
  await driver.conditionBecomes('Skyhook', name, 'Valid', {
    status: 'False',
    reason: 'Invalid',
    observedGeneration: 2,
  });

  await driver.kubectl(['annotate', plural('Skyhook'), name, `${pause}=true`]);
  await driver.statusBecomes('Skyhook', name, 'paused', { status: 'paused', observedGeneration: 1 });
  expect((await driver.keelson.rolloutStatus(name)).paused).toBe(true);

  await driver.kubectl(['annotate', plural('Skyhook'), name, `${disable}=true`]);
  await driver.statusBecomes('Skyhook', name, 'disabled', { status: 'disabled', observedGeneration: 1 });
  expect((await driver.keelson.rolloutStatus(name)).disabled).toBe(true);

  await driver.kubectl(['annotate', plural('Skyhook'), name, `${pause}-`, `${disable}-`]);
  await driver.statusBecomes('Skyhook', name, 'complete again', { status: 'complete', observedGeneration: 1 });
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ paused: false, disabled: false });
  expect((await driver.resource('Skyhook', name)).status!.conditions).toContainEqual(
    expect.objectContaining({ type: 'Valid', status: 'False', reason: 'Invalid', observedGeneration: 2 }),
  );
  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=120s']);
}, 240_000);

test('a start outside the image policy: Valid=False names the image and the policy; not started again', async () => {
  const name = nameOf('refused');
  await driver.apply(manifest('Skyhook', name, { version: '1.0.0', image: 'evil.example/hello' }));
  const refused = await refusedAt(name, 1);
  expect(refused.message).toContain(
    `spec.packages.hello.image: "evil.example/hello" is outside the image policy; allowed: ${ALLOWED} ` +
      '(KEELSON_IMAGE_ALLOWED_PREFIXES)',
  );
  const first = await handleOf(name).describe();
  expect(first.status.name).toBe('FAILED');
  await sleep(4_000); // four resyncs
  expect((await handleOf(name).describe()).runId).toBe(first.runId);
  expect(driver.logged(name)).toEqual([]);

  // Mended: the new generation starts.
  await driver.apply(manifest('Skyhook', name, { version: '1.0.0' }));
  await driver.statusBecomes('Skyhook', name, 'complete', { status: 'complete', observedGeneration: 2 });
  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=120s']);
}, 240_000);

test('an update outside the image policy: Valid=False names the image; the rollout runs on, the update not sent again', async () => {
  const name = nameOf('update');
  await driver.apply(manifest('Skyhook', name, { version: '1.0.0' }));
  await driver.statusBecomes('Skyhook', name, 'complete', { status: 'complete', observedGeneration: 1 });

  await driver.apply(manifest('Skyhook', name, { version: '1.1.0', image: 'evil.example/hello' }));
  const refused = await refusedAt(name, 2);
  expect(refused.message).toBe(
    'the worker refused this spec: spec.packages.hello.image: "evil.example/hello" is outside the image policy; ' +
      `allowed: ${ALLOWED} (KEELSON_IMAGE_ALLOWED_PREFIXES)`,
  );
  await sleep(4_000); // four resyncs
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ status: 'complete', packageList: 'hello:1.0.0' });
  expect((await driver.resource('Skyhook', name)).status).toMatchObject({ status: 'complete', observedGeneration: 1 });
  const history = await handleOf(name).fetchHistory();
  const updates = (history.events ?? []).filter(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === updateSpecUpdate.name,
  );
  expect(updates).toHaveLength(1);
  expect(driver.logged(name)).toEqual([]);
  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=120s']);
}, 240_000);

test('a pause that comes with a new spec in one edit reaches the rollout before the spec', async () => {
  const name = nameOf('pausedit');
  const pause = `${API_GROUPS.Skyhook}/pause`;
  await driver.apply(manifest('Skyhook', name, { version: '1.0.0' }));
  await driver.statusBecomes('Skyhook', name, 'complete', { status: 'complete', observedGeneration: 1 });

  await driver.apply(manifest('Skyhook', name, { version: '2.0.0' }, { [pause]: 'true' }));
  await driver.statusBecomes('Skyhook', name, 'paused', { status: 'paused', observedGeneration: 2 });
  const events = (await handleOf(name).fetchHistory()).events ?? [];
  const paused = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === pauseSignal.name);
  const updated = events.findIndex(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === updateSpecUpdate.name,
  );
  expect(paused).toBeGreaterThan(0);
  expect(updated).toBeGreaterThan(paused);

  await driver.kubectl(['annotate', plural('Skyhook'), name, `${pause}-`]);
  await driver.statusBecomes('Skyhook', name, 'complete', { status: 'complete', observedGeneration: 2 });
  expect(await driver.keelson.rolloutStatus(name)).toMatchObject({ packageList: 'hello:2.0.0' });
  await driver.kubectl(['delete', plural('Skyhook'), name, '--timeout=120s']);
}, 240_000);
