import type { RunStageInput } from '../../activities/contract';
import { stageJobName, type RolloutSpec } from '../../model';
import {
  desireSignal,
  nodeStateQuery,
  pauseSignal,
  resumeSignal,
  updateSpecUpdate,
  type DesireArgs,
} from '../../workflows/messages';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, startRollout, statusBecomes, useTemporal, withWorker } from './env';

// The node's side of G11 and G12: spec changes and an interrupt meeting stage Jobs in flight, on a cluster whose
// deleted pods run on for their grace period. The rollout completes, and no package ever has two executors.

const t = useTemporal();
const image = (n: string) => `ghcr.io/example/${n}`;
const NODE = 'node-a';

const stageStarted = (cluster: FakeCluster, what: string) => cluster.stagesOn(NODE).includes(what);
const jobOf = (rollout: string, pkg: string, version: string, stage: RunStageInput['stage']) =>
  stageJobName({ rollout, package: pkg, version, stage, node: NODE });

/** Runs the rollout, applies `change` once `when` holds, and waits for completion; returns what the node recorded. */
async function changeMidStage(
  cluster: FakeCluster,
  spec: RolloutSpec,
  when: () => boolean,
  change: (spec: RolloutSpec) => RolloutSpec,
  fixture: string,
) {
  return withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await eventually(() => expect(when()).toBe(true));
    await handle.executeUpdate(updateSpecUpdate, { args: [change(spec)] });
    await statusBecomes(handle, 'complete', 60_000);
    const node = t.env.client.workflow.getHandle(nodeWorkflowId(spec.name, NODE));
    await recordHistory(t.env, nodeWorkflowId(spec.name, NODE), fixture);
    return (await node.query(nodeStateQuery)).rollouts[spec.name]!.packages;
  });
}

test('G11 a version bump during a running apply stops it, and the upgrade starts only once its Job is gone', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.podTerminationMs = 1500;
  cluster.script = (i) => ({ ms: i.stage === 'apply' && i.package.version === '1.0.0' ? 60_000 : 200 });
  const spec = rolloutSpec('bump', { packages: { drv: { version: '1.0.0', image: image('drv') } } });
  const state = await changeMidStage(
    cluster,
    spec,
    () => stageStarted(cluster, 'drv@1.0.0:apply'),
    (s) => ({ ...s, spec: { ...s.spec, packages: { drv: { ...s.spec.packages.drv!, version: '2.0.0' } } } }),
    'node-version-bump-mid-apply',
  );
  expect(cluster.breaches).toEqual([]);
  expect(state['drv|2.0.0']).toMatchObject({ stage: 'config', state: 'complete' });
  expect(state['drv|1.0.0']).toBeUndefined();
  // The v1 Job was deleted in the foreground before the upgrade's Job was made.
  const deleted = cluster.calls.findIndex(
    (c) =>
      c.name === 'deleteStageJob' &&
      (c.input as { jobName: string; untilGone?: boolean }).jobName === jobOf('bump', 'drv', '1.0.0', 'apply') &&
      (c.input as { untilGone?: boolean }).untilGone === true,
  );
  const upgraded = cluster.calls.findIndex(
    (c) => c.name === 'runStage' && (c.input as RunStageInput).stage === 'upgrade',
  );
  expect(deleted).toBeGreaterThanOrEqual(0);
  expect(upgraded).toBeGreaterThan(deleted);
});

test('G11 removing a package during its apply stops the apply before its uninstall runs', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.podTerminationMs = 1500;
  cluster.script = (i) => ({ ms: i.stage === 'apply' && i.package.name === 'old' ? 60_000 : 200 });
  const spec = rolloutSpec('removal', {
    packages: { old: { version: '1.0.0', image: image('old') }, keep: { version: '1.0.0', image: image('keep') } },
  });
  const state = await changeMidStage(
    cluster,
    spec,
    () => stageStarted(cluster, 'old@1.0.0:apply'),
    (s) => ({ ...s, spec: { ...s.spec, packages: { keep: s.spec.packages.keep! } } }),
    'node-removal-mid-apply',
  );
  expect(cluster.breaches).toEqual([]);
  expect(cluster.stagesOn(NODE)).toContain('old@1.0.0:uninstall');
  expect(state['old|1.0.0']).toBeUndefined();
});

