import type { V1Job, V1Node } from '@kubernetes/client-node';
import {
  useE2E,
  PREFIX,
  entry,
  isCordoned,
  skyhook,
  stageKey,
  type NodeStateJson,
  type PackageDef,
  type StatusJson,
} from './e2e-stack';

// §7 config-skyhook, uninstall-upgrade-skyhook, failure-skyhook: what a changed manifest does to packages already
// on a node (config re-runs, config interrupts, upgrade, downgrade, uninstall) and how a failed stage is fixed.

const e2e = useE2E('pkgs', { nodes: 3 });
// Generous: the machine running the suite is shared and slow; no assertion depends on time.
const WAIT_MS = 300_000;
const TEST_MS = 900_000;

/** Starts the rollout and waits, polling its status, until it is complete. */
async function startAndComplete(name: string, node: string, packages: Record<string, PackageDef>): Promise<void> {
  await e2e.start_(name, [skyhook({ name, nodes: [node], packages })]);
  await e2e.waitComplete(name, WAIT_MS);
}

/** Applies the manifest as generation `generation` and waits until the rollout is complete at it. */
async function applyAndComplete(
  name: string,
  node: string,
  packages: Record<string, PackageDef>,
  generation: number,
): Promise<StatusJson> {
  await e2e.apply(name, [skyhook({ name, nodes: [node], packages })]);
  return e2e.statusUntil(
    name,
    `generation ${generation} complete`,
    (s) => {
      expect([s.generation, s.status]).toEqual([generation, 'complete']);
    },
    WAIT_MS,
  );
}

/** Every nodeState value the node shows from now on, until the returned stop is called. */
async function recordNodeStates(node: string, rollout: string): Promise<{ seen: NodeStateJson[]; nodes: V1Node[] }> {
  const seen: NodeStateJson[] = [];
  const nodes: V1Node[] = [];
  const stop = await e2e.watchNodes((n) => {
    if (n.metadata?.name !== node) return;
    nodes.push(n);
    const raw = n.metadata?.annotations?.[`${PREFIX}nodeState_${rollout}`];
    if (raw !== undefined) seen.push(JSON.parse(raw) as NodeStateJson);
  });
  afterStops.push(stop);
  return { seen, nodes };
}
const afterStops: (() => void)[] = [];
afterEach(() => afterStops.splice(0).forEach((stop) => stop()));

/** The Jobs created on the node since `before` was taken (a key in both counts once per Job). */
function newJobs(node: string, before: string[]): string[] {
  const left = [...before];
  return e2e.workloads.jobKeys(node).filter((k) => {
    const i = left.indexOf(k);
    if (i < 0) return true;
    left.splice(i, 1);
    return false;
  });
}

function envNames(job: V1Job): string[] {
  const spec = job.spec!.template.spec!;
  return [...(spec.initContainers ?? []), ...spec.containers].flatMap((c) => (c.env ?? []).map((e) => e.name));
}

