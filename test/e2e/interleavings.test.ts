import type { V1Job } from '@kubernetes/client-node';
import { E2E, entry } from './e2e-stack';
import { LONG, NodeScenarios, bootId, manifest } from './node-scenarios';
import { expectGoneBefore, expectOneExecutor, nodeReady, podEnd, type Tracked } from './timeline';

// G11 (one executor per package per node) and G12 (interrupts alone) on the real stack: the worker process, the
// kube-apiserver with kwok nodes and the simulator playing the agent, Temporal. Each test has a node of its own and a
// rollout on it alone. What happened is read from the watch record of every Job, Pod and Node (test/e2e/timeline.ts,
// ordered by the API server's own write order), the Node annotation and the CLI's status. The same scenarios with a
// fake cluster: test/workflows/node-interleavings.test.ts. G13 and G14: failures-pauses.test.ts.

const e2e = new E2E('intl');
const k = NodeScenarios.use(e2e, 4);

/** How long the stop took, for the record: from the spec change sent to the old Job gone and the next one created. */
function logStop(stopped: Tracked<V1Job>, next: Tracked<V1Job>, changedAt: number): void {
  const gone = stopped.events.find((e) => e.type === 'DELETED')!.at;
  console.log(
    `${stopped.key} stopped: its Job gone ${((gone - changedAt) / 1000).toFixed(1)}s after the spec change was sent, ` +
      `${next.key} created ${((next.addedAt - changedAt) / 1000).toFixed(1)}s after`,
  );
}

test.concurrent(
  'G11 a version bump while apply runs: the v2 Job never runs beside the v1 Job',
  async () => {
    const node = k.take(0);
    const name = 'bump';
    // v1's apply would run 90 s: the bump comes while it runs.
    const changedAt = await k.changeWhileRunning(
      node,
      name,
      { drv: { version: '1.0.0', simSeconds: 90 } },
      'drv@1.0.0:apply',
      { drv: { version: '2.0.0' } },
    );

    const state = await e2e.nodeState(node, name);
    expect(Object.keys(state ?? {})).toEqual(['drv|2.0.0']);
    expect(entry(state, 'drv')).toMatchObject({ version: '2.0.0', stage: 'config', state: 'complete' });
    const jobs = expectOneExecutor(k.tl, node, 'drv');
    expect(jobs.map((j) => j.key)).toEqual(['drv@1.0.0:apply', 'drv@2.0.0:upgrade', 'drv@2.0.0:config']);
    const [v1, upgrade, config] = jobs as [Tracked<V1Job>, Tracked<V1Job>, Tracked<V1Job>];
    // v1's apply was stopped mid-run (it never completed), and it and its pod were gone before v2's first Job existed.
    expect(k.tl.succeeded(v1)).toBe(false);
    expectGoneBefore(k.tl, v1, upgrade);
    logStop(v1, upgrade, changedAt);
    expect(k.tl.succeeded(upgrade)).toBe(true);
    expect(k.tl.succeeded(config)).toBe(true);
  },
  420_000,
);

test.concurrent(
  'G11 a package removed while it applies: its uninstall starts only after the apply Job is gone',
  async () => {
    const node = k.take(1);
    const name = 'removal';
    const packages = { old: { version: '1.0.0', simSeconds: 90 }, keep: { version: '1.0.0' } };
    const changedAt = await k.changeWhileRunning(node, name, packages, 'old@1.0.0:apply', { keep: packages.keep });
    const state = await k.untilState(node, name, 'old uninstalled', (s) =>
      expect(Object.keys(s)).toEqual(['keep|1.0.0']),
    );
    expect(entry(state, 'keep')).toMatchObject({ stage: 'config', state: 'complete' });

    const jobs = expectOneExecutor(k.tl, node, 'old');
    expect(jobs.map((j) => j.key)).toEqual(['old@1.0.0:apply', 'old@1.0.0:uninstall']);
    const [apply, uninstall] = jobs as [Tracked<V1Job>, Tracked<V1Job>];
    expect(k.tl.succeeded(apply)).toBe(false);
    expectGoneBefore(k.tl, apply, uninstall);
    logStop(apply, uninstall, changedAt);
    expect(k.tl.succeeded(uninstall)).toBe(true);
    expectOneExecutor(k.tl, node, 'keep');
  },
  420_000,
);