test('G11 a configMap change during config runs config again only once the running config Job is gone', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.podTerminationMs = 1500;
  let configs = 0;
  cluster.script = (i) => ({ ms: i.stage === 'config' && ++configs === 1 ? 60_000 : 200 });
  const spec = rolloutSpec('conf', {
    packages: { tune: { version: '1.0.0', image: image('tune'), configMap: { 'a.conf': 'one' } } },
  });
  const state = await changeMidStage(
    cluster,
    spec,
    () => stageStarted(cluster, 'tune@1.0.0:config'),
    (s) => ({
      ...s,
      spec: { ...s.spec, packages: { tune: { ...s.spec.packages.tune!, configMap: { 'a.conf': 'two' } } } },
    }),
    'node-config-change-mid-config',
  );
  expect(cluster.breaches).toEqual([]);
  expect(cluster.stagesOn(NODE).filter((x) => x === 'tune@1.0.0:config')).toHaveLength(2);
  expect(state['tune|1.0.0']).toMatchObject({ stage: 'config', state: 'complete' });
});

test('a configMap change while apply is failing runs apply again, never skips to config', async () => {
  const cluster = new FakeCluster([NODE]);
  let applies = 0;
  cluster.script = (i) => ({ ms: 200, fail: i.stage === 'apply' && ++applies === 1 });
  const rollout = rolloutSpec('fixcfg', {
    packages: { tune: { version: '1.0.0', image: image('tune'), configMap: { 'a.conf': 'bad' } } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, rollout);
    await statusBecomes(handle, 'erroring');
    const fixed = {
      ...rollout,
      spec: {
        ...rollout.spec,
        packages: { tune: { ...rollout.spec.packages.tune!, configMap: { 'a.conf': 'good' } } },
      },
    };
    await handle.executeUpdate(updateSpecUpdate, { args: [fixed] });
    await statusBecomes(handle, 'complete', 60_000);
    await recordHistory(t.env, nodeWorkflowId('fixcfg', NODE), 'node-rerun-fixed-apply');
  });
  expect(cluster.stagesOn(NODE)).toEqual(['tune@1.0.0:apply', 'tune@1.0.0:apply', 'tune@1.0.0:config']);
});

test('G12 an independent package never runs a stage beside the reboot, and the reboot waits for its running stage', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.interruptMs = 3000;
  // tune's apply is still running when drv reaches its interrupt; its config would start during the reboot.
  cluster.script = (i) => ({ ms: i.package.name === 'tune' && i.stage === 'apply' ? 4000 : 200 });
  const spec = rolloutSpec('alone', {
    interruptionBudget: { count: 1 },
    packages: {
      drv: { version: '1.0.0', image: image('drv'), interrupt: { type: 'reboot' } },
      tune: { version: '1.0.0', image: image('tune') },
    },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(handle, 'complete', 60_000);
    await recordHistory(t.env, nodeWorkflowId('alone', NODE), 'node-interrupt-alone');
  });
  expect(cluster.breaches).toEqual([]);
  expect(cluster.callsOf('runInterrupt')).toHaveLength(1);
  expect(cluster.stagesOn(NODE)).toEqual(
    expect.arrayContaining(['drv@1.0.0:post-interrupt', 'tune@1.0.0:apply', 'tune@1.0.0:config']),
  );
});

