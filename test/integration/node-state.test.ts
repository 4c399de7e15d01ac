import { ApplicationFailure } from '@temporalio/common';
import { encodeNodeState, type NodeState } from '../../model';
import { mergePatch } from '../../activities/clients';
import { testActivities } from './activity-env';

const { core, batch, activities } = testActivities('default');
const node = 'node-007';
const rollout = `ns-${Date.now().toString(36)}`;
const ref = { rollout, kind: 'Skyhook' as const, generation: 1, node };
const key = `skyhook.nvidia.com/nodeState_${rollout}`;

const entry = (state: 'in_progress' | 'complete'): NodeState => ({
  'a|1.0.0': { name: 'a', version: '1.0.0', image: 'registry.example/a', stage: 'apply', state },
});

afterAll(async () => {
  const ops = [key, `skyhook.nvidia.com/status_${rollout}`].map((k) => ({ metadata: { annotations: { [k]: null } } }));
  for (const body of ops) await core.patchNode({ name: node, body }, mergePatch);
  await core.patchNode(
    { name: node, body: { metadata: { labels: { [`skyhook.nvidia.com/status_${rollout}`]: null } } } },
    mergePatch,
  );
});

test('writeNodeState writes the whole value with the status annotation and label, then replaces it', async () => {
  const first = await activities.writeNodeState({
    ...ref,
    state: entry('in_progress'),
    status: 'in_progress',
    previous: null,
  });
  expect(first.written).toBe(encodeNodeState(entry('in_progress')));
  const second = await activities.writeNodeState({
    ...ref,
    state: entry('complete'),
    status: 'complete',
    previous: first.written,
  });
  const n = await core.readNode({ name: node });
  expect(n.metadata?.annotations?.[key]).toBe(second.written);
  expect(n.metadata?.annotations?.[`skyhook.nvidia.com/status_${rollout}`]).toBe('complete');
  expect(n.metadata?.labels?.[`skyhook.nvidia.com/status_${rollout}`]).toBe('complete');
  const conditions = n.status?.conditions ?? [];
  expect(conditions.find((c) => c.type === `skyhook.nvidia.com/${rollout}/NotReady`)?.status).toBe('False');
  // An activity retry of a write that already landed is not a conflict.
  await expect(
    activities.writeNodeState({ ...ref, state: entry('complete'), status: 'complete', previous: first.written }),
  ).resolves.toEqual(second);
  const read = await activities.readNode(ref);
  expect(read.nodeState).toBe(second.written);
  expect(read.facts.name).toBe(node);
  expect(read.facts.bootId).not.toBe('');
});

test('a first write to a Node without labels adds the map and writes its state and status label', async () => {
  const bare = `bare-${rollout}`;
  await core.createNode({ body: { metadata: { name: bare } } });
  try {
    const first = await activities.writeNodeState({
      ...ref,
      node: bare,
      state: entry('in_progress'),
      status: 'in_progress',
      previous: null,
    });
    const n = await core.readNode({ name: bare });
    expect(n.metadata?.annotations?.[key]).toBe(first.written);
    expect(n.metadata?.labels?.[`skyhook.nvidia.com/status_${rollout}`]).toBe('in_progress');
  } finally {
    await core.deleteNode({ name: bare });
  }
});

test("clearNodeState removes the rollout's state, status and conditions from the Node, and leaves the rest", async () => {
  const other = `${rollout}-other`;
  const written = await activities.writeNodeState({
    ...ref,
    state: entry('complete'),
    status: 'complete',
    previous: null,
  });
  await activities.writeNodeState({
    ...ref,
    rollout: other,
    state: entry('in_progress'),
    status: 'in_progress',
    previous: null,
  });
  await activities.clearNodeState(ref);
  const n = await core.readNode({ name: node });
  expect(n.metadata?.annotations?.[key]).toBeUndefined();
  expect(n.metadata?.annotations?.[`skyhook.nvidia.com/status_${rollout}`]).toBeUndefined();
  expect(n.metadata?.labels?.[`skyhook.nvidia.com/status_${rollout}`]).toBeUndefined();
  const types = (n.status?.conditions ?? []).map((c) => c.type);
  expect(types).not.toContain(`skyhook.nvidia.com/${rollout}/NotReady`);
  expect(types).not.toContain(`skyhook.nvidia.com/${rollout}/Erroring`);
  // Another rollout's state on the same node stays, and a rollout of the cleared name starts from nothing.
  expect(n.metadata?.annotations?.[`skyhook.nvidia.com/nodeState_${other}`]).toBe(
    encodeNodeState(entry('in_progress')),
  );
  expect(types).toContain(`skyhook.nvidia.com/${other}/NotReady`);
  expect((await activities.readNode(ref)).nodeState).toBeNull();
  await activities.clearNodeState(ref);
  await activities.clearNodeState({ ...ref, rollout: other });
  expect(written.written).toBe(encodeNodeState(entry('complete')));
});

