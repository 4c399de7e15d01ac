import type { V1Job } from '@kubernetes/client-node';
import { standInController } from '../../harness/kube';
import {
  useE2E,
  PREFIX,
  entry,
  eventually,
  isCordoned,
  jobNodeName,
  skyhook,
  sleep,
  stageKey,
  type SkyhookDef,
} from './e2e-stack';

// §7 strict-order and cli/lifecycle: order across rollouts on one node (priority, then name; a paused rollout holds
// lower ones back, a disabled one does not, §5.5), and pause, resume, disable, enable through the CLI.

// Deleting each rollout is one CLI call, and under load one call can take most of a minute.
const e2e = useE2E('order', { nodes: 3, stopTimeoutMs: 900_000 });

const PROTECT = 'keelson-e2e/protect';

function rolloutJobs(node: string, rollout: string): V1Job[] {
  return [...e2e.workloads.jobs.values()].filter(
    (j) => jobNodeName(j) === node && j.metadata?.labels?.['keelson.dev/rollout'] === rollout,
  );
}

const createdAt = (j: V1Job) => new Date(j.metadata!.creationTimestamp!).getTime();

/** When the rollout's first Job on the node was created, and when its last one completed. */
function span(node: string, rollout: string): { start: number; end: number } {
  const jobs = rolloutJobs(node, rollout);
  if (jobs.length === 0) throw new Error(`no Job of ${rollout} on ${node}`);
  const ends = jobs.map((j) => e2e.workloads.stageEnd(j));
  if (ends.some((end) => end === undefined)) throw new Error(`a Job of ${rollout} on ${node} has not completed`);
  return { start: Math.min(...jobs.map(createdAt)), end: Math.max(...(ends as number[])) };
}

async function statusLabel(node: string, rollout: string): Promise<string | undefined> {
  return (await e2e.node(node)).metadata?.labels?.[`${PREFIX}status_${rollout}`];
}

async function expectLabels(node: string, want: Record<string, string>): Promise<void> {
  await eventually(
    `${node} status labels ${JSON.stringify(want)}`,
    async () => {
      for (const [rollout, status] of Object.entries(want)) expect(await statusLabel(node, rollout)).toBe(status);
    },
    LONG,
  );
}

/** `rollout list --json`: every rollout's status from one call, so several rollouts are seen at one moment. */
async function listStatuses(): Promise<Record<string, string>> {
  const out = await e2e.cliOk(['rollout', 'list', '--json']);
  const { rollouts } = JSON.parse(out) as { rollouts: { name: string; status: string }[] };
  return Object.fromEntries(rollouts.map((r) => [r.name, r.status]));
}

/**
 * A pod that runs until the test deletes it (the simulator ends only package stage pods), protected from the
 * interrupts of the rollout named `holder`: that rollout holds on the node, before its interrupt, until it is gone.
 */
async function holdPod(node: string, holder: string): Promise<() => Promise<void>> {
  const name = `hold-${holder}-${node.slice(-2)}`;
  await e2e.core.createNamespacedPod({
    namespace: e2e.namespace,
    body: {
      metadata: {
        name,
        labels: { [PROTECT]: holder },
        // Managed, so the drain of another rollout evicts it rather than being blocked by a bare pod.
        ownerReferences: await standInController(e2e.core, e2e.namespace),
      },
      spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/keelson/app:1' }] },
    },
  });
  return async () => void (await e2e.core.deleteNamespacedPod({ name, namespace: e2e.namespace }));
}

/**
 * A rollout whose node runs `early`, then holds (in_progress) before the noop interrupt of `late` while a hold pod
 * for it is on the node; other rollouts get plain packages.
 */
