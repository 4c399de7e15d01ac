import { useE2E, PREFIX, entry, sleep, skyhook, type NodeStateJson } from './e2e-stack';

// G1 and G2 end to end: the worker process is SIGKILLed at random moments and started again while a rollout runs.

const e2e = useE2E('guar', { nodes: 2 });

const STAGE_ORDER = ['uninstall', 'upgrade', 'apply', 'config', 'interrupt', 'post-interrupt'];
const STATE_ORDER = ['unknown', 'skipped', 'in_progress', 'erroring', 'complete'];

/** Progress of one entry as a comparable pair: (stage, state). A completed entry never goes back. */
function rank(e: { stage: string; state: string }): number {
  return STAGE_ORDER.indexOf(e.stage) * 10 + (e.state === 'complete' ? 9 : STATE_ORDER.indexOf(e.state));
}

/** Kills per rollout: each costs a worker start (5-20 s on a loaded 2-core machine). */
const MAX_KILLS = 5;

/**
 * Kills the worker at random moments until `done` resolves or MAX_KILLS is reached; returns how many kills. Each kill
 * comes 0-4 s after the restarted worker has made progress (a node-state annotation changed), so every kill lands in
 * the middle of real work and the rollout always moves between two kills, however slowly the worker starts.
 */
async function killLoop(done: Promise<unknown>, progress: () => number): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true));
  let kills = 0;
  while (!finished && kills < MAX_KILLS) {
    const before = progress();
    while (!finished && progress() === before) await sleep(200);
    await sleep(Math.random() * 4_000);
    if (finished) break;
    await e2e.killWorker();
    kills++;
    process.stderr.write(`[guarantees] worker SIGKILLed (${kills}) after ${progress()} node-state changes\n`);
    await sleep(Math.random() * 1_500);
    await e2e.startWorker();
  }
  return kills;
}

/** Counts node-state annotation changes of rollout `name` on this file's nodes, keeping every distinct value. */
async function watchNodeState(name: string) {
  const values: Record<string, NodeStateJson[]> = Object.fromEntries(e2e.nodes.map((n) => [n, []]));
  let changes = 0;
  const stop = await e2e.watchNodes((n) => {
    const raw = n.metadata?.annotations?.[`${PREFIX}nodeState_${name}`];
    const list = values[n.metadata!.name!];
    if (raw === undefined || list === undefined) return;
    if (list.length === 0 || JSON.stringify(list[list.length - 1]) !== raw) {
      list.push(JSON.parse(raw) as NodeStateJson);
      changes++;
    }
  });
  return { values, stop, changes: () => changes };
}

const packages = {
  alpha: { version: '1.0.0', simSeconds: 2 },
  beta: { version: '1.0.0', simSeconds: 2 },
  gamma: { version: '2.0.0', dependsOn: { alpha: '1.0.0' }, interrupt: { type: 'reboot' } },
};

test('G1 serial node state: with the worker SIGKILLed at random moments, no nodeState entry ever moves backwards', async () => {
  const name = 'g1';
  const nodes = e2e.nodes;
  const { values, stop, changes } = await watchNodeState(name);
  await e2e.start_(name, [skyhook({ name, nodes, packages })]);
  const complete = e2e.waitComplete(name, 480_000);
  const kills = await killLoop(complete, changes);
  await complete;
  await sleep(1_000);
  stop();
  console.log(`G1: ${kills} worker kills; annotation values per node: ${nodes.map((n) => values[n]!.length)}`);
  expect(kills).toBeGreaterThan(0);
  for (const node of nodes) {
    const seen = values[node]!;
    expect(seen.length).toBeGreaterThan(3);
    for (let i = 1; i < seen.length; i++)
      for (const [key, before] of Object.entries(seen[i - 1]!)) {
        const after = seen[i]![key];
        // An entry may only disappear by uninstall; here nothing is uninstalled.
        expect(after).toBeDefined();
        if (rank(after!) < rank(before))
          throw new Error(`${node} ${key}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
      }
    const last = seen[seen.length - 1]!;
    expect(entry(last, 'gamma')).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
  }
}, 600_000);

test('G2 no second executor: with the worker SIGKILLed at random moments, one Job and one Pod per package, version, stage and node', async () => {
  // G1's rollout ran under kills too; this one updates it (new versions) and kills again, then counts everything.
  const name = 'g1';
  const nodes = e2e.nodes;
  const v2 = {
    alpha: { version: '1.1.0', simSeconds: 2 },
    beta: { version: '1.1.0', simSeconds: 2 },
    gamma: { version: '2.1.0', dependsOn: { alpha: '1.1.0' }, interrupt: { type: 'reboot' } },
  };
  await e2e.apply(name, [skyhook({ name, nodes, packages: v2 })]);
  await e2e.statusUntil(name, 'generation 2 in progress', (s) => expect(s.generation).toBe(2));
  const complete = e2e.statusUntil(
    name,
    'v2 complete',
    (s) => {
      expect(s.status).toBe('complete');
      for (const n of nodes) expect(s.nodes[n].packages.gamma.version).toBe('2.1.0');
    },
    480_000,
  );
  const { stop, changes } = await watchNodeState(name);
  const kills = await killLoop(complete, changes);
  await complete;
  stop();
  console.log(`G2: ${kills} worker kills`);
  expect(kills).toBeGreaterThan(0);
  for (const node of nodes) {
    const jobs = e2e.workloads.jobKeys(node);
    const pods = e2e.workloads.podKeys(node);
    // Every key exactly once, over both rollouts (v1 then the upgrade to v2).
    expect(jobs).toEqual([...new Set(jobs)]);
    expect(pods).toEqual([...new Set(pods)]);
    expect(jobs).toEqual(pods);
    expect(jobs).toEqual(
      [
        'alpha@1.0.0:apply',
        'alpha@1.0.0:config',
        'beta@1.0.0:apply',
        'beta@1.0.0:config',
        'gamma@2.0.0:apply',
        'gamma@2.0.0:config',
        'gamma@2.0.0:interrupt',
        'gamma@2.0.0:post-interrupt',
        'alpha@1.1.0:upgrade',
        'alpha@1.1.0:config',
        'beta@1.1.0:upgrade',
        'beta@1.1.0:config',
        'gamma@2.1.0:upgrade',
        'gamma@2.1.0:config',
        'gamma@2.1.0:interrupt',
        'gamma@2.1.0:post-interrupt',
      ].sort(),
    );
  }
}, 600_000);