test('a write to node state after someone else changed the annotation reports the conflict, never merges', async () => {
  const before = (await activities.readNode(ref)).nodeState;
  await core.patchNode({ name: node, body: { metadata: { annotations: { [key]: '{"foreign|1":{}}' } } } }, mergePatch);
  const attempt = activities.writeNodeState({ ...ref, state: entry('complete'), status: 'complete', previous: before });
  await expect(attempt).rejects.toBeInstanceOf(ApplicationFailure);
  await expect(attempt).rejects.toMatchObject({ type: 'ForeignNodeStateWrite', nonRetryable: true });
  await expect(attempt).rejects.toThrow(`node ${node}: annotation ${key} was changed by another writer`);
  expect((await core.readNode({ name: node })).metadata?.annotations?.[key]).toBe('{"foreign|1":{}}');
  // A first write (previous null) over an annotation someone else created is refused too.
  const other = { ...ref, rollout: `${rollout}x` };
  await core.patchNode(
    { name: node, body: { metadata: { annotations: { [`skyhook.nvidia.com/nodeState_${rollout}x`]: '{}' } } } },
    mergePatch,
  );
  await expect(
    activities.writeNodeState({ ...other, state: entry('complete'), status: 'complete', previous: null }),
  ).rejects.toMatchObject({ type: 'ForeignNodeStateWrite' });
  await core.patchNode(
    { name: node, body: { metadata: { annotations: { [`skyhook.nvidia.com/nodeState_${rollout}x`]: null } } } },
    mergePatch,
  );
});

