import {
  controlsFor,
  invalidResourceStatus,
  notAcceptedStatus,
  rolloutFields,
  rolloutResourceStatus,
  setCondition,
  type RolloutStatusInput,
} from '../../model/custom-resource/resource-status';
import { RolloutResourceStatusSchema } from '../../model/custom-resource/status';

// The `.status` custom-resource mode writes: Skyhook's fields from the rollout's status, and the Valid and Ready
// conditions, whose transition times move only when their status does.

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:05:00Z';
const packages = { hello: { name: 'hello', version: '1.0.0', image: 'ghcr.io/x/hello' } } as never;

const view = (status: RolloutStatusInput['status'], state: 'complete' | 'in_progress'): RolloutStatusInput => ({
  status,
  nodes: {
    'node-1': { status, packages: { hello: { version: '1.0.0', stage: 'apply', state, restarts: 0 } } },
    'node-2': { status: 'waiting', packages: {} },
  },
  nodesInProgress: status === 'in_progress' ? 1 : 0,
  completeNodes: status === 'complete' ? '2/2' : '0/2',
  packageList: 'hello',
});

describe('rolloutResourceStatus', () => {
  test("Skyhook's fields: status, per-node state and status, the counts, observedGeneration", () => {
    const s = rolloutResourceStatus(view('in_progress', 'in_progress'), packages, 3, [], T0);
    expect(RolloutResourceStatusSchema.parse(s)).toEqual(s);
    expect(s).toMatchObject({
      status: 'in_progress',
      nodeStatus: { 'node-1': 'in_progress', 'node-2': 'waiting' },
      nodeState: {
        'node-1': {
          'hello|1.0.0': {
            name: 'hello',
            version: '1.0.0',
            image: 'ghcr.io/x/hello',
            stage: 'apply',
            state: 'in_progress',
            restarts: 0,
          },
        },
        'node-2': {},
      },
      completeNodes: '0/2',
      nodesInProgress: 1,
      packageList: 'hello',
      observedGeneration: 3,
    });
    expect(s.conditions).toEqual([
      {
        type: 'Valid',
        status: 'True',
        reason: 'Accepted',
        message: 'the manifest is valid',
        observedGeneration: 3,
        lastTransitionTime: T0,
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'InProgress',
        message: '0/2 nodes complete',
        observedGeneration: 3,
        lastTransitionTime: T0,
      },
    ]);
  });

  test('Ready turns True when complete; Valid keeps its transition time', () => {
    const first = rolloutResourceStatus(view('in_progress', 'in_progress'), packages, 1, [], T0);
    const done = rolloutResourceStatus(view('complete', 'complete'), packages, 1, first.conditions!, T1);
    expect(done.conditions!.find((c) => c.type === 'Valid')!.lastTransitionTime).toBe(T0);
    expect(done.conditions!.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Complete',
      lastTransitionTime: T1,
    });
  });

  test('a package no longer in the spec (being uninstalled) shows with no image', () => {
    const s = rolloutResourceStatus(view('in_progress', 'in_progress'), {}, 1, [], T0);
    expect(s.nodeState!['node-1']!['hello|1.0.0']!.image).toBe('');
  });
});

describe('invalidResourceStatus', () => {
  test('the errors go in Valid=False, each with its path; the last status stays', () => {
    const before = rolloutResourceStatus(view('in_progress', 'in_progress'), packages, 1, [], T0);
    const s = invalidResourceStatus(
      before,
      [
        { path: 'Skyhook/x.spec.packages.hello.image', message: 'is required' },
        { path: 'Skyhook/x.spec.priority', message: 'must be at least 1' },
      ],
      2,
      T1,
    );
    expect(s.status).toBe('in_progress');
    expect(s.observedGeneration).toBe(1);
    expect(s.conditions!.find((c) => c.type === 'Valid')).toEqual({
      type: 'Valid',
      status: 'False',
      reason: 'Invalid',
      message: 'Skyhook/x.spec.packages.hello.image: is required; Skyhook/x.spec.priority: must be at least 1',
      observedGeneration: 2,
      lastTransitionTime: T1,
    });
  });

  test('a message past the 32768 characters a condition holds is cut, not refused by the apiserver', () => {
    const s = invalidResourceStatus({}, [{ path: 'p', message: 'x'.repeat(40_000) }], 1, T0);
    expect(s.conditions![0]!.message).toHaveLength(32_768);
    expect(RolloutResourceStatusSchema.safeParse(s).success).toBe(true);
  });
});

describe('a spec the rollout does not run (NameTaken, Refused) over the rollout it runs', () => {
  test("rolloutFields refreshes Skyhook's fields and Ready at the applied generation and leaves Valid as it was", () => {
    const refused = notAcceptedStatus({}, 'Refused', 'the worker refused this spec: image', 2, T0);
    const s = rolloutFields(view('paused', 'in_progress'), packages, 1, refused.conditions!, T1);
    expect(s).toMatchObject({ status: 'paused', observedGeneration: 1, completeNodes: '0/2' });
    expect(s.conditions).toEqual([
      {
        type: 'Valid',
        status: 'False',
        reason: 'Refused',
        message: expect.any(String),
        observedGeneration: 2,
        lastTransitionTime: T0,
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'Paused',
        message: '0/2 nodes complete',
        observedGeneration: 1,
        lastTransitionTime: T1,
      },
    ]);
  });

  test('Valid=False with the reason given; its transition time stays while it stays False', () => {
    const accepted = rolloutResourceStatus(view('complete', 'complete'), packages, 1, [], T0);
    const taken = notAcceptedStatus(accepted, 'NameTaken', 'rollout x is owned by the API', 2, T1);
    expect(taken.conditions!.find((c) => c.type === 'Valid')).toEqual({
      type: 'Valid',
      status: 'False',
      reason: 'NameTaken',
      message: 'rollout x is owned by the API',
      observedGeneration: 2,
      lastTransitionTime: T1,
    });
    expect(taken).toMatchObject({ status: 'complete', observedGeneration: 1 });
    const later = notAcceptedStatus(taken, 'Refused', 'refused', 3, '2026-01-01T00:09:00Z');
    expect(later.conditions!.find((c) => c.type === 'Valid')).toMatchObject({
      reason: 'Refused',
      lastTransitionTime: T1,
    });
    expect(RolloutResourceStatusSchema.safeParse(later).success).toBe(true);
  });
});

test('setCondition replaces a condition of the same type only', () => {
  const a = setCondition([], { type: 'A', status: 'True', reason: 'R', message: '' }, T0);
  const ab = setCondition(a, { type: 'B', status: 'False', reason: 'R', message: '' }, T0);
  expect(setCondition(ab, { type: 'A', status: 'False', reason: 'S', message: 'm' }, T1).map((c) => c.type)).toEqual([
    'B',
    'A',
  ]);
});

test('controlsFor signals only what differs, disable before pause', () => {
  const off = { paused: false, disabled: false };
  expect(controlsFor(off, off)).toEqual([]);
  expect(controlsFor({ paused: true, disabled: true }, off)).toEqual(['disable', 'pause']);
  expect(controlsFor(off, { paused: true, disabled: true })).toEqual(['enable', 'resume']);
  expect(controlsFor({ paused: true, disabled: false }, { paused: true, disabled: false })).toEqual([]);
});
