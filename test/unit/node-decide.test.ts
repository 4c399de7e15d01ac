import { decideNode, stageJobName, type DecisionView, type Package, type RolloutOnNode } from '../../model';

// Hand-picked decisions of decideNode that the adversarial review found wrong (the model-based test in
// node-interleavings.test.ts covers random interleavings; these pin the cases down).

const drv = { name: 'drv', version: '1.0.0', image: 'img/drv', interrupt: { type: 'reboot' } } as Package;
const tools = { name: 'tools', version: '1.0.0', image: 'img/tools' } as Package;

const rollout = (name: string, packages: Package[], over: Partial<RolloutOnNode> = {}): RolloutOnNode => ({
  name,
  packages: Object.fromEntries(packages.map((p) => [p.name, p])),
  state: {},
  configUpdates: {},
  paused: false,
  disabled: false,
  waiting: false,
  initialized: true,
  forgetting: false,
  ...over,
});

const view = (over: Partial<DecisionView>): DecisionView => ({
  node: 'node-a',
  rollouts: [],
  runs: [],
  carried: [],
  stopping: new Map(),
  finishedDeleting: new Set(),
  tasks: new Set(),
  interrupt: null,
  draining: false,
  guards: true,
  cordonGuards: true,
  ...over,
});

test('G13 a permit given up for a higher-priority rollout goes back only once the drain in flight has ended', () => {
  const rollouts = [rollout('high', [tools]), rollout('low', [drv])];
  const interrupt = { rollout: 'low', phase: 'granted' as const };
  const mid = decideNode(view({ rollouts, interrupt, tasks: new Set(['prepare']) }));
  expect(mid.filter((i) => i.kind === 'release')).toEqual([]);
  const after = decideNode(view({ rollouts, interrupt }));
  expect(after).toContainEqual({ kind: 'release', rollout: 'low', uncordon: true });
});

test('G13 a requested permit of a waiting rollout goes back even while its other stages run', () => {
  const rollouts = [rollout('high', [drv]), rollout('low', [drv, tools])];
  const runs = [{ rollout: 'low', package: 'tools', version: '1.0.0', stage: 'apply' as const }];
  const intents = decideNode(view({ rollouts, runs, interrupt: { rollout: 'low', phase: 'requested' } }));
  expect(intents).toContainEqual({ kind: 'release', rollout: 'low', uncordon: true });
  // Once its node is prepared, its running stages keep it: they run on the drained node.
  const prepared = decideNode(view({ rollouts, runs, interrupt: { rollout: 'low', phase: 'prepared' } }));
  expect(prepared.filter((i) => i.kind === 'release')).toEqual([]);
});

test('a forget waits for a drain or an interrupt in flight', () => {
  const rollouts = [rollout('gone', [drv], { forgetting: true })];
  for (const task of ['prepare', 'interrupt']) {
    expect(decideNode(view({ rollouts, tasks: new Set([task]) })).filter((i) => i.kind === 'forget')).toEqual([]);
  }
  expect(decideNode(view({ rollouts }))).toContainEqual({ kind: 'forget', rollout: 'gone' });
});

test('G12 nothing starts while the interrupt runs', () => {
  const rollouts = [rollout('r', [tools])];
  expect(decideNode(view({ rollouts, tasks: new Set(['interrupt']) })).filter((i) => i.kind === 'start')).toEqual([]);
  expect(decideNode(view({ rollouts })).map((i) => i.kind)).toContain('start');
});

test('G16 no stage of an interrupting package starts once the release that uncordons the node has begun', () => {
  // A spec update (drv 1.1.0) reaches the node while its release of the last interrupt is uncordoning it.
  const rollouts = [rollout('r', [{ ...drv, version: '1.1.0' }])];
  const interrupt = { rollout: 'r', phase: 'prepared' as const };
  const releasing = decideNode(view({ rollouts, interrupt, tasks: new Set(['release']) }));
  expect(releasing.filter((i) => i.kind === 'start' || i.kind === 'interrupt')).toEqual([]);
  // Once the release is done the node asks for a permit again, to be cordoned and drained before the apply.
  expect(decideNode(view({ rollouts }))).toEqual([{ kind: 'request', rollout: 'r' }]);
  // The guard is what holds it: without it the apply starts on the node being uncordoned.
  const unguarded = decideNode(view({ rollouts, interrupt, tasks: new Set(['release']), cordonGuards: false }));
  expect(unguarded.map((i) => i.kind)).toContain('start');
});

test('G16 a release or forget uncordons only once no stopped Job of its interrupting work may run, and not while draining', () => {
  const done = { name: 'drv', version: '1.0.0', image: 'img/drv', stage: 'post-interrupt', state: 'complete' } as const;
  const job = (rollout: string, pkg: Package) =>
    stageJobName({ rollout, package: pkg.name, version: pkg.version, stage: 'apply', node: 'node-a' });
  const toolsDone = {
    name: 'tools',
    version: '1.0.0',
    image: 'img/tools',
    stage: 'config',
    state: 'complete',
  } as const;
  const finished = [rollout('r', [drv, tools], { state: { 'drv|1.0.0': done, 'tools|1.0.0': toolsDone } })];
  const interrupt = { rollout: 'r', phase: 'prepared' as const };
  const release = { kind: 'release', rollout: 'r', uncordon: true };
  const releases = (over: Partial<DecisionView>) => decideNode(view({ rollouts: finished, interrupt, ...over }));
  expect(
    releases({ stopping: new Map([[job('r', drv), { rollout: 'r', package: 'drv', interrupting: true }]]) }),
  ).not.toContainEqual(release);
  expect(releases({ draining: true })).not.toContainEqual(release);
  expect(releases({})).toContainEqual(release);
  // Neither another rollout's stopped Job nor one of a package without an interrupt holds the permit: a delete that
  // never ends (a pod stuck terminating) would hold it for good.
  expect(
    releases({ stopping: new Map([[job('other', drv), { rollout: 'other', package: 'drv', interrupting: true }]]) }),
  ).toContainEqual(release);
  expect(
    releases({ stopping: new Map([[job('r', tools), { rollout: 'r', package: 'tools', interrupting: false }]]) }),
  ).toContainEqual(release);
  // A Job made while drv ended in an interrupt holds it even once a spec update dropped the interrupt.
  const dropped = [rollout('r', [{ ...drv, interrupt: undefined }, tools], { state: finished[0]!.state })];
  const stoppedDrv = new Map([[job('r', drv), { rollout: 'r', package: 'drv', interrupting: true }]]);
  expect(decideNode(view({ rollouts: dropped, interrupt, stopping: stoppedDrv }))).not.toContainEqual(release);
  const gone = [rollout('gone', [drv], { forgetting: true })];
  const forgets = (stopping: DecisionView['stopping']) =>
    decideNode(view({ rollouts: gone, stopping })).filter((i) => i.kind === 'forget');
  expect(forgets(new Map([[job('gone', drv), { rollout: 'gone', package: 'drv', interrupting: true }]]))).toEqual([]);
  expect(forgets(new Map([[job('other', drv), { rollout: 'other', package: 'drv', interrupting: true }]]))).toEqual([
    { kind: 'forget', rollout: 'gone' },
  ]);
});