// G1: node-state writes are local activities; one run again on replay (its workflow task lost in a worker crash)
// after a later write landed must not take the Node back. Each write carries its order: [workflow start ms, count].
describe('G1 write orders', () => {
  const epoch = Date.now();
  const annotations = async () => (await core.readNode({ name: node })).metadata?.annotations ?? {};
  const stage = (s: NodeState[string]['stage']): NodeState => ({
    'a|1.0.0': { name: 'a', version: '1.0.0', image: 'registry.example/a', stage: s, state: 'in_progress' },
  });

  test('a write run again after a later one landed leaves the later state on the Node and returns it', async () => {
    const r = { ...ref, rollout: `${rollout}-replay` };
    const keys = {
      state: `skyhook.nvidia.com/nodeState_${r.rollout}`,
      order: `skyhook.nvidia.com/nodeStateOrder_${r.rollout}`,
    };
    const v3 = await activities.writeNodeState({
      ...r,
      state: stage('apply'),
      status: 'in_progress',
      previous: null,
      order: [epoch, 3],
    });
    const v4 = await activities.writeNodeState({
      ...r,
      state: stage('config'),
      status: 'in_progress',
      previous: v3.written,
      order: [epoch, 4],
    });
    const v5 = await activities.writeNodeState({
      ...r,
      state: entry('complete'),
      status: 'complete',
      previous: v4.written,
      order: [epoch, 5],
    });
    expect(await annotations()).toMatchObject({
      [keys.state]: v5.written,
      [keys.order]: JSON.stringify([epoch, 5]),
    });
    // Write#4 again, as the replay runs it: it writes nothing and returns the Node's value, the next write's previous.
    const again = await activities.writeNodeState({
      ...r,
      state: stage('config'),
      status: 'in_progress',
      previous: v3.written,
      order: [epoch, 4],
    });
    expect(again).toEqual({ written: v5.written, newerOnNode: [epoch, 5] });
    expect((await activities.readNode(r)).nodeStateOrder).toEqual([epoch, 5]);
    const n = await core.readNode({ name: node });
    expect(n.metadata?.annotations).toMatchObject({
      [keys.state]: v5.written,
      [keys.order]: JSON.stringify([epoch, 5]),
      [`skyhook.nvidia.com/status_${r.rollout}`]: 'complete',
    });
    expect(n.metadata?.labels?.[`skyhook.nvidia.com/status_${r.rollout}`]).toBe('complete');
    expect(n.status?.conditions?.find((c) => c.type === `skyhook.nvidia.com/${r.rollout}/NotReady`)?.status).toBe(
      'False',
    );
    // The next write, above the order on the Node, replaces it.
    const v6 = await activities.writeNodeState({
      ...r,
      state: stage('interrupt'),
      status: 'in_progress',
      previous: again.written,
      order: [epoch, 6],
    });
    expect(v6.newerOnNode).toBeUndefined();
    expect((await annotations())[keys.state]).toBe(v6.written);
    // A node workflow started afresh (a later start time, its count from 1) is above every earlier write ...
    const fresh = await activities.writeNodeState({
      ...r,
      state: stage('post-interrupt'),
      status: 'in_progress',
      previous: v6.written,
      order: [epoch + 1, 1],
    });
    expect((await annotations())[keys.order]).toBe(JSON.stringify([epoch + 1, 1]));
    // ... so a stalled attempt of the terminated one, however high its count, writes nothing.
    await expect(
      activities.writeNodeState({
        ...r,
        state: stage('apply'),
        status: 'in_progress',
        previous: v5.written,
        order: [epoch, 7],
      }),
    ).resolves.toEqual({ written: fresh.written, newerOnNode: [epoch + 1, 1] });
    expect((await annotations())[keys.state]).toBe(fresh.written);
    // clearNodeState removes the order with the state: a rollout started again under the name writes from nothing.
    await activities.clearNodeState(r);
    expect(Object.keys(await annotations()).filter((k) => k.endsWith(`_${r.rollout}`))).toEqual([]);
  });

  // Job names come back (an interrupt's per rollout and node, a stage's on rerun): a late attempt of a write must not
  // delete a newer Job of the name; the writer hands its deletes to the write that lands.
  test('G3 a stale write deletes none of its Jobs; a write that lands deletes them', async () => {
    const r = { ...ref, rollout: `${rollout}-jobs` };
    const jobName = `${r.rollout}-interrupt`;
    await batch.createNamespacedJob({
      namespace: 'default',
      body: {
        metadata: { name: jobName },
        spec: {
          suspend: true,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.example/c' }] } },
        },
      },
    });
    const live = async () => {
      const job = await batch.readNamespacedJob({ name: jobName, namespace: 'default' }).catch(() => null);
      return job !== null && !job.metadata?.deletionTimestamp;
    };
    const v1 = await activities.writeNodeStateOrdered({
      ...r,
      state: stage('apply'),
      status: 'in_progress',
      previous: null,
      order: [epoch, 1],
    });
    const v2 = await activities.writeNodeStateOrdered({
      ...r,
      state: stage('interrupt'),
      status: 'in_progress',
      previous: v1.written,
      order: [epoch, 2],
    });
    const stale = await activities.writeNodeStateOrdered({
      ...r,
      state: stage('config'),
      status: 'in_progress',
      previous: v1.written,
      order: [epoch, 1],
      deleteJobs: [{ jobName }],
    });
    expect(stale).toEqual({ written: v2.written, newerOnNode: [epoch, 2] });
    expect(await live()).toBe(true);
    await activities.writeNodeStateOrdered({
      ...r,
      state: stage('config'),
      status: 'in_progress',
      previous: v2.written,
      order: [epoch, 3],
      deleteJobs: [{ jobName }],
    });
    expect(await live()).toBe(false);
    await activities.clearNodeState(r);
  });

  test('G1 a stalled attempt of a state the Node holds again puts back no older status or order', async () => {
    const r = { ...ref, rollout: `${rollout}-same` };
    const keys = {
      order: `skyhook.nvidia.com/nodeStateOrder_${r.rollout}`,
      status: `skyhook.nvidia.com/status_${r.rollout}`,
    };
    const v1 = await activities.writeNodeStateOrdered({
      ...r,
      state: entry('complete'),
      status: 'in_progress',
      previous: null,
      order: [epoch, 1],
    });
    // Write#2 (the same state, another status) stalls and write#3 (the same state again) lands; then write#2's
    // attempt comes: its state test passes, its order test does not.
    const late = {
      ...r,
      state: entry('complete'),
      status: 'in_progress' as const,
      previous: v1.written,
      order: [epoch, 2] as [number, number],
      previousOrder: [epoch, 1] as [number, number],
    };
    await activities.writeNodeStateOrdered({
      ...r,
      state: entry('complete'),
      status: 'complete',
      previous: v1.written,
      order: [epoch, 3],
      previousOrder: [epoch, 1],
    });
    await expect(activities.writeNodeStateOrdered(late)).resolves.toEqual({
      written: v1.written,
      newerOnNode: [epoch, 3],
    });
    expect(await annotations()).toMatchObject({ [keys.order]: JSON.stringify([epoch, 3]), [keys.status]: 'complete' });
    // A writer whose known order is out of date (an older Keelson's write on the Node) is not refused for it.
    await core.patchNode({ name: node, body: { metadata: { annotations: { [keys.order]: null } } } }, mergePatch);
    await expect(
      activities.writeNodeStateOrdered({ ...late, order: [epoch, 4], previousOrder: [epoch, 3] }),
    ).resolves.toEqual({ written: v1.written });
    expect(await annotations()).toMatchObject({
      [keys.order]: JSON.stringify([epoch, 4]),
      [keys.status]: 'in_progress',
    });
    await activities.clearNodeState(r);
  });

  test("another writer's change is still a ForeignNodeStateWrite under an order on the Node", async () => {
    const r = { ...ref, rollout: `${rollout}-foreign` };
    const key = `skyhook.nvidia.com/nodeState_${r.rollout}`;
    const first = await activities.writeNodeState({
      ...r,
      state: stage('apply'),
      status: 'in_progress',
      previous: null,
      order: [epoch, 1],
    });
    await core.patchNode(
      { name: node, body: { metadata: { annotations: { [key]: '{"foreign|1":{}}' } } } },
      mergePatch,
    );
    await expect(
      activities.writeNodeState({
        ...r,
        state: stage('config'),
        status: 'in_progress',
        previous: first.written,
        order: [epoch, 2],
      }),
    ).rejects.toMatchObject({ type: 'ForeignNodeStateWrite', nonRetryable: true });
    expect((await annotations())[key]).toBe('{"foreign|1":{}}');
    // A retry of a write that landed is no conflict, as before.
    const second = await activities.writeNodeState({
      ...r,
      state: stage('config'),
      status: 'in_progress',
      previous: '{"foreign|1":{}}',
      order: [epoch, 3],
    });
    await expect(
      activities.writeNodeState({
        ...r,
        state: stage('config'),
        status: 'in_progress',
        previous: '{"foreign|1":{}}',
        order: [epoch, 3],
      }),
    ).resolves.toEqual({ written: second.written });
    await activities.clearNodeState(r);
  });

  test('a node with no order on it (an older Keelson, Skyhook) behaves as before', async () => {
    const r = { ...ref, rollout: `${rollout}-unordered` };
    const keys = {
      state: `skyhook.nvidia.com/nodeState_${r.rollout}`,
      order: `skyhook.nvidia.com/nodeStateOrder_${r.rollout}`,
    };
    // Written without an order, as Skyhook or a Keelson before orders does.
    const v1 = await activities.writeNodeState({ ...r, state: stage('apply'), status: 'in_progress', previous: null });
    const v2 = await activities.writeNodeState({
      ...r,
      state: stage('config'),
      status: 'in_progress',
      previous: v1.written,
    });
    expect((await annotations())[keys.order]).toBeUndefined();
    expect(await activities.readNode(r)).not.toHaveProperty('nodeStateOrder');
    // A write whose previous is not on the Node is a conflict, not a stale write: nothing tells which came later.
    await expect(
      activities.writeNodeState({
        ...r,
        state: stage('apply'),
        status: 'in_progress',
        previous: null,
        order: [epoch, 1],
      }),
    ).rejects.toMatchObject({ type: 'ForeignNodeStateWrite' });
    expect((await annotations())[keys.state]).toBe(v2.written);
    // An ordered write over the unordered value puts its order there.
    await activities.writeNodeState({
      ...r,
      state: stage('interrupt'),
      status: 'in_progress',
      previous: v2.written,
      order: [epoch, 2],
    });
    expect((await annotations())[keys.order]).toBe(JSON.stringify([epoch, 2]));
    await activities.clearNodeState(r);
  });
});

