import type { V1Pod } from '@kubernetes/client-node';
import { useE2E, PREFIX, entry, eventually, skyhook, type NodeStateJson } from './e2e-stack';

// §7 CLI scenarios `node` and `package` (Skyhook's `kubectl skyhook node status|reset`, `package rerun|logs`), as a
// user runs them: `keelson node status|reset|rerun` against the API, checked on the Node and in the Jobs created.

const e2e = useE2E('ops', { nodes: 3 });
const ROLLOUT = 'ops';
const packages = {
  alpha: { version: '1.0.0' },
  beta: { version: '2.0.0' },
};
const ALL_STAGES = ['alpha@1.0.0:apply', 'alpha@1.0.0:config', 'beta@2.0.0:apply', 'beta@2.0.0:config'];
// A rollout of its own on the third node, whose apply fails printing this line (the simulator's KEELSON_SIM_LOG).
const BROKEN = 'broken';
const PRINTED = 'driver install failed: /dev/nvme9 not found (simulated)';

// Both rollouts start here and run side by side (the machine is slow); each test waits for what it reads.
beforeAll(async () => {
  const [a, b, c] = e2e.nodes as [string, string, string];
  await e2e.start_(ROLLOUT, [skyhook({ name: ROLLOUT, nodes: [a, b], packages })]);
  const bad = { version: '1.0.0', failStages: 'apply', env: { KEELSON_SIM_LOG: PRINTED } };
  await e2e.start_(BROKEN, [skyhook({ name: BROKEN, nodes: [c], packages: { bad } })]);
}, 180_000);

/** `node status NODE --json`, parsed. */
async function nodeStatus(node: string) {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- CLI JSON, read field by field
  return JSON.parse(await e2e.cliOk(['node', 'status', node, '--json'])) as Record<string, any>;
}

/** Waits until the node's annotation shows every package of `ROLLOUT` at config/complete again. */
async function nodeCompleteAgain(node: string): Promise<void> {
  await eventually(`${node}: alpha and beta at config/complete`, async () => {
    const state = await e2e.nodeState(node, ROLLOUT);
    for (const p of ['alpha', 'beta']) expect(entry(state, p)).toMatchObject({ stage: 'config', state: 'complete' });
  });
  await e2e.waitComplete(ROLLOUT);
}

test('node status (Skyhook CLI `node`): per rollout the node status and each package version, stage, state, restarts', async () => {
  const [a, b] = e2e.nodes as [string, string];
  await e2e.waitComplete(ROLLOUT, 240_000);
  expect(e2e.workloads.jobKeys(a)).toEqual(ALL_STAGES);
  expect(e2e.workloads.jobKeys(b)).toEqual(ALL_STAGES);

  expect(await nodeStatus(a)).toMatchObject({
    node: a,
    cordonedBy: null,
    rollouts: {
      [ROLLOUT]: {
        status: 'complete',
        paused: false,
        disabled: false,
        packages: {
          alpha: { version: '1.0.0', stage: 'config', state: 'complete', restarts: 0 },
          beta: { version: '2.0.0', stage: 'config', state: 'complete', restarts: 0 },
        },
      },
    },
  });
  const text = await e2e.cliOk(['node', 'status', a]);
  expect(text.split('\n')[0]).toBe(`node ${a}`);
  expect(text).toMatch(/^ROLLOUT\s+STATUS\s+PACKAGES$/m);
  expect(text).toMatch(/^ops\s+complete\s+alpha@1\.0\.0 config complete, beta@2\.0\.0 config complete$/m);
  expect(text).toMatch(/^Temporal UI: http/m);

  const missing = await e2e.cli(['node', 'status', `${e2e.cluster}-nowhere`]);
  expect(missing.code).toBe(4);
  expect(missing.stderr).toContain(`${e2e.cluster}-nowhere`);
  expect(missing.stdout).toBe('');
}, 300_000);

test('node reset (Skyhook CLI `node`): the node state for the rollout is cleared and every package runs again; other nodes run nothing', async () => {
  const [a, b] = e2e.nodes as [string, string];
  const seen: NodeStateJson[] = [];
  const stopWatch = await e2e.watchNodes((n) => {
    const raw = n.metadata?.annotations?.[`${PREFIX}nodeState_${ROLLOUT}`];
    if (n.metadata?.name === a && raw !== undefined) seen.push(JSON.parse(raw) as NodeStateJson);
  });
  e2e.workloads.clear();
  try {
    expect(await e2e.cliOk(['node', 'reset', a, '--rollout', ROLLOUT, '--yes'])).toBe(
      `node ${a}: rollout ${ROLLOUT} reset\n`,
    );
    await nodeCompleteAgain(a);
  } finally {
    stopWatch();
  }
  // Cleared: between the completed state and the new run the annotation held no entry at all.
  expect(seen.some((state) => Object.keys(state).length === 0)).toBe(true);
  expect(e2e.workloads.jobKeys(a)).toEqual(ALL_STAGES);
  expect(e2e.workloads.jobKeys(b)).toEqual([]);

  const unknownRollout = await e2e.cli(['node', 'reset', a, '--rollout', 'no-such-rollout', '--yes']);
  expect(unknownRollout.code).toBe(4);
  expect(unknownRollout.stderr).toContain(`node ${a} has no rollout no-such-rollout`);
}, 300_000);