test.concurrent(
  'G11 a configMap change while config runs: config runs again after the first config Job is gone',
  async () => {
    const node = k.take(2);
    const name = 'conf';
    // Every stage of tune runs 30 s: the change comes while the first config runs, and stops it before it ends (a
    // running stage's wait hears that it is stopped at its next heartbeat to Temporal, up to 16 s later).
    const tune = (value: string) => ({ tune: { version: '1.0.0', simSeconds: 30, configMap: { 'a.conf': value } } });
    const changedAt = await k.changeWhileRunning(node, name, tune('one'), 'tune@1.0.0:config', tune('two'));
    const state = await e2e.nodeState(node, name);
    expect(entry(state, 'tune')).toMatchObject({ stage: 'config', state: 'complete' });

    const jobs = expectOneExecutor(k.tl, node, 'tune');
    // apply once; config twice: two Jobs of the same name, one after the other.
    expect(jobs.map((j) => j.key)).toEqual(['tune@1.0.0:apply', 'tune@1.0.0:config', 'tune@1.0.0:config']);
    const [, first, second] = jobs as [Tracked<V1Job>, Tracked<V1Job>, Tracked<V1Job>];
    expect(second.name).toBe(first.name);
    expect(k.tl.succeeded(first)).toBe(false); // stopped mid-run
    expectGoneBefore(k.tl, first, second);
    logStop(first, second, changedAt);
    expect(k.tl.succeeded(second)).toBe(true);
    // The second config read the new configMap.
    const volume = second.last.spec?.template.spec?.volumes?.find((v) => v.configMap && v.name === 'package-config');
    expect(volume).toBeDefined();
    const cm = await e2e.core.readNamespacedConfigMap({ name: volume!.configMap!.name!, namespace: e2e.namespace });
    expect(cm.data?.['a.conf']).toBe('two');
  },
  420_000,
);

test.concurrent(
  'G12 an independent package beside a rebooting one never has a Job running during the reboot',
  async () => {
    const node = k.take(3);
    const name = 'alone';
    const bootBefore = bootId(await e2e.node(node));
    // tune's stages run 30 s: drv reaches its reboot (permit, cordon, drain, apply, config) long before tune's apply is
    // done, and tune's config would then start while the reboot is due.
    const packages = {
      drv: { version: '1.0.0', interrupt: { type: 'reboot' } },
      tune: { version: '1.0.0', simSeconds: 30 },
    };
    await e2e.start_(name, [manifest({ name, nodes: [node], packages })]);
    await e2e.waitComplete(name, LONG);

    const interrupts = k.tl.jobsOn(node, (key) => key.endsWith(':interrupt'));
    expect(interrupts.map((j) => j.key)).toEqual(['drv@1.0.0:interrupt']);
    const reboot = interrupts[0]!;
    const one = (key: string) => {
      const found = k.tl.jobsOn(node, key);
      expect(found).toHaveLength(1);
      return found[0]!;
    };
    const [drvConfig, tuneApply, tuneConfig] = [
      one('drv@1.0.0:config'),
      one('tune@1.0.0:apply'),
      one('tune@1.0.0:config'),
    ];
    // The scenario happened: drv was ready for its reboot while tune's apply still ran.
    if (!(k.tl.jobEnd(drvConfig)! < k.tl.jobEnd(tuneApply)!))
      throw new Error(`scenario missed: tune's apply ended before drv's config\n${k.tl.describeJobs(node)}`);

    // The reboot's Job was created only once every stage Job and pod made before it had finished.
    const stageJobs = k.tl.jobsOn(node, (key) => !key.endsWith(':interrupt'));
    for (const j of stageJobs.filter((x) => x.addedRv < reboot.addedRv)) {
      if (!(k.tl.jobEnd(j)! < reboot.addedRv))
        throw new Error(`${j.key} unfinished when the reboot started\n${k.tl.describeJobs(node)}`);
    }
    const stagePods = k.tl.podsOn(node, (key) => !key.endsWith(':interrupt'));
    for (const p of stagePods.filter((x) => x.addedRv < reboot.addedRv))
      expect(podEnd(p)!).toBeLessThan(reboot.addedRv);

    // The reboot happened (a new boot ID, NotReady, Ready again), and no stage Job was created until the node was back.
    const events = k.tl.nodeEvents(node).filter((e) => e.rv > reboot.addedRv);
    const down = events.find((e) => bootId(e.obj) !== bootBefore && !nodeReady(e.obj));
    const back = events.find((e) => bootId(e.obj) !== bootBefore && nodeReady(e.obj));
    expect(down).toBeDefined();
    expect(back).toBeDefined();
    const during = stageJobs.filter((j) => j.addedRv > reboot.addedRv && j.addedRv < back!.rv);
    expect(during.map((j) => j.key)).toEqual([]);
    expect(stagePods.filter((p) => p.addedRv > reboot.addedRv && p.addedRv < back!.rv).map((p) => p.key)).toEqual([]);
    expect(tuneConfig.addedRv).toBeGreaterThan(back!.rv);

    const state = await e2e.nodeState(node, name);
    expect(entry(state, 'drv')).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
    expect(entry(state, 'tune')).toMatchObject({ stage: 'config', state: 'complete' });
    const after = await e2e.node(node);
    expect(bootId(after)).not.toBe(bootBefore);
    expect(after.spec?.unschedulable ?? false).toBe(false);
  },
  420_000,
);