test("cordon records ownership; uncordon removes only Keelson's own cordon", async () => {
  await activities.cordon(ref);
  let n = await core.readNode({ name: node });
  expect(n.spec?.unschedulable).toBe(true);
  expect(n.metadata?.annotations?.[`skyhook.nvidia.com/cordon_${rollout}`]).toBe('true');
  expect(await activities.uncordon(ref)).toBe(true);
  n = await core.readNode({ name: node });
  expect(n.spec?.unschedulable).toBeFalsy();
  // Someone else's cordon: Keelson holds it as preexisting and leaves the node cordoned.
  await core.patchNode({ name: node, body: { spec: { unschedulable: true } } }, mergePatch);
  await activities.cordon(ref);
  expect((await core.readNode({ name: node })).metadata?.annotations?.[`skyhook.nvidia.com/cordon_${rollout}`]).toBe(
    'preexisting',
  );
  expect(await activities.uncordon(ref)).toBe(false);
  expect((await core.readNode({ name: node })).spec?.unschedulable).toBe(true);
  await core.patchNode({ name: node, body: { spec: { unschedulable: false } } }, mergePatch);
});

test("a cordon whose node was uncordoned by hand is made again, as the rollout's own", async () => {
  const annotation = `skyhook.nvidia.com/cordon_${rollout}`;
  await core.patchNode({ name: node, body: { spec: { unschedulable: true } } }, mergePatch);
  await activities.cordon(ref);
  expect((await core.readNode({ name: node })).metadata?.annotations?.[annotation]).toBe('preexisting');
  // `kubectl uncordon`: the node is schedulable, the annotation stays.
  await core.patchNode({ name: node, body: { spec: { unschedulable: false } } }, mergePatch);
  await activities.cordon(ref);
  const n = await core.readNode({ name: node });
  expect(n.spec?.unschedulable).toBe(true);
  expect(n.metadata?.annotations?.[annotation]).toBe('true');
  expect(await activities.uncordon(ref)).toBe(true);
  expect((await core.readNode({ name: node })).spec?.unschedulable).toBeFalsy();
});

