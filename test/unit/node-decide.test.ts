import { decideNode, type DecisionView, type Package, type RolloutOnNode } from '../../model';

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
