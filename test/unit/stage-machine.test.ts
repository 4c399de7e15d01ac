import {
  agentInterruptArgument,
  applyConfigChange,
  applyVersionChanges,
  mergeInterrupts,
  nextStage,
  packageInterrupts,
  parseRolloutDocuments,
  planNode,
  recordStageFailure,
  recordStageSuccess,
  rerunPackage,
  startInterrupt,
  startStage,
  type NodeState,
  type Package,
} from '../../model';

function packages(spec: Record<string, unknown>): Record<string, Package> {
  const { rollouts, errors } = parseRolloutDocuments([
    { apiVersion: 'skyhook.nvidia.com/v1alpha1', kind: 'Skyhook', metadata: { name: 'r' }, spec: { packages: spec } },
  ]);
  expect(errors).toEqual([]);
  return rollouts[0]!.spec.packages;
}
const entry = (name: string, version: string, stage: string, state: string) =>
  ({ [`${name}|${version}`]: { name, version, image: 'img', stage, state } }) as NodeState;

describe('stages (§3.3)', () => {
  test('next stage with and without interrupt', () => {
    expect(nextStage('uninstall', false)).toBe('apply');
    expect(nextStage('apply', false)).toBe('config');
    expect(nextStage('upgrade', true)).toBe('config');
    expect(nextStage('config', false)).toBeUndefined();
    expect(nextStage('config', true)).toBe('interrupt');
    expect(nextStage('interrupt', true)).toBe('post-interrupt');
    expect(nextStage('post-interrupt', true)).toBeUndefined();
  });

  test('a package walks apply -> config -> interrupt -> post-interrupt to completion', () => {
    const pkgs = packages({ aa: { version: '1.0.0', image: 'x/aa', interrupt: { type: 'reboot' } } });
    let state: NodeState = {};
    const walked: string[] = [];
    for (let i = 0; i < 10; i++) {
      const plan = planNode(pkgs, state);
      if (plan.complete) break;
      if (plan.interrupt) {
        walked.push('interrupt');
        expect(plan.interrupt.waitingFor).toEqual([]);
        state = startInterrupt(state, plan.interrupt, pkgs);
        state = recordStageSuccess(state, 'aa|1.0.0', 'interrupt');
        continue;
      }
      const step = plan.run[0]!;
      walked.push(step.stage);
      expect(step.interrupting).toBe(true);
      state = recordStageSuccess(startStage(state, pkgs[step.name]!, step.stage), 'aa|1.0.0', step.stage, {
        restarts: 1,
      });
    }
    expect(walked).toEqual(['apply', 'config', 'interrupt', 'post-interrupt']);
    expect(state['aa|1.0.0']).toMatchObject({ stage: 'post-interrupt', state: 'complete', restarts: 1 });
    expect(planNode(pkgs, state).complete).toBe(true);
  });

  test('dependsOn: parents in parallel first, the child after both (§3.4 depends-on e2e)', () => {
    const pkgs = packages({
      aa: { version: '1', image: 'x/a' },
      bb: { version: '1', image: 'x/b' },
      cc: { version: '1', image: 'x/c', dependsOn: { aa: '1', bb: '1' } },
    });
    expect(planNode(pkgs, {}).run.map((r) => r.name)).toEqual(['aa', 'bb']);
    const aDone = { ...entry('aa', '1', 'config', 'complete'), ...entry('bb', '1', 'config', 'in_progress') };
    expect(planNode(pkgs, aDone).run.map((r) => `${r.name}:${r.stage}`)).toEqual(['bb:config']);
    expect(planNode(pkgs, { ...aDone, ...entry('bb', '1', 'config', 'complete') }).run.map((r) => r.name)).toEqual([
      'cc',
    ]);
  });

  test('failure records erroring with the reason; a late result for a removed or moved entry is ignored (G5)', () => {
    const pkgs = packages({ aa: { version: '1', image: 'x/a' } });
    const running = startStage({}, pkgs['aa']!, 'apply');
    const failed = recordStageFailure(running, 'aa|1', 'apply', {
      restarts: 3,
      lastError: 'BackoffLimitExceeded: boom',
    });
    expect(failed['aa|1']).toMatchObject({
      state: 'erroring',
      restarts: 3,
      lastError: 'BackoffLimitExceeded: boom',
      attempts: 1,
    });
    expect(startStage(failed, pkgs['aa']!, 'apply')['aa|1']!.attempts).toBe(2);
    const removed = rerunPackage(failed, pkgs['aa']!);
    expect(removed).toEqual({});
    expect(recordStageSuccess(removed, 'aa|1', 'apply')).toEqual({});
    expect(recordStageSuccess(entry('aa', '1', 'config', 'in_progress'), 'aa|1', 'apply')).toEqual(
      entry('aa', '1', 'config', 'in_progress'),
    );
    expect(rerunPackage(entry('aa', '1', 'config', 'complete'), pkgs['aa']!, 'apply')['aa|1']).toMatchObject({
      stage: 'apply',
      state: 'in_progress',
    });
  });
});