test('package rerun (Skyhook CLI `package`): only that package (or only that stage) runs again; other packages and nodes do not', async () => {
  const [a, b] = e2e.nodes as [string, string];
  const rerun = ['alpha@1.0.0:apply', 'alpha@1.0.0:config', 'beta@2.0.0:config'];
  e2e.workloads.clear();
  // Without --stage the entry is dropped: alpha runs from apply. With --stage the entry becomes {config, in_progress}.
  expect(await e2e.cliOk(['node', 'rerun', a, '--rollout', ROLLOUT, '--package', 'alpha'])).toBe(
    `node ${a}: alpha of ${ROLLOUT} runs again\n`,
  );
  expect(await e2e.cliOk(['node', 'rerun', a, '--rollout', ROLLOUT, '--package', 'beta', '--stage', 'config'])).toBe(
    `node ${a}: beta of ${ROLLOUT} runs again from config\n`,
  );
  await eventually('alpha apply and config, beta config Jobs on node a', async () =>
    expect(e2e.workloads.jobKeys(a)).toEqual(rerun),
  );
  await nodeCompleteAgain(a);
  expect(e2e.workloads.jobKeys(a)).toEqual(rerun);
  expect(e2e.workloads.jobKeys(b)).toEqual([]);

  const badStage = await e2e.cli(['node', 'rerun', a, '--rollout', ROLLOUT, '--package', 'beta', '--stage', 'bogus']);
  expect(badStage.code).toBe(1);
  expect(badStage.stderr).toContain(
    'stage: "bogus" is not one of "uninstall", "upgrade", "apply", "config", "interrupt", "post-interrupt"',
  );
  const badPackage = await e2e.cli(['node', 'rerun', a, '--rollout', ROLLOUT, '--package', 'nope']);
  expect(badPackage.code).toBe(4);
  expect(badPackage.stderr).toContain(`rollout ${ROLLOUT} has no package nope`);
}, 300_000);

test('package logs (Skyhook CLI `package`): the failing stage log tail reaches the user in node status, and the failed Job keeps its pod log, which `keelson logs` prints', async () => {
  const c = e2e.nodes[2]!;
  const name = BROKEN;
  const printed = PRINTED;
  await e2e.statusUntil(name, 'erroring', (s) => expect(s.nodes[c]).toMatchObject({ status: 'erroring' }), 240_000);

  const report = await nodeStatus(c);
  const bad = report.rollouts[name].packages.bad;
  expect(report.rollouts[name].status).toBe('erroring');
  expect(bad).toMatchObject({ version: '1.0.0', stage: 'apply', state: 'erroring' });
  expect(bad.lastError).toContain(printed);
  expect(bad.restarts).toBeGreaterThanOrEqual(1);
  // The same tail is in the node annotation (G3), where Skyhook tooling reads node state.
  const annotation = (await e2e.node(c)).metadata?.annotations?.[`${PREFIX}nodeState_${name}`] ?? '{}';
  const stored = JSON.parse(annotation) as Record<string, { state: string; lastError?: string }>;
  expect(stored['bad|1.0.0']).toMatchObject({ state: 'erroring', lastError: expect.stringContaining(printed) });

  // The failed Job stays with its pods for the retention time, so `kubectl logs` shows the whole log.
  const job = (await e2e.jobs(`keelson.dev/rollout=${name}`)).find((j) => j.spec?.template?.spec?.nodeName === c);
  expect(job?.status?.failed).toBeGreaterThanOrEqual(1);
  const pods = await e2e.core.listNamespacedPod({
    namespace: e2e.namespace,
    labelSelector: `job-name=${job!.metadata!.name}`,
  });
  const failedPod: V1Pod | undefined = pods.items.find((p) => p.status?.phase === 'Failed');
  const checkContainer = failedPod!.spec!.initContainers!.at(-1)!.name;
  const log = await e2e.core.readNamespacedPodLog({
    name: failedPod!.metadata!.name!,
    namespace: e2e.namespace,
    container: checkContainer,
  });
  expect(log).toContain(printed);
  // `keelson logs` finds the same pod by the package and node alone, and picks the container that failed.
  const cli = await e2e.cliOk(['logs', '--rollout', name, '--node', c, '--package', 'bad']);
  expect(cli).toContain(printed);
}, 300_000);
