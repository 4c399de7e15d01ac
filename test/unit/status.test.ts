import { nodeStatus, nodeStatusFromState, parseRolloutDocuments, rolloutStatus, type Status } from '../../model';

describe('rollout status (§5.3)', () => {
  test.each<[Status[], Status]>([
    [[], 'complete'],
    [['complete', 'complete'], 'complete'],
    [['complete', 'in_progress', 'erroring'], 'in_progress'],
    [['complete', 'erroring', 'erroring'], 'erroring'],
    [['blocked', 'blocked'], 'blocked'],
    [['unknown'], 'unknown'],
    [['waiting', 'complete'], 'waiting'],
    [['waiting', 'erroring'], 'unknown'],
  ])('%j -> %s', (nodes, expected) => {
    expect(rolloutStatus(nodes, { paused: false, disabled: false })).toBe(expected);
  });

  test('overrides: disabled, paused, missing policy', () => {
    expect(rolloutStatus(['in_progress'], { paused: true, disabled: false })).toBe('paused');
    expect(rolloutStatus(['in_progress'], { paused: true, disabled: true })).toBe('disabled');
    expect(rolloutStatus(['complete'], { paused: true, disabled: true })).toBe('complete');
    expect(rolloutStatus(['complete'], { paused: false, disabled: false, policyMissing: true })).toBe('blocked');
  });
});

describe('node status', () => {
  const { rollouts } = parseRolloutDocuments([
    {
      apiVersion: 'skyhook.nvidia.com/v1alpha1',
      kind: 'Skyhook',
      metadata: { name: 'r' },
      spec: { packages: { aa: { version: '1', image: 'x/a' } } },
    },
  ]);
  const pkgs = rollouts[0]!.spec.packages;
  const e = (state: string, stage = 'config') =>
    ({ 'aa|1': { name: 'aa', version: '1', image: 'x/a', stage, state } }) as never;

  test('from package entries', () => {
    expect(nodeStatusFromState(pkgs, {})).toBe('waiting');
    expect(nodeStatusFromState(pkgs, e('complete'))).toBe('complete');
    expect(nodeStatusFromState(pkgs, e('erroring'))).toBe('erroring');
    expect(nodeStatusFromState(pkgs, e('in_progress', 'apply'))).toBe('in_progress');
    expect(nodeStatusFromState(pkgs, e('complete', 'apply'))).toBe('in_progress');
  });

  test('mirrors pause and disable; waits behind a higher priority or before admission', () => {
    const base = {
      rollout: { paused: false, disabled: false },
      own: 'in_progress' as Status,
      waitingOnHigherPriority: false,
      admitted: true,
    };
    expect(nodeStatus(base)).toBe('in_progress');
    expect(nodeStatus({ ...base, rollout: { paused: true, disabled: false } })).toBe('paused');
    expect(nodeStatus({ ...base, rollout: { paused: true, disabled: true } })).toBe('disabled');
    expect(nodeStatus({ ...base, waitingOnHigherPriority: true })).toBe('waiting');
    expect(nodeStatus({ ...base, admitted: false })).toBe('waiting');
    expect(nodeStatus({ ...base, own: 'complete', admitted: false })).toBe('complete');
    expect(nodeStatus({ ...base, own: 'blocked' })).toBe('blocked');
  });
});