describe('version changes (§3.7)', () => {
  test('upgrade adds upgrade/in_progress; success removes the old version', () => {
    const pkgs = packages({ aa: { version: '1.3.0', image: 'x/a' } });
    const { state, changed } = applyVersionChanges(pkgs, entry('aa', '1.2.0', 'config', 'complete'));
    expect(changed).toEqual(['aa']);
    expect(state['aa|1.3.0']).toMatchObject({ stage: 'upgrade', state: 'in_progress', image: 'x/a' });
    expect(planNode(pkgs, state).run).toEqual([
      { name: 'aa', version: '1.3.0', stage: 'upgrade', interrupting: false },
    ]);
    expect(Object.keys(recordStageSuccess(state, 'aa|1.3.0', 'upgrade'))).toEqual(['aa|1.3.0']);
  });

  test('downgrade: old uninstall/in_progress, new uninstall/skipped, then apply', () => {
    const pkgs = packages({ aa: { version: '1.2.5', image: 'x/a' } });
    const { state } = applyVersionChanges(pkgs, entry('aa', '1.2.6', 'config', 'complete'));
    expect(state).toMatchObject({
      'aa|1.2.6': { stage: 'uninstall', state: 'in_progress' },
      'aa|1.2.5': { stage: 'uninstall', state: 'skipped' },
    });
    const plan = planNode(pkgs, state);
    expect(plan.uninstall.map((e) => e.version)).toEqual(['1.2.6']);
    expect(plan.run).toEqual([]);
    const after = recordStageSuccess(state, 'aa|1.2.6', 'uninstall');
    expect(after).toEqual({ 'aa|1.2.5': expect.objectContaining({ stage: 'uninstall', state: 'complete' }) });
    expect(planNode(pkgs, after).run.map((r) => r.stage)).toEqual(['apply']);
  });

  test('removal uninstalls and then drops the entry; the node is not complete meanwhile', () => {
    const { state, changed } = applyVersionChanges({}, entry('cats', '1', 'config', 'complete'));
    expect(changed).toEqual(['cats']);
    expect(planNode({}, state)).toMatchObject({
      complete: false,
      uninstall: [expect.objectContaining({ name: 'cats' })],
    });
    expect(recordStageSuccess(state, 'cats|1', 'uninstall')).toEqual({});
    expect(planNode({}, {}).complete).toBe(true);
  });

  test('no change for a package already at its spec version', () => {
    const pkgs = packages({ aa: { version: '1', image: 'x/a' } });
    const s = entry('aa', '1', 'apply', 'in_progress');
    expect(applyVersionChanges(pkgs, s)).toEqual({ state: s, changed: [] });
  });
});