async function startRollout(def: Omit<SkyhookDef, 'packages'> & { holds?: boolean; simSeconds?: number }) {
  const simSeconds = def.simSeconds ?? 1;
  const packages: SkyhookDef['packages'] = def.holds
    ? {
        early: { version: '1.0.0', simSeconds },
        late: { version: '1.0.0', simSeconds, dependsOn: { early: '1.0.0' }, interrupt: { type: 'noop' } },
      }
    : { first: { version: '1.0.0', simSeconds: 2 }, second: { version: '1.0.0', dependsOn: { first: '1.0.0' } } };
  const doc = skyhook({ ...def, packages }) as { spec: Record<string, unknown> };
  if (def.holds) doc.spec.podNonInterruptLabels = { matchLabels: { [PROTECT]: def.name } };
  await e2e.start_(def.name, [doc]);
}

/** Generous: under load one CLI call can take most of a minute. */
const LONG = 400_000;

test('strict-order: per node, priority then name; a paused rollout holds lower ones back, a disabled one does not', async () => {
  const [n0, n1] = [e2e.nodes[0]!, e2e.nodes[1]!];
  const nodes = [n0, n1];
  // zzz (priority 1) holds on both nodes; n0 is released first, so n0 goes on to priority 2 while n1 is still held
  // at priority 1. Priority 2: a (disabled), b (paused, then holding on n0), c.
  const releaseZzz = [await holdPod(n0, 'zzz'), await holdPod(n1, 'zzz')];
  await startRollout({ name: 'zzz', priority: 1, nodes, holds: true });
  // zzz on the nodes first: a rollout of priority 2 whose desire came first would start a stage there.
  for (const n of nodes) await expectLabels(n, { zzz: 'in_progress' });
  await startRollout({ name: 'a', priority: 2, nodes });
  await startRollout({ name: 'b', priority: 2, nodes, holds: true });
  await startRollout({ name: 'c', priority: 2, nodes });
  // Each rollout on the nodes first: one disabled or paused before its first pass admits no node at all.
  for (const n of nodes) await expectLabels(n, { a: 'waiting', b: 'waiting', c: 'waiting' });
  await e2e.cliOk(['rollout', 'disable', 'a', '--reason', 'e2e: a disabled rollout must not hold b and c back']);
  await e2e.cliOk(['rollout', 'pause', 'b', '--reason', 'e2e: a paused rollout holds c back']);
  for (const n of nodes) {
    await expectLabels(n, { zzz: 'in_progress', a: 'disabled', b: 'paused', c: 'waiting' });
    await eventually('zzz cordoned the node and waits for its hold pod', async () => {
      expect(isCordoned(await e2e.node(n), 'zzz')).toBe(true);
    });
  }
  expect(await listStatuses()).toMatchObject({ zzz: 'in_progress', a: 'disabled', b: 'paused', c: 'waiting' });

  // n0 completes zzz; b is paused, so c still waits on n0, and a, disabled, is skipped.
  await releaseZzz[0]!();
  await expectLabels(n0, { zzz: 'complete' });
  await sleep(5_000);
  await expectLabels(n0, { a: 'disabled', b: 'paused', c: 'waiting' });
  for (const r of ['a', 'b', 'c']) expect(rolloutJobs(n0, r)).toEqual([]);

  // Resume b: n0 runs b (before a, still disabled) and b holds there, in progress, while zzz on n1 is in progress
  // too: both rollouts in progress at once, per-node order with no global barrier between priorities.
  const releaseB = await holdPod(n0, 'b');
  await e2e.cliOk(['rollout', 'resume', 'b', '--reason', 'e2e: let b go']);
  await expectLabels(n0, { b: 'in_progress', c: 'waiting' });
  expect(await listStatuses()).toMatchObject({ zzz: 'in_progress', a: 'disabled', b: 'in_progress' });
  expect(rolloutJobs(n0, 'b').length).toBeGreaterThan(0);
  await releaseB();
  await expectLabels(n0, { b: 'complete', c: 'complete' });
  expect(isCordoned(await e2e.node(n1), 'zzz')).toBe(true);
  await expectLabels(n1, { zzz: 'in_progress', b: 'waiting', c: 'waiting' });
  for (const r of ['a', 'b', 'c']) expect(rolloutJobs(n1, r)).toEqual([]);

  // Release n1: it catches up through zzz, then b, then c.
  await releaseZzz[1]!();
  await e2e.waitComplete('c', LONG);
  for (const name of ['zzz', 'b']) expect((await e2e.status(name)).status).toBe('complete');
  expect((await e2e.status('a')).status).toBe('disabled');
  for (const n of nodes) {
    // Each rollout's Jobs on a node start only after the one before it is complete there.
    expect(span(n, 'b').start).toBeGreaterThanOrEqual(span(n, 'zzz').end);
    expect(span(n, 'c').start).toBeGreaterThanOrEqual(span(n, 'b').end);
    expect(rolloutJobs(n, 'a')).toEqual([]);
    expect(entry(await e2e.nodeState(n, 'zzz'), 'late')).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
  }
  // n0 finished priority 2 before n1 had finished priority 1.
  expect(span(n0, 'c').end).toBeLessThanOrEqual(span(n1, 'zzz').end);

  // Enabled again, a runs on both nodes, after everything else there.
  await e2e.cliOk(['rollout', 'enable', 'a', '--reason', 'e2e: run a now']);
  await e2e.waitComplete('a', LONG);
  for (const n of nodes) {
    expect(span(n, 'a').start).toBeGreaterThanOrEqual(span(n, 'c').end);
    expect(entry(await e2e.nodeState(n, 'a'), 'second')).toMatchObject({ stage: 'config', state: 'complete' });
  }
}, 1_200_000);