test(
  'config-skyhook: a configMap change re-runs config; a changed key with a configInterrupt interrupts once, one without does not',
  async () => {
    const node = e2e.nodes[0]!;
    const name = 'config';
    const game = (configMap: Record<string, string>): PackageDef => ({
      version: '1.0.0',
      configMap,
      configInterrupts: { 'game.properties': { type: 'service', services: ['game'] } },
    });
    const packages = (configMap: Record<string, string>) => ({
      game: game(configMap),
      plain: { version: '1.0.0' },
    });
    await startAndComplete(name, node, packages({ 'game.properties': 'lives=3', 'ui.properties': 'blue' }));
    // No own interrupt: the configInterrupt only counts in a config cycle whose changed keys it matches.
    expect(e2e.workloads.jobKeys(node)).toEqual([
      'game@1.0.0:apply',
      'game@1.0.0:config',
      'plain@1.0.0:apply',
      'plain@1.0.0:config',
    ]);
    const { nodes } = await recordNodeStates(node, name);

    // A key without a configInterrupt: config runs again, nothing else; no cordon, no interrupt.
    let before = e2e.workloads.jobKeys(node);
    await applyAndComplete(name, node, packages({ 'game.properties': 'lives=3', 'ui.properties': 'red' }), 2);
    expect(newJobs(node, before)).toEqual(['game@1.0.0:config']);
    expect(nodes.some((n) => n.spec?.unschedulable === true)).toBe(false);
    const configMaps = await e2e.core.listNamespacedConfigMap({ namespace: e2e.namespace });
    const gameData = configMaps.items.map((c) => c.data ?? {}).find((d) => 'game.properties' in d);
    expect(gameData).toEqual({ 'game.properties': 'lives=3', 'ui.properties': 'red' });
    expect(entry(await e2e.nodeState(node, name), 'game')).toMatchObject({ stage: 'config', state: 'complete' });

    // The key with a configInterrupt: config, ONE service interrupt, post-interrupt; cordoned meanwhile.
    before = e2e.workloads.jobKeys(node);
    const s = await applyAndComplete(name, node, packages({ 'game.properties': 'lives=5', 'ui.properties': 'red' }), 3);
    expect(newJobs(node, before)).toEqual(['game@1.0.0:config', 'game@1.0.0:interrupt', 'game@1.0.0:post-interrupt']);
    expect(nodes.some((n) => isCordoned(n, name))).toBe(true);
    expect(s.nodes[node].packages.game).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
    expect(s.nodes[node].packages.plain).toMatchObject({ stage: 'config', state: 'complete' });
    const after = await e2e.node(node);
    expect(after.spec?.unschedulable ?? false).toBe(false);
    expect(after.metadata?.annotations?.[`${PREFIX}cordon_${name}`]).toBeUndefined();
  },
  TEST_MS,
);

test(
  'uninstall-upgrade-skyhook: removal uninstalls, a downgrade uninstalls the old version before applying, an upgrade runs upgrade then config',
  async () => {
    const node = e2e.nodes[1]!;
    const name = 'versions';
    const mark = (p: string) => ({ env: { PACKAGE_MARK: p } });
    await startAndComplete(name, node, {
      cats: { version: '1.0.0', ...mark('cats') },
      dogs: { version: '1.2.6', ...mark('dogs') },
      nullptr: { version: '1.0.0', ...mark('nullptr') },
    });
    const { seen } = await recordNodeStates(node, name);
    let before = e2e.workloads.jobKeys(node);
    const s = await applyAndComplete(
      name,
      node,
      { dogs: { version: '1.2.5', ...mark('dogs') }, nullptr: { version: '2.0.0', ...mark('nullptr') } },
      2,
    );
    // The transitions of §3.7, as the Node showed them.
    const showed = (check: (st: NodeStateJson) => boolean) => seen.some(check);
    expect(showed((st) => st['cats|1.0.0']?.stage === 'uninstall' && st['cats|1.0.0'].state === 'in_progress')).toBe(
      true,
    );
    expect(
      showed(
        (st) =>
          st['dogs|1.2.6']?.stage === 'uninstall' &&
          st['dogs|1.2.6'].state === 'in_progress' &&
          st['dogs|1.2.5']?.stage === 'uninstall' &&
          st['dogs|1.2.5'].state === 'skipped',
      ),
    ).toBe(true);
    expect(
      showed((st) => st['nullptr|2.0.0']?.stage === 'upgrade' && st['nullptr|2.0.0'].state === 'in_progress'),
    ).toBe(true);
    const state = await e2e.nodeState(node, name);
    expect(Object.keys(state ?? {}).sort()).toEqual(['dogs|1.2.5', 'nullptr|2.0.0']);
    expect(state?.['dogs|1.2.5']).toMatchObject({ stage: 'config', state: 'complete' });
    expect(state?.['nullptr|2.0.0']).toMatchObject({ stage: 'config', state: 'complete' });
    expect(s.packageList).toBe('dogs:1.2.5,nullptr:2.0.0');
    expect(newJobs(node, before)).toEqual([
      'cats@1.0.0:uninstall',
      'dogs@1.2.5:apply',
      'dogs@1.2.5:config',
      'dogs@1.2.6:uninstall',
      'nullptr@2.0.0:config',
      'nullptr@2.0.0:upgrade',
    ]);
    const job = (key: string) => e2e.workloads.job(node, key)!;
    expect(new Date(job('dogs@1.2.5:apply').metadata!.creationTimestamp!).getTime()).toBeGreaterThanOrEqual(
      e2e.workloads.stageEnd(job('dogs@1.2.6:uninstall'))!,
    );
    expect(new Date(job('nullptr@2.0.0:config').metadata!.creationTimestamp!).getTime()).toBeGreaterThanOrEqual(
      e2e.workloads.stageEnd(job('nullptr@2.0.0:upgrade'))!,
    );
    // Uninstall runs from what the node state holds: without the package's env (§3.7); the other stages carry it.
    expect(envNames(job('cats@1.0.0:uninstall'))).not.toContain('PACKAGE_MARK');
    expect(envNames(job('dogs@1.2.5:apply'))).toContain('PACKAGE_MARK');

    // Removing every package uninstalls everything; the node state is left empty and the rollout complete.
    before = e2e.workloads.jobKeys(node);
    await applyAndComplete(name, node, {}, 3);
    expect(newJobs(node, before)).toEqual(['dogs@1.2.5:uninstall', 'nullptr@2.0.0:uninstall']);
    expect(await e2e.nodeState(node, name)).toEqual({});
  },
  TEST_MS,
);

