import { useE2E, PREFIX, entry, skyhook } from './e2e-stack';

// §7 simple-skyhook, simple-update-skyhook, depends-on: the package lifecycle seen on the Node and in status.

const e2e = useE2E('life', { nodes: 1 });

test('package lifecycle: a 3-package DAG ends at config/complete in Skyhook nodeState JSON, labels and status', async () => {
  const node = e2e.nodes[0]!;
  const name = 'simple';
  const pkgs = {
    dexter: { version: '1.2.3', configMap: { 'config.sh': 'echo hi' } },
    spencer: { version: '3.2.3', dependsOn: { dexter: '1.2.3' } },
    foobar: { version: '1.2', image: 'registry.example/keelson/foobar:1.2' },
  };
  const out = await e2e.startAndWait(name, [skyhook({ name, nodes: [node], packages: pkgs })]);
  expect(out).toContain(`rollout ${name}: complete, 1/1 nodes complete`);
  const state = await e2e.nodeState(node, name);
  // Skyhook's entry shape, plus Keelson's attempts counter (extra fields are ignored by Skyhook readers).
  expect(state).toEqual({
    'dexter|1.2.3': {
      name: 'dexter',
      version: '1.2.3',
      image: 'registry.example/keelson/dexter',
      stage: 'config',
      state: 'complete',
      attempts: 1,
    },
    'spencer|3.2.3': {
      name: 'spencer',
      version: '3.2.3',
      image: 'registry.example/keelson/spencer',
      stage: 'config',
      state: 'complete',
      attempts: 1,
    },
    'foobar|1.2': {
      name: 'foobar',
      version: '1.2',
      image: 'registry.example/keelson/foobar',
      stage: 'config',
      state: 'complete',
      attempts: 1,
    },
  });
  const n = await e2e.node(node);
  expect(n.metadata?.labels?.[`${PREFIX}status_${name}`]).toBe('complete');
  expect(n.metadata?.annotations?.[`${PREFIX}status_${name}`]).toBe('complete');
  expect(n.spec?.unschedulable ?? false).toBe(false);
  const s = await e2e.status(name);
  expect(s).toMatchObject({
    name,
    status: 'complete',
    completeNodes: '1/1',
    nodesInProgress: 0,
    packageList: 'dexter:1.2.3,foobar:1.2,spencer:3.2.3',
    nodes: { [node]: { status: 'complete' } },
  });
  // One Job per package and stage (apply, config), none for interrupt: no package interrupts.
  expect(e2e.workloads.jobKeys(node)).toEqual([
    'dexter@1.2.3:apply',
    'dexter@1.2.3:config',
    'foobar@1.2:apply',
    'foobar@1.2:config',
    'spencer@3.2.3:apply',
    'spencer@3.2.3:config',
  ]);
  // dependsOn: spencer's apply Job was created only after dexter's config stage had ended.
  const created = (key: string) => new Date(e2e.workloads.job(node, key)!.metadata!.creationTimestamp!).getTime();
  const completed = (key: string) => e2e.workloads.stageEnd(e2e.workloads.job(node, key)!)!;
  expect(created('spencer@3.2.3:apply')).toBeGreaterThanOrEqual(completed('dexter@1.2.3:config'));

  // simple-update-skyhook: packages merged into a completed rollout run alone; completed ones do not run again.
  const more = { ...pkgs, newpkg: { version: '2024.7.7-test' }, other: { version: '2.3.1-test' } };
  await e2e.apply(name, [skyhook({ name, nodes: [node], packages: more })]);
  await e2e.statusUntil(name, 'all 5 packages complete', (s2) => {
    expect(s2.status).toBe('complete');
    expect(Object.keys(s2.nodes[node].packages).sort()).toEqual(['dexter', 'foobar', 'newpkg', 'other', 'spencer']);
  });
  expect(entry(await e2e.nodeState(node, name), 'newpkg')).toMatchObject({ stage: 'config', state: 'complete' });
  expect(e2e.workloads.jobKeys(node).filter((k) => k.startsWith('dexter'))).toEqual([
    'dexter@1.2.3:apply',
    'dexter@1.2.3:config',
  ]);
  expect(e2e.workloads.jobKeys(node)).toHaveLength(10);
});

test('a rollout deleted and started again with the same manifest (`kubectl delete -f`, then `apply -f`) starts fresh and completes', async () => {
  const node = e2e.nodes[0]!;
  const name = 'again';
  const doc = skyhook({ name, nodes: [node], packages: { tools: { version: '1.0.0' } } });
  await e2e.startAndWait(name, [doc]);
  const before = e2e.workloads.jobKeys(node).filter((k) => k.startsWith('tools'));
  expect(before).toEqual(['tools@1.0.0:apply', 'tools@1.0.0:config']);
  await e2e.cliOk(['rollout', 'delete', name, '--yes']);
  const out = await e2e.startAndWait(name, [doc]);
  expect(out).toContain(`rollout ${name}: complete, 1/1 nodes complete`);
  // The new rollout ran every stage again (Jobs of its own): it read nothing the deleted one had written on the node.
  expect(e2e.workloads.jobKeys(node).filter((k) => k.startsWith('tools'))).toEqual([
    'tools@1.0.0:apply',
    'tools@1.0.0:apply',
    'tools@1.0.0:config',
    'tools@1.0.0:config',
  ]);
  expect(entry(await e2e.nodeState(node, name), 'tools')).toMatchObject({ stage: 'config', state: 'complete' });
  expect((await e2e.status(name)).nodes[node]).toMatchObject({ status: 'complete' });
});