test('lifecycle (cli): pause starts nothing, disable is at least as strong, resume lifts only pause, enable goes on', async () => {
  const node = e2e.nodes[2]!;
  const name = 'steered';
  // `hold` (priority 1) keeps the node until the test lets it go, so steering happens before anything of steered ran.
  const releaseHold = await holdPod(node, 'hold');
  await startRollout({ name: 'hold', priority: 1, nodes: [node], holds: true });
  await startRollout({ name, nodes: [node] });
  await expectLabels(node, { hold: 'in_progress', [name]: 'waiting' });
  await e2e.cliOk(['rollout', 'pause', name, '--reason', 'e2e: hold']);
  const paused = await e2e.statusUntil(name, 'paused', (s) => expect(s.status).toBe('paused'), LONG);
  expect(paused.nodes[node].status).toBe('paused');
  await expectLabels(node, { [name]: 'paused' });

  // The node is free now, but nothing of a paused rollout starts.
  await releaseHold();
  await expectLabels(node, { hold: 'complete' });
  await sleep(8_000);
  expect(rolloutJobs(node, name)).toEqual([]);
  expect((await e2e.status(name)).status).toBe('paused');

  // Disable on top of pause; resume then lifts only the pause: still disabled, still nothing runs.
  await e2e.cliOk(['rollout', 'disable', name, '--reason', 'e2e: stop']);
  await e2e.cliOk(['rollout', 'resume', name, '--reason', 'e2e: resume lifts pause only']);
  const disabled = await e2e.statusUntil(
    name,
    'disabled, not paused',
    (s) => expect(s).toMatchObject({ status: 'disabled', paused: false, disabled: true }),
    LONG,
  );
  expect(disabled.nodes[node].status).toBe('disabled');
  await expectLabels(node, { [name]: 'disabled' });
  await sleep(5_000);
  expect(rolloutJobs(node, name)).toEqual([]);

  // Enable: it runs to completion, each stage once.
  await e2e.cliOk(['rollout', 'enable', name, '--reason', 'e2e: go on']);
  const done = await e2e.waitComplete(name, LONG);
  expect(done).toMatchObject({ paused: false, disabled: false, completeNodes: '1/1' });
  expect(rolloutJobs(node, name).map(stageKey).sort()).toEqual([
    'first@1.0.0:apply',
    'first@1.0.0:config',
    'second@1.0.0:apply',
    'second@1.0.0:config',
  ]);
  expect(await statusLabel(node, name)).toBe('complete');
}, 900_000);