test(
  'failure-skyhook: a failing stage leaves the node erroring; the fixed manifest completes it, no completed stage runs again',
  async () => {
    const node = e2e.nodes[2]!;
    const name = 'failure';
    const packages = (failStages?: string): Record<string, PackageDef> => ({
      good: { version: '1.0.0' },
      bad: { version: '2.0.0', ...(failStages && { failStages }) },
    });
    // `rollout start --wait` ends with exit 1 once the rollout is erroring with no node still working.
    const file = e2e.file(`${name}.yaml`, [skyhook({ name, nodes: [node], packages: packages('config') })]);
    const started = await e2e.cli(['rollout', 'start', '-f', file, '--wait', '--timeout', '300'], WAIT_MS + 30_000);
    expect(started.code).toBe(1);
    const failed = await e2e.status(name);
    expect(failed).toMatchObject({
      status: 'erroring',
      completeNodes: '0/1',
      nodesInProgress: 1,
      packageList: 'bad:2.0.0,good:1.0.0',
      nodes: { [node]: { status: 'erroring' } },
    });
    expect(failed.nodes[node].packages.bad).toMatchObject({ version: '2.0.0', stage: 'config', state: 'erroring' });
    expect(failed.nodes[node].packages.bad.restarts).toBeGreaterThan(0);
    const bad = entry(await e2e.nodeState(node, name), 'bad');
    expect(bad).toMatchObject({ stage: 'config', state: 'erroring' });
    expect(bad?.restarts).toBeGreaterThan(0);
    expect((await e2e.node(node)).metadata?.labels?.[`${PREFIX}status_${name}`]).toBe('erroring');
    // G3: the failed Job stays, with its failure, for its logs.
    const failedJob = (await e2e.jobs()).find((j) => j.metadata?.labels?.['keelson.dev/package'] === 'bad');
    expect(failedJob?.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True')).toBe(true);

    // The fixed manifest (same version, the failing setting gone): the failed stage runs again with it, and only it.
    const before = e2e.workloads.jobKeys(node);
    expect(before).toEqual(['bad@2.0.0:apply', 'bad@2.0.0:config', 'good@1.0.0:apply', 'good@1.0.0:config']);
    const s = await applyAndComplete(name, node, packages(), 2);
    expect(s.nodes[node].packages.bad).toMatchObject({ version: '2.0.0', stage: 'config', state: 'complete' });
    expect(newJobs(node, before)).toEqual(['bad@2.0.0:config']);
    const fixedJobs = [...e2e.workloads.jobs.values()].filter(
      (j) => j.spec?.template.spec?.nodeName === node && !envNames(j).includes('KEELSON_SIM_FAIL_STAGES'),
    );
    expect(fixedJobs.filter((j) => j.metadata?.labels?.['keelson.dev/package'] === 'bad').map(stageKey)).toEqual([
      'bad@2.0.0:config',
    ]);
    expect(Object.keys((await e2e.nodeState(node, name)) ?? {}).sort()).toEqual(['bad|2.0.0', 'good|1.0.0']);
    expect((await e2e.node(node)).metadata?.labels?.[`${PREFIX}status_${name}`]).toBe('complete');
  },
  TEST_MS,
);