test('a rollout deleted and started again under its name starts fresh and completes', async () => {
  const cluster = new FakeCluster([NODE]);
  const spec = rolloutSpec('again', { packages: { tools: { version: '1.0.0', image: image('tools') } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const first = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(first, 'complete');
    const forgetting = (await t.env.client.workflow.getHandle(nodeWorkflowId('again', NODE)).describe()).runId;
    // `kubectl delete -f` then `apply -f`: the deleted rollout forgets its nodes, the new one starts at once.
    await first.cancel();
    await first.result().catch(() => undefined);
    const second = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(second, 'complete', 60_000);
    await recordHistory(t.env, nodeWorkflowId('again', NODE), 'node-forget-then-again', forgetting);
  });
  expect(cluster.callsOf('clearNodeState')).toHaveLength(1);
  // The new rollout ran its stages: it did not take the deleted one's state for its own.
  expect(cluster.stagesOn(NODE)).toEqual([
    'tools@1.0.0:apply',
    'tools@1.0.0:config',
    'tools@1.0.0:apply',
    'tools@1.0.0:config',
  ]);
});

test('a desire from another rollout under the same name (its forget lost) forgets the old one first', async () => {
  const cluster = new FakeCluster([NODE]);
  const spec = rolloutSpec('twin', { packages: { tools: { version: '1.0.0', image: image('tools') } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const first = await startRollout(t.env, taskQueue, spec);
    await statusBecomes(first, 'complete');
    const node = t.env.client.workflow.getHandle(nodeWorkflowId('twin', NODE));
    const sent = (cluster.callsOf('ensureNodeWorkflow')[0]!.input as { args: DesireArgs[] }).args[0]!;
    expect(sent.rolloutUid).toBeDefined();
    await node.signal(desireSignal, { ...sent, rolloutUid: 'another-rollout' });
    await eventually(() => expect(cluster.stagesOn(NODE)).toHaveLength(4));
    await eventually(async () =>
      expect((await node.query(nodeStateQuery)).rollouts.twin!.packages['tools|1.0.0']).toMatchObject({
        stage: 'config',
        state: 'complete',
      }),
    );
  });
  expect(cluster.callsOf('clearNodeState')).toHaveLength(1);
});

test('G11 a stage stopped while its Job is being created has that Job gone before the next stage starts', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.createDelayMs = 1500;
  cluster.podTerminationMs = 500;
  cluster.script = (i) => ({ ms: i.package.version === '1.0.0' ? 60_000 : 200 });
  const spec = rolloutSpec('late', { packages: { drv: { version: '1.0.0', image: image('drv') } } });
  await changeMidStage(
    cluster,
    spec,
    // The spec changes while runStage is still creating the v1 Job.
    () => stageStarted(cluster, 'drv@1.0.0:apply'),
    (s) => ({ ...s, spec: { ...s.spec, packages: { drv: { ...s.spec.packages.drv!, version: '2.0.0' } } } }),
    'node-stop-during-create',
  );
  expect(cluster.breaches).toEqual([]);
  expect(cluster.stagesOn(NODE)).toEqual(['drv@1.0.0:apply', 'drv@2.0.0:upgrade', 'drv@2.0.0:config']);
});

test('G11 a Job the pause could not suspend (forbidden) is gone before the package runs again', async () => {
  const cluster = new FakeCluster([NODE]);
  cluster.suspendForbidden = true;
  cluster.podTerminationMs = 1000;
  cluster.script = (i) => ({ ms: i.package.version === '1.0.0' ? 60_000 : 200 });
  const rollout = rolloutSpec('nosusp', { packages: { drv: { version: '1.0.0', image: image('drv') } } });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, rollout);
    await eventually(() => expect(stageStarted(cluster, 'drv@1.0.0:apply')).toBe(true));
    await handle.signal(pauseSignal, { actor: 'test', reason: 'window' });
    await eventually(async () => {
      const view = await t.env.client.workflow.getHandle(nodeWorkflowId('nosusp', NODE)).query(nodeStateQuery);
      expect(view.rollouts.nosusp!.packages['drv|1.0.0']).toMatchObject({
        state: 'erroring',
        lastError: expect.stringContaining('StageControlFailed'),
      });
    });
    await handle.signal(resumeSignal, { actor: 'test', reason: 'window' });
    const bumped = {
      ...rollout,
      spec: { ...rollout.spec, packages: { drv: { ...rollout.spec.packages.drv!, version: '2.0.0' } } },
    };
    await handle.executeUpdate(updateSpecUpdate, { args: [bumped] });
    await statusBecomes(handle, 'complete', 60_000);
  });
  expect(cluster.breaches).toEqual([]);
});
