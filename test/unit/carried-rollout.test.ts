import { withRolloutField, type CarriedUnderSpec } from '../../model/carried-rollout';
import { DEFAULT_NODE_SETTINGS } from '../../workflows/messages';
import type { NodeRollout } from '../../workflows/node/node-rollout';
import type { RolloutCarried } from '../../workflows/rollout/workflow';
import { newPermitState } from '../../workflows/rollout/interrupt-permits';
import { rolloutSpec } from '../../harness/manifests';

// Runs continued by the code before the `rollout` field carry their RolloutSpec under `spec` in their input (the
// shapes below are those of test/fixtures/histories/node-continue-as-new.json and of the continue-as-new input in
// rollout-continue-when-quiet.json); the workflows read them through withRolloutField.

const long = rolloutSpec('long', {
  interruptionBudget: { count: 1 },
  packages: { aa: { version: '1.0.0', image: 'ghcr.io/example/aa' } },
});

/** What the node workflow carried for one rollout, as the older code wrote it. */
const oldNodeEntry: CarriedUnderSpec<NodeRollout> = {
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
const oldRolloutState: CarriedUnderSpec<RolloutCarried> = {
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

test('a node entry carried under `spec` reads with its RolloutSpec under `rollout`, and nothing else changed', () => {
  const { spec, ...rest } = oldNodeEntry;
  const read = withRolloutField(decoded(oldNodeEntry));
  expect(read).toEqual({ ...rest, rollout: spec });
  expect(read).not.toHaveProperty('spec');
  expect(read.rollout.spec.packages.aa?.version).toBe('1.0.0');
});

test('the rollout state carried under `spec` reads with its RolloutSpec under `rollout`, and nothing else changed', () => {
  const { spec, ...rest } = oldRolloutState;
  const read = withRolloutField(decoded(oldRolloutState));
  expect(read).toEqual({ ...rest, rollout: spec });
  expect(read).not.toHaveProperty('spec');
  expect(read.rollout.name).toBe('long');
});

test('state carried under `rollout` (the current form) reads as it was written', () => {
  const { spec, ...rest } = oldNodeEntry;
  const current: NodeRollout = { ...rest, rollout: spec };
  expect(withRolloutField(decoded(current))).toEqual(current);
});