test("G13 two rollouts' cordons: the first to let go hands its ownership over, the last uncordons", async () => {
  const second = { ...ref, rollout: `${rollout}-second` };
  const annotation = (r: string) => `skyhook.nvidia.com/cordon_${r}`;
  await activities.cordon(ref);
  await activities.cordon(second);
  let n = await core.readNode({ name: node });
  expect([
    n.metadata?.annotations?.[annotation(rollout)],
    n.metadata?.annotations?.[annotation(second.rollout)],
  ]).toEqual(['true', 'preexisting']);
  // The first lets go (its drain failed before, and it was deleted): the second still holds the node.
  expect(await activities.uncordon(ref)).toBe(false);
  n = await core.readNode({ name: node });
  expect(n.spec?.unschedulable).toBe(true);
  expect(n.metadata?.annotations?.[annotation(rollout)]).toBeUndefined();
  expect(n.metadata?.annotations?.[annotation(second.rollout)]).toBe('true');
  expect(await activities.uncordon(second)).toBe(true);
  n = await core.readNode({ name: node });
  expect(n.spec?.unschedulable).toBeFalsy();
  expect(n.metadata?.annotations?.[annotation(second.rollout)]).toBeUndefined();
});

test('removeTaint removes the runtime-required taint only', async () => {
  const n = await core.readNode({ name: node });
  const taints = [
    ...(n.spec?.taints ?? []),
    { key: 'skyhook.nvidia.com', value: 'runtime-required', effect: 'NoSchedule' },
    { key: 'keep.example', value: 'x', effect: 'NoSchedule' },
  ];
  await core.patchNode({ name: node, body: { spec: { taints } } }, mergePatch);
  await activities.removeTaint({ node, key: 'skyhook.nvidia.com', effect: 'NoSchedule' });
  const after = (await core.readNode({ name: node })).spec?.taints ?? [];
  expect(after.map((t) => t.key)).toContain('keep.example');
  expect(after.map((t) => t.key)).not.toContain('skyhook.nvidia.com');
  await core.patchNode(
    { name: node, body: { spec: { taints: after.filter((t) => t.key !== 'keep.example') } } },
    mergePatch,
  );
});

test('removeTaint on a node deleted meanwhile is done (its taint went with it), not retried for good', async () => {
  await expect(
    activities.removeTaint({
      node: `gone-${Date.now().toString(36)}`,
      key: 'skyhook.nvidia.com',
      effect: 'NoSchedule',
    }),
  ).resolves.toBeUndefined();
});

test('listNodes selects by label selector', async () => {
  const gpu = await activities.listNodes({
    selector: {
      matchLabels: { 'keelson.dev/pool': 'gpu' },
      matchExpressions: [{ key: 'type', operator: 'In', values: ['kwok'] }],
    },
  });
  expect(gpu.length).toBeGreaterThan(0);
  expect(gpu.every((f) => f.labels['keelson.dev/pool'] === 'gpu' && f.ready)).toBe(true);
});
