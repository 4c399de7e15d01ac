import { rolloutSpec } from '../../harness/manifests';
import { DEFAULT_NODE_SETTINGS, type DesireArgs } from '../../workflows/messages';
import { carriedForm, readCarried, type NodeCarried } from '../../workflows/node/carried';
import { newNodeRollout } from '../../workflows/node/node-rollout';

// What the node workflow carries into its next run (workflows/node/carried.ts): the forgets under way are the run's
// live ones, never the ones it was started with; entries go in the form every build reads.

const spec = rolloutSpec('x', { packages: { aa: { version: '1.0.0', image: 'ghcr.io/example/aa' } } });
const desire: DesireArgs = { rollout: 'x', spec, generation: 1, settings: DEFAULT_NODE_SETTINGS };

function startedWith(extra: Partial<NodeCarried>): NodeCarried {
  return { rollouts: {}, previous: {}, cordonedBy: null, interrupt: null, bootId: null, ...extra };
}

test('a forget that the run has finished is not carried again, nor the desire that waited for it', () => {
  // The run was started with a forget of x under way and x's new desire waiting; it finished both.
  const s = startedWith({ forgetting: ['x'], reborn: { x: desire } });
  const carried = carriedForm(s, { forgetting: new Set(), reborn: new Map() });
  expect(carried).not.toHaveProperty('forgetting');
  expect(carried).not.toHaveProperty('reborn');
  // The run's own state is left as it was.
  expect(s.forgetting).toEqual(['x']);
});

test('forgets still under way and the desires waiting for them are carried', () => {
  const carried = carriedForm(startedWith({ forgetting: ['old'] }), {
    forgetting: new Set(['x']),
    reborn: new Map([['x', desire]]),
  });
  expect(carried.forgetting).toEqual(['x']);
  expect(carried.reborn).toEqual({ x: desire });
});

test('rollout entries are carried under spec and read back under rollout', () => {
  const entry = { ...newNodeRollout(spec, 1, DEFAULT_NODE_SETTINGS), initialized: true };
  const carried = JSON.parse(
    JSON.stringify(carriedForm(startedWith({ rollouts: { x: entry } }), { forgetting: new Set(), reborn: new Map() })),
  ) as ReturnType<typeof carriedForm>;
  expect(carried.rollouts.x).toHaveProperty('spec');
  expect(carried.rollouts.x).not.toHaveProperty('rollout');
  expect(readCarried(carried).rollouts.x).toEqual(entry);
});

test("the counts of the node's reports and writes are carried: the next run's orders go on from them (G1)", () => {
  const carried = JSON.parse(
    JSON.stringify(carriedForm(startedWith({ reports: 4, writes: 9 }), { forgetting: new Set(), reborn: new Map() })),
  ) as ReturnType<typeof carriedForm>;
  expect(readCarried(carried)).toMatchObject({ reports: 4, writes: 9 });
});
