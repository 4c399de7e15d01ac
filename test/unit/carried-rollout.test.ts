import { fromCarried, toCarried, type CarriedForm } from '../../model/carried-rollout';
import { DEFAULT_NODE_SETTINGS } from '../../workflows/messages';
import type { NodeRollout } from '../../workflows/node/node-rollout';
import type { RolloutCarried } from '../../workflows/rollout/workflow';
import { newPermitState } from '../../workflows/rollout/interrupt-permits';
import { rolloutSpec } from '../../harness/manifests';

// Continue-as-new carries the RolloutSpec under `spec`, the name every build reads (a rolling upgrade without worker
// versioning runs two builds side by side; a rollback runs the older one again): the shapes below are those of
// test/fixtures/histories/node-continue-as-new.json and of the continue-as-new input in
// rollout-continue-when-quiet.json, written by the code before the in-memory name `rollout`.

const long = rolloutSpec('long', {
  interruptionBudget: { count: 1 },
  packages: { aa: { version: '1.0.0', image: 'ghcr.io/example/aa' } },
});

/** What the node workflow carried for one rollout, as the older code wrote it. */
const oldNodeEntry: CarriedForm<NodeRollout> = {
  spec: long,
  generation: 1,
  settings: DEFAULT_NODE_SETTINGS,
  state: {
    'aa|1.0.0': { name: 'aa', version: '1.0.0', image: 'ghcr.io/example/aa', stage: 'config', state: 'complete' },
  },
  configUpdates: {},
  paused: false,
  disabled: false,
  waiting: false,
  initialized: true,
  stageStarted: {},
};

/** What the rollout workflow carried, as the older code wrote it. */
const oldRolloutState: CarriedForm<RolloutCarried> = {
  generation: 2,
  spec: long,
  paused: false,
  disabled: false,
  nodes: { 'node-1': { labels: {}, blocked: false, runtimeTainted: false, admittedGeneration: 2 } },
  order: ['node-1'],
  batches: {},
  permits: newPermitState(),
  listed: true,
  outbox: [],
  complete: true,
};

/** The input as it arrives: JSON, as the payload converter decodes it. */
const decoded = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

test('a node entry carried by the older code reads with its RolloutSpec under `rollout`, and nothing else changed', () => {
  const { spec, ...rest } = oldNodeEntry;
  const read = fromCarried<NodeRollout>(decoded(oldNodeEntry));
  expect(read).toEqual({ ...rest, rollout: spec });
  expect(read).not.toHaveProperty('spec');
  expect(read.rollout.spec.packages.aa?.version).toBe('1.0.0');
});

test('the rollout state carried by the older code reads with its RolloutSpec under `rollout`', () => {
  const { spec, ...rest } = oldRolloutState;
  const read = fromCarried<RolloutCarried>(decoded(oldRolloutState));
  expect(read).toEqual({ ...rest, rollout: spec });
  expect(read.rollout.name).toBe('long');
});

test('what this build carries is the form the older code wrote and reads: `spec`, no `rollout`', () => {
  for (const old of [oldNodeEntry, oldRolloutState] as CarriedForm<NodeRollout | RolloutCarried>[]) {
    const written = decoded(toCarried(fromCarried(decoded(old))));
    expect(written).toEqual(old);
    expect(written).not.toHaveProperty('rollout');
  }
});
