import { WorkflowFailedError, WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { rolloutWorkflow } from '../../workflows';
import { statusQuery, updateSpecUpdate } from '../../workflows/messages';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, startRollout, statusBecomes, useTemporal, withWorker } from './env';

// The rollout workflow checks its input and the worker's image policy itself, so a start or an update sent straight
// to Temporal (not through the API) cannot run an image outside the policy.

const t = useTemporal();

const ALLOWED = 'registry.example/allowed/';
const policy = { allowedPrefixes: [ALLOWED], requireDigest: false, allowedSecrets: ['driver-license'] };
const pkg = (image: string, env: unknown[] = []) => ({ base: { version: '1.0.0', image, env } });

/** The failure a run ended with, or the one an update was refused with. */
async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err instanceof WorkflowFailedError || err instanceof WorkflowUpdateFailedError).toBe(true);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

test('a start straight through Temporal with an image or a Secret outside the policy fails before any node is listed', async () => {
  const cluster = new FakeCluster(['policy-1']);
  cluster.imagePolicy = policy;
  const spec = rolloutSpec('outside', {
    packages: pkg('evil.example/miner', [
      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'cluster-admin-token', key: 'token' } } },
    ]),
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'policy' });
    const failure = await failureOf(handle.result());
    expect(failure.type).toBe('InvalidSpec');
    expect(failure.message).toBe(
      `spec.packages.base.image: "evil.example/miner" is outside the image policy; allowed: ${ALLOWED} ` +
        '(KEELSON_IMAGE_ALLOWED_PREFIXES); spec.packages.base.env[0].valueFrom.secretKeyRef.name: ' +
        '"cluster-admin-token" is not an allowed Secret; allowed: driver-license (KEELSON_ENV_SECRET_ALLOWLIST)',
    );
  });
  expect(cluster.callsOf('imagePolicy')).toHaveLength(1);
  expect(cluster.callsOf('listNodes')).toEqual([]);
  expect(cluster.callsOf('ensureNodeWorkflow')).toEqual([]);
});

test('a start whose input the schema refuses fails with the field named, whatever the policy', async () => {
  const cluster = new FakeCluster(['policy-2']);
  const rollout = rolloutSpec('malformed', { packages: pkg(`${ALLOWED}base`) });
  const bad = { ...rollout, spec: { ...rollout.spec, interruptionBudget: { percent: 'all' } } };
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: rolloutWorkflowId('policy', bad.name),
      args: [{ cluster: 'policy', spec: bad as never }],
    });
    const failure = await failureOf(handle.result());
    expect(failure.type).toBe('InvalidSpec');
    expect(failure.message).toMatch(/^spec\.interruptionBudget\.percent: /);
  });
  expect(cluster.callsOf('listNodes')).toEqual([]);
});

test('updates: one outside the policy is refused, and the policy is read again at each update', async () => {
  const cluster = new FakeCluster(['policy-3']);
  cluster.imagePolicy = policy;
  const spec = rolloutSpec('inside', { packages: pkg(`${ALLOWED}base`) });
  const id = rolloutWorkflowId('policy', spec.name);
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await t.env.client.workflow.start(rolloutWorkflow, {
      taskQueue,
      workflowId: id,
      args: [{ cluster: 'policy', spec }],
    });
    await statusBecomes(handle, 'complete');
    const outside = rolloutSpec('inside', { packages: pkg('evil.example/base') });
    const refused = await failureOf(handle.executeUpdate(updateSpecUpdate, { args: [outside, { actor: 'mallory' }] }));
    expect(refused.message).toContain('spec.packages.base.image: "evil.example/base" is outside the image policy');
    // The operator pins digests from now on: an update without one is refused by the policy read at the update.
    cluster.imagePolicy = { ...policy, requireDigest: true };
    const unpinned = rolloutSpec('inside', { packages: { base: { version: '1.1.0', image: `${ALLOWED}base` } } });
    const late = await failureOf(handle.executeUpdate(updateSpecUpdate, { args: [unpinned, { actor: 'alice' }] }));
    expect(late.message).toBe(
      'spec.packages.base.containerSHA: is required: the image policy pins images by digest (KEELSON_IMAGE_REQUIRE_DIGEST)',
    );
    const pinned = rolloutSpec('inside', {
      packages: { base: { version: '1.1.0', image: `${ALLOWED}base`, containerSHA: `sha256:${'a'.repeat(64)}` } },
    });
    expect(await handle.executeUpdate(updateSpecUpdate, { args: [pinned, { actor: 'alice' }] })).toEqual({
      generation: 2,
    });
    await eventually(async () => {
      const status = await handle.query(statusQuery);
      expect(status.status).toBe('complete');
      expect(status.nodes['policy-3']!.packages.base!.version).toBe('1.1.0');
      expect(status.lastChange).toEqual({ action: 'update', actor: 'alice', generation: 2 });
    });
    // At the start and at each of the three updates: the refused ones read the policy of the moment too.
    expect(cluster.callsOf('imagePolicy')).toHaveLength(4);
    await handle.cancel();
  });
  await recordHistory(t.env, id, 'rollout-image-policy');
});

test('updates apply in the order they were accepted, whatever order their policy reads end in', async () => {
  const cluster = new FakeCluster(['policy-4']);
  const spec = rolloutSpec('ordered', { packages: pkg(`${ALLOWED}base`) });
  const version = (v: string) =>
    rolloutSpec('ordered', { packages: { base: { version: v, image: `${ALLOWED}base` } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'policy' });
    await statusBecomes(handle, 'complete');
    // The first update's policy read is slow (a worker lost mid-call), the second's is not.
    cluster.imagePolicyDelays = [3000, 0];
    const accepted = { waitForStage: WorkflowUpdateStage.ACCEPTED } as const;
    const first = await handle.startUpdate(updateSpecUpdate, { args: [version('1.1.0'), { actor: 'a' }], ...accepted });
    const second = await handle.startUpdate(updateSpecUpdate, {
      args: [version('1.2.0'), { actor: 'b' }],
      ...accepted,
    });
    expect(await first.result()).toEqual({ generation: 2 });
    expect(await second.result()).toEqual({ generation: 3 });
    await eventually(async () => {
      const status = await handle.query(statusQuery);
      expect(status.generation).toBe(3);
      expect(status.nodes['policy-4']!.packages.base!.version).toBe('1.2.0');
      expect(status.status).toBe('complete');
    });
    await handle.cancel();
  });
});
