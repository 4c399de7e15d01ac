import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { mergePatch } from '../../activities/clients';
import { useE2E, PREFIX, RUNTIME_TAINT, entry, eventually, hasTaint, skyhook } from './e2e-stack';

// §7 taint-scheduling, runtime-required: nodes whose taints a rollout does not tolerate are blocked, not run; the
// runtime-required taint leaves each node once every runtimeRequired package is complete on it.

const e2e = useE2E('taint', { nodes: 4 });
// Generous: the machine running the suite is shared and slow; no assertion depends on time.
const WAIT_MS = 300_000;
const TEST_MS = 900_000;
const GPU_TAINT: V1Taint = { key: 'nvidia.com/gpu', effect: 'NoSchedule' };
const GPU_TOLERATION = { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' };

/** Sets the node's taints, as a provisioner or `kubectl taint` would. */
async function setTaints(node: string, taints: V1Taint[]): Promise<void> {
  await e2e.core.patchNode({ name: node, body: { spec: { taints } } }, mergePatch);
}

const packages = {
  base: { version: '1.0.0', simSeconds: 2 },
  tools: { version: '1.1.0', dependsOn: { base: '1.0.0' } },
};

test(
  'taint-scheduling: a node with an untolerated NoSchedule taint is blocked; additionalTolerations let it complete',
  async () => {
    const [clean, gpu] = [e2e.nodes[0]!, e2e.nodes[1]!];
    const name = 'taints';
    await setTaints(gpu, [GPU_TAINT]);
    await e2e.start_(name, [skyhook({ name, nodes: [clean, gpu], packages })]);
    // The blocked node holds nothing back: the other completes; the rollout is blocked by the remaining one (§5.3).
    const blocked = await e2e.statusUntil(
      name,
      'clean node complete, gpu node blocked',
      (s) => {
        expect(s.nodes[clean].status).toBe('complete');
        expect(s.nodes[gpu].status).toBe('blocked');
      },
      WAIT_MS,
    );
    expect(blocked).toMatchObject({ status: 'blocked', completeNodes: '1/2' });
    expect(e2e.workloads.jobKeys(gpu)).toEqual([]);
    expect(await e2e.nodeState(gpu, name)).toBeUndefined();

    await e2e.apply(name, [skyhook({ name, nodes: [clean, gpu], packages, additionalTolerations: [GPU_TOLERATION] })]);
    const done = await e2e.waitComplete(name, WAIT_MS);
    expect(done.nodes[gpu].status).toBe('complete');
    expect(e2e.workloads.jobKeys(gpu)).toEqual([
      'base@1.0.0:apply',
      'base@1.0.0:config',
      'tools@1.1.0:apply',
      'tools@1.1.0:config',
    ]);
    // The clean node, complete already, ran nothing again for the new generation.
    expect(e2e.workloads.jobKeys(clean)).toHaveLength(4);
    // Every stage Job tolerates the cordon, the runtime-required taint and the additionalTolerations (§3.1).
    for (const job of [...e2e.workloads.jobs.values()].filter((j) => j.spec?.template.spec?.nodeName === gpu)) {
      const tolerations = job.spec!.template.spec!.tolerations ?? [];
      expect(tolerations).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ key: 'node.kubernetes.io/unschedulable', operator: 'Exists' }),
          expect.objectContaining({ key: RUNTIME_TAINT.key, value: RUNTIME_TAINT.value, effect: RUNTIME_TAINT.effect }),
          expect.objectContaining(GPU_TOLERATION),
        ]),
      );
    }
    // Keelson never touches a taint that is not its own.
    expect(hasTaint(await e2e.node(gpu), GPU_TAINT.key)).toBe(true);
  },
  TEST_MS,
);

test(
  'runtime-required: each node loses the runtime-required taint once its packages are complete; a blocked node keeps it',
  async () => {
    const [ready, held] = [e2e.nodes[2]!, e2e.nodes[3]!];
    const name = 'runtime';
    await setTaints(ready, [RUNTIME_TAINT]);
    await setTaints(held, [RUNTIME_TAINT, GPU_TAINT]);
    const seen: V1Node[] = [];
    const stopWatch = await e2e.watchNodes((n) => n.metadata?.name === ready && seen.push(n));
    try {
      await e2e.start_(name, [skyhook({ name, nodes: [ready, held], packages, runtimeRequired: true })]);
      await eventually(
        'runtime-required taint removed from the node that completed',
        async () => {
          if (hasTaint(await e2e.node(ready), RUNTIME_TAINT.key)) throw new Error('still tainted');
        },
        WAIT_MS,
      );
      const s = await e2e.status(name);
      expect(s.nodes[ready].status).toBe('complete');
      expect(s.nodes[held].status).toBe('blocked');
      // Per node: the blocked node keeps its taint while the other has lost it.
      expect(hasTaint(await e2e.node(held), RUNTIME_TAINT.key)).toBe(true);
      // The taint was there while packages ran, and went only after both were complete.
      const state = (n: V1Node) => JSON.parse(n.metadata?.annotations?.[`${PREFIX}nodeState_${name}`] ?? '{}');
      const complete = (n: V1Node) =>
        ['base', 'tools'].every(
          (p) => entry(state(n), p)?.state === 'complete' && entry(state(n), p)?.stage === 'config',
        );
      expect(seen.some((n) => hasTaint(n, RUNTIME_TAINT.key) && entry(state(n), 'base')?.state === 'in_progress')).toBe(
        true,
      );
      for (const n of seen.filter((x) => !hasTaint(x, RUNTIME_TAINT.key))) expect(complete(n)).toBe(true);

      // Unblocking the held node (its GPU taint now tolerated) lets it complete and lose the runtime-required taint.
      await e2e.apply(name, [
        skyhook({
          name,
          nodes: [ready, held],
          packages,
          runtimeRequired: true,
          additionalTolerations: [GPU_TOLERATION],
        }),
      ]);
      await e2e.waitComplete(name, WAIT_MS);
      await eventually(
        'runtime-required taint removed from the unblocked node',
        async () => {
          const n = await e2e.node(held);
          if (hasTaint(n, RUNTIME_TAINT.key)) throw new Error('still tainted');
          expect(hasTaint(n, GPU_TAINT.key)).toBe(true);
        },
        WAIT_MS,
      );
      expect(e2e.workloads.jobKeys(held)).toHaveLength(4);
    } finally {
      stopWatch();
    }
  },
  TEST_MS,
);