describe('config changes and interrupts (§3.5, §3.6)', () => {
  const pkgs = packages({
    aa: {
      version: '1',
      image: 'x/a',
      interrupt: { type: 'reboot' },
      configMap: { 'game.properties': 'a', 'x.conf': 'b', other: 'c' },
      configInterrupts: { 'game.properties': { type: 'service', services: ['cron'] }, '*.conf': { type: 'noop' } },
    },
  });

  test('a changed key with a config interrupt runs config then that interrupt; without one, config only', () => {
    const done = entry('aa', '1', 'post-interrupt', 'complete');
    const state = applyConfigChange(done, pkgs['aa']!);
    expect(state['aa|1']).toMatchObject({ stage: 'config', state: 'in_progress' });
    expect(packageInterrupts(pkgs['aa']!, ['game.properties'])).toEqual([{ type: 'service', services: ['cron'] }]);
    expect(packageInterrupts(pkgs['aa']!, ['x.conf'])).toEqual([{ type: 'noop' }]);
    expect(packageInterrupts(pkgs['aa']!, ['other'])).toEqual([]);
    expect(packageInterrupts(pkgs['aa']!)).toEqual([{ type: 'reboot' }]);
    const configDone = recordStageSuccess(state, 'aa|1', 'config');
    expect(planNode(pkgs, configDone, { aa: ['other'] }).complete).toBe(true);
    expect(planNode(pkgs, configDone, { aa: ['game.properties'] }).interrupt?.interrupt).toEqual({
      type: 'service',
      services: ['cron'],
    });
  });

  test('merge: reboot > restartAllServices > union of services > noop; owner is the first holder', () => {
    expect(mergeInterrupts({ bb: [{ type: 'noop' }], cc: [{ type: 'reboot' }], dd: [{ type: 'reboot' }] })).toEqual({
      interrupt: { type: 'reboot' },
      owner: 'cc',
      packages: ['bb', 'cc', 'dd'],
    });
    expect(
      mergeInterrupts({
        aa: [{ type: 'noop' }],
        bb: [{ type: 'restartAllServices' }],
        cc: [{ type: 'service', services: ['x'] }],
      })!.interrupt,
    ).toEqual({ type: 'restartAllServices' });
    expect(
      mergeInterrupts({
        aa: [{ type: 'service', services: ['cron'] }],
        bb: [{ type: 'service', services: ['foobar', 'containerd'] }],
        cc: [{ type: 'noop' }],
      }),
    ).toEqual({
      interrupt: { type: 'service', services: ['containerd', 'cron', 'foobar'] },
      owner: 'aa',
      packages: ['aa', 'bb', 'cc'],
    });
    expect(mergeInterrupts({ aa: [{ type: 'noop' }] })!.interrupt).toEqual({ type: 'noop' });
    expect(mergeInterrupts({ aa: [] })).toBeUndefined();
  });

  test('one interrupt for two packages: it waits for both, the other is skipped, and both complete', () => {
    const two = packages({
      aa: { version: '1', image: 'x/a', interrupt: { type: 'service', services: ['cron'] } },
      bb: { version: '1', image: 'x/b', interrupt: { type: 'service', services: ['containerd'] } },
    });
    const half = { ...entry('aa', '1', 'config', 'complete'), ...entry('bb', '1', 'config', 'in_progress') };
    expect(planNode(two, half).interrupt).toMatchObject({ waitingFor: ['bb'], owner: 'aa' });
    const both = { ...half, ...entry('bb', '1', 'config', 'complete') };
    const plan = planNode(two, both);
    expect(plan.interrupt).toMatchObject({ waitingFor: [], interrupt: { services: ['containerd', 'cron'] } });
    const started = startInterrupt(both, plan.interrupt!, two);
    expect([started['aa|1']!.state, started['bb|1']!.state]).toEqual(['in_progress', 'skipped']);
    const done = recordStageSuccess(started, 'aa|1', 'interrupt');
    expect([done['aa|1']!.state, done['bb|1']!.state]).toEqual(['complete', 'complete']);
    expect(planNode(two, done).run.map((r) => `${r.name}:${r.stage}`)).toEqual([
      'aa:post-interrupt',
      'bb:post-interrupt',
    ]);
  });

  test('agent argument: base64 JSON with the agent type names (§3.2)', () => {
    const decode = (b64: string) => JSON.parse(Buffer.from(b64, 'base64').toString('utf8')) as unknown;
    expect(decode(agentInterruptArgument({ type: 'reboot' }))).toEqual({ type: 'node_restart' });
    expect(decode(agentInterruptArgument({ type: 'service', services: ['cron', 'ünï'] }))).toEqual({
      type: 'service_restart',
      services: ['cron', 'ünï'],
    });
    expect(decode(agentInterruptArgument({ type: 'restartAllServices' }))).toEqual({ type: 'restart_all_services' });
    expect(decode(agentInterruptArgument({ type: 'noop' }))).toEqual({ type: 'no_op' });
  });
});
