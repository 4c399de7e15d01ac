import type { RunStageInput } from '../../activities/contract';
import { stageJobName } from '../../model';
import { nodeStateQuery, statusQuery } from '../../workflows/messages';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { FakeCluster } from './fake-cluster';
import { eventually, recordHistory, rolloutSpec, startRollout, statusBecomes, useTemporal, withWorker } from './env';

const t = useTemporal();

const image = (n: string) => `ghcr.io/example/${n}`;
const nodes = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`);
const jobOf = (i: RunStageInput) => stageJobName({ ...i, package: i.package.name, version: i.package.version });

test('sliding-window admission: the next node starts as soon as one finishes, at most 2 in flight, complete', async () => {
  const names = nodes(5, 'window');
  const slow = names[0]!;
  const cluster = new FakeCluster(names);
  // The slow node's apply stage runs until the test finishes it: whatever else happens meanwhile, happens while
  // the slow node is in progress.
  cluster.script = (i) => ({ ms: i.node === slow && i.stage === 'apply' ? 600_000 : 20 });
  const spec = rolloutSpec('window', {
    interruptionBudget: { count: 2 },
    packages: { base: { version: '1.0.0', image: image('base') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, {
      cluster: 'window',
      options: { admission: 'sliding-window' },
    });
    let maxInProgress = 0;
    const poll = async () => {
      const st = await handle.query(statusQuery);
      maxInProgress = Math.max(maxInProgress, st.compartmentStatuses.__default__?.inProgress ?? 0);
      return st;
    };
    // Batches would hold node-3 behind the slow node's batch; the window lets every other node through.
    await eventually(async () => {
      const st = await poll();
      for (const n of names.slice(1)) expect(st.nodes[n]!.status).toBe('complete');
    }, 120_000);
    const held = await poll();
    expect(held.nodes[slow]!.status).toBe('in_progress');
    expect(cluster.stagesOn(slow)).toEqual(['base@1.0.0:apply']);
    expect(cluster.callsOf('runStage').filter((c) => (c.input as RunStageInput).node === names[2])).not.toEqual([]);

    const apply = cluster.callsOf('runStage').find((c) => (c.input as RunStageInput).node === slow)!;
    cluster.finish(jobOf(apply.input as RunStageInput), 'complete');
    await eventually(async () => expect((await poll()).status).toBe('complete'), 120_000);
    expect((await poll()).completeNodes).toBe('5/5');
    expect(cluster.stagesOn(slow)).toEqual(['base@1.0.0:apply', 'base@1.0.0:config']);

    // In flight, from the cluster's side: from a node's first stage to its write as complete. At no node's start
    // are more than 2 nodes in flight (counting itself), and the window was used to its full size.
    const span = names.map((n) => ({
      start: cluster.callsOf('runStage').find((c) => (c.input as RunStageInput).node === n)!.at,
      end: cluster.writes.find((w) => w.node === n && w.status === 'complete')!.at,
    }));
    const overlap = span.map((a) => span.filter((b) => b.start <= a.start && a.start < b.end).length);
    expect(Math.max(...overlap)).toBe(2);
    // The third node started while the slow one (admitted first) was still in flight.
    expect(span[2]!.start).toBeLessThan(span[0]!.end);
    expect(maxInProgress).toBeGreaterThanOrEqual(1);
    expect(maxInProgress).toBeLessThanOrEqual(2);
    await handle.cancel();
  });
});

test('runtimeRequired: the runtime-required taint is removed from each tainted node once its packages are complete, and only then; the rollout is complete only once it is gone', async () => {
  const taint = { key: 'skyhook.nvidia.com', value: 'runtime-required', effect: 'NoSchedule' };
  const run = async (name: string, runtimeRequired: boolean) => {
    const names = nodes(3, name);
    const cluster = new FakeCluster(names);
    // The first node carries no taint: nothing to remove there. The last one, alone in the second batch, finishes the
    // rollout: its removal is the rollout's last step.
    for (const n of cluster.nodes.slice(1)) n.taints = [{ ...taint }];
    cluster.script = () => ({ ms: 30 });
    // A slow removal: a status query answered meanwhile must not say complete while a node still carries the taint.
    cluster.removeTaintMs = 1500;
    const spec = rolloutSpec(name, {
      interruptionBudget: { count: 2 },
      runtimeRequired,
      // Without runtimeRequired the taint must be tolerated explicitly, or the tainted nodes are blocked.
      additionalTolerations: runtimeRequired ? [] : [{ ...taint, operator: 'Equal' }],
      packages: {
        base: { version: '1.0.0', image: image('base') },
        tools: { version: '1.1.0', image: image('tools'), dependsOn: { base: '1.0.0' } },
      },
    });
    await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
      const handle = await startRollout(t.env, taskQueue, spec, { cluster: name });
      let tainted: string[] = [];
      await eventually(async () => {
        const st = await handle.query(statusQuery);
        tainted = cluster.nodes.filter((n) => n.taints.length > 0).map((n) => n.name);
        expect(st.status).toBe('complete');
      }, 120_000);
      if (runtimeRequired) {
        // The taints read after the status: complete means every removal had finished.
        expect(tainted).toEqual([]);
        expect(cluster.callsOf('removeTaint')).toHaveLength(2);
      } else await new Promise((r) => setTimeout(r, 1000)); // time for a removal that should not come
      await handle.cancel();
    });
    return { names, cluster };
  };

  const on = await run('rtreq', true);
  const removals = on.cluster.callsOf('removeTaint');
  expect(removals.map((c) => c.input)).toEqual([
    { node: on.names[1], key: 'skyhook.nvidia.com', effect: 'NoSchedule' },
    { node: on.names[2], key: 'skyhook.nvidia.com', effect: 'NoSchedule' },
  ]);
  for (const node of on.names.slice(1)) {
    expect(on.cluster.stagesOn(node)).toHaveLength(4);
    const calls = on.cluster.calls;
    const removedAt = calls.findIndex((c) => c.name === 'removeTaint' && (c.input as { node: string }).node === node);
    const lastStageAt = Math.max(
      ...calls.map((c, i) => (c.name === 'runStage' && (c.input as RunStageInput).node === node ? i : -1)),
    );
    expect(removedAt).toBeGreaterThan(lastStageAt);
    // Not before the node wrote itself complete.
    const completeAt = on.cluster.writes.find((w) => w.node === node && w.status === 'complete')!.at;
    expect(calls[removedAt]!.at).toBeGreaterThanOrEqual(completeAt);
    expect(on.cluster.nodes.find((n) => n.name === node)!.taints).toEqual([]);
  }

  const off = await run('rtoff', false);
  for (const node of off.names) expect(off.cluster.stagesOn(node)).toHaveLength(4);
  expect(off.cluster.callsOf('removeTaint')).toEqual([]);
  expect(off.cluster.nodes[2]!.taints).toEqual([taint]);
}, 300_000); // two rollouts, each allowed 120 s to complete: the test's budget must cover both

test("ignore labels: the kind's (as Skyhook users set it) and the worker's key prefix's both keep a node out", async () => {
  const names = nodes(3, 'ignored');
  const [kinds, workers, free] = names as [string, string, string];
  const labels: Record<string, Record<string, string>> = {
    [kinds]: { 'skyhook.nvidia.com/ignore': 'true' },
    [workers]: { 'example.com/ignore': 'true' },
  };
  const cluster = new FakeCluster(names, (node) => labels[node] ?? {});
  cluster.nodeTimeouts = { ...cluster.nodeTimeouts, keyPrefix: 'example.com/' };
  cluster.script = () => ({ ms: 20 });
  const spec = rolloutSpec('ignored', {
    interruptionBudget: { count: 3 },
    packages: { base: { version: '1.0.0', image: image('base') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'ignored' });
    await eventually(async () => {
      const st = await handle.query(statusQuery);
      expect(st.nodes[free]!.status).toBe('complete');
      expect(st.nodes[kinds]!.status).toBe('blocked');
      expect(st.nodes[workers]!.status).toBe('blocked');
    }, 120_000);
    expect(cluster.stagesOn(kinds)).toEqual([]);
    expect(cluster.stagesOn(workers)).toEqual([]);
    await handle.cancel();
  });
});

test('a batch is sent to its nodes at once, not one round trip after another', async () => {
  const names = nodes(4, 'fanout');
  const cluster = new FakeCluster(names);
  cluster.ensureNodeWorkflowMs = 1500;
  const spec = rolloutSpec('fanout', {
    interruptionBudget: { count: 4 },
    packages: { base: { version: '1.0.0', image: image('base') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'fanout' });
    await statusBecomes(handle, 'complete', 120_000);
    await handle.cancel();
  });
  // Each node's first desire: one after another, the last would start at least 3 × 1.5 s after the first.
  const firstSends = names.map((n) =>
    Math.min(
      ...cluster
        .callsOf('ensureNodeWorkflow')
        .filter((c) => (c.input as { node: string }).node === n)
        .map((c) => c.at),
    ),
  );
  expect(Math.max(...firstSends) - Math.min(...firstSends)).toBeLessThan(1500);
  // One activity for the batch's desires, not one per node (patch desires-in-one-activity).
  const batches = cluster.callsOf('ensureNodeWorkflows').map((c) => (c.input as { nodes: { node: string }[] }).nodes);
  expect(batches[0]!.map((n) => n.node).sort()).toEqual([...names].sort());
});

test("a node the rollout admitted is not blocked by a taint its own work brings (a reboot's not-ready): its batch waits for it", async () => {
  const names = nodes(2, 'rebooting');
  const [first, second] = names as [string, string];
  const cluster = new FakeCluster(names);
  cluster.script = (i) => ({ ms: i.node === first && i.stage === 'apply' ? 600_000 : 20 });
  const spec = rolloutSpec('rebooting', {
    interruptionBudget: { count: 1 },
    packages: { base: { version: '1.0.0', image: image('base') } },
  });
  // A relist every second: one always falls while the first node is tainted.
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, {
      cluster: 'rebooting',
      options: { relistInterval: '1 second' },
    });
    await eventually(() => expect(cluster.callsOf('runStage')).toHaveLength(1), 60_000);
    cluster.nodes.find((n) => n.name === first)!.taints = [
      { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
    ];
    const listsBefore = cluster.callsOf('listNodes').length;
    await eventually(() => expect(cluster.callsOf('listNodes').length).toBeGreaterThan(listsBefore + 1), 60_000);
    const st = await handle.query(statusQuery);
    expect(st.nodes[first]!.status).toBe('in_progress');
    // The batch of one still holds: the second node is not admitted beside it.
    expect(st.nodes[second]!.status).toBe('waiting');
    expect(cluster.stagesOn(second)).toEqual([]);

    const apply = cluster.callsOf('runStage').find((c) => (c.input as RunStageInput).node === first)!;
    cluster.finish(jobOf(apply.input as RunStageInput), 'complete');
    await statusBecomes(handle, 'complete', 120_000);
    expect((await handle.query(statusQuery)).completeNodes).toBe('2/2');
    await recordHistory(t.env, rolloutWorkflowId('rebooting', 'rebooting'), 'rollout-taints-block-before-admission');
    await handle.cancel();
  });
});

test('a node blocked when the others are done is listed again soon, then less often, and admitted once clean', async () => {
  const names = nodes(3, 'unblocked');
  const held = names[2]!;
  const cluster = new FakeCluster(names);
  cluster.script = () => ({ ms: 20 });
  cluster.nodes.find((n) => n.name === held)!.taints = [{ key: 'example.com/maintenance', effect: 'NoSchedule' }];
  const spec = rolloutSpec('unblocked', {
    interruptionBudget: { count: 3 },
    packages: { base: { version: '1.0.0', image: image('base') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    // The relist clock alone would not list the nodes again within the test.
    const handle = await startRollout(t.env, taskQueue, spec, {
      cluster: 'unblocked',
      options: { relistInterval: '1 hour', blockedRecheck: '1 second' },
    });
    await eventually(async () => {
      const st = await handle.query(statusQuery);
      for (const n of names.slice(0, 2)) expect(st.nodes[n]!.status).toBe('complete');
      expect(st.nodes[held]!.status).toBe('blocked');
    }, 120_000);
    const listedAt = () => cluster.callsOf('listNodes').map((c) => c.at);
    const before = listedAt().length;
    await eventually(() => expect(listedAt().length).toBeGreaterThanOrEqual(before + 3), 60_000);
    // Waits of 1, 2, 4 s, ... from a listing's end: the first gap counted is at least the second wait, and each next
    // gap at least the next, twice as long.
    const rechecks = listedAt().slice(before);
    const gaps = rechecks.slice(1).map((at, i) => at - rechecks[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(2);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(2000 * 2 ** i));
    expect(cluster.stagesOn(held)).toEqual([]);

    cluster.nodes.find((n) => n.name === held)!.taints = [];
    await statusBecomes(handle, 'complete', 60_000);
    expect((await handle.query(statusQuery)).completeNodes).toBe('3/3');
    expect(cluster.stagesOn(held)).toEqual(['base@1.0.0:apply', 'base@1.0.0:config']);
    await recordHistory(t.env, rolloutWorkflowId('unblocked', 'unblocked'), 'rollout-relist-soon-when-blocked');
    await handle.cancel();
  });
});

test('a rollout deleted while its batch of desires is being sent: its forgets go out after them, and no node keeps it', async () => {
  const names = nodes(3, 'deleted');
  const cluster = new FakeCluster(names);
  cluster.ensureNodeWorkflowMs = 2000;
  const spec = rolloutSpec('deleted', {
    interruptionBudget: { count: 3 },
    packages: { base: { version: '1.0.0', image: image('base') } },
  });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec, { cluster: 'deleted' });
    await eventually(() => expect(cluster.callsOf('ensureNodeWorkflows')).toHaveLength(1));
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    for (const node of names) {
      await eventually(async () => {
        const d = await t.env.client.workflow.getHandle(nodeWorkflowId('deleted', node)).describe();
        if (d.status.name === 'RUNNING') {
          const view = await t.env.client.workflow.getHandle(d.workflowId).query(nodeStateQuery);
          expect(Object.keys(view.rollouts)).toEqual([]);
        }
      }, 30_000);
    }
  });
  // Every desire was sent before the rollout ended; none after.
  expect(
    cluster
      .callsOf('ensureNodeWorkflow')
      .map((c) => (c.input as { node: string }).node)
      .sort(),
  ).toEqual([...names].sort());
});
