import type { V1Job, V1Node } from '@kubernetes/client-node';
import { useE2E, PREFIX, entry, isCordoned, skyhook } from './e2e-stack';

// §7 interrupt, interrupt-grouping: cordon, ONE merged interrupt per node (§3.5), reboot, uncordon.

const e2e = useE2E('intr', { nodes: 2 });

/** The decoded agent argument of an interrupt Job ({type, services?}), from its base64 JSON container argument. */
function interruptArgument(job: V1Job): { type: string; services?: string[] } {
  const spec = job.spec!.template.spec!;
  for (const c of [...(spec.initContainers ?? []), ...spec.containers])
    for (const a of c.args ?? []) {
      try {
        const parsed = JSON.parse(Buffer.from(a, 'base64').toString('utf8')) as { type?: string };
        if (typeof parsed.type === 'string') return parsed as { type: string; services?: string[] };
      } catch {
        // not the argument
      }
    }
  throw new Error(`no interrupt argument in ${job.metadata?.name}`);
}

test('interrupts and their merging: a reboot behind dependsOn and two service interrupts run as ONE reboot', async () => {
  const node = e2e.nodes[0]!;
  const name = 'merge';
  const seen: V1Node[] = [];
  const stopWatch = await e2e.watchNodes((n) => n.metadata?.name === node && seen.push(n));
  const bootBefore = (await e2e.node(node)).status?.nodeInfo?.bootID;
  const packages = {
    // base is slow, so the service packages reach their interrupt long before kernel may start.
    base: { version: '1.0.0', simSeconds: 8 },
    kernel: { version: '5.4.0', dependsOn: { base: '1.0.0' }, interrupt: { type: 'reboot' } },
    cron: { version: '1.0.0', interrupt: { type: 'service', services: ['cron'] } },
    daemons: { version: '2.0.0', interrupt: { type: 'service', services: ['containerd', 'foobar'] } },
  };
  await e2e.startAndWait(name, [skyhook({ name, nodes: [node], packages })]);
  stopWatch();
  const interrupts = e2e.workloads.jobKeys(node).filter((k) => k.endsWith(':interrupt'));
  expect(interrupts).toHaveLength(1);
  const job = [...e2e.workloads.jobs.values()].find((j) => j.metadata?.labels?.['keelson.dev/stage'] === 'interrupt')!;
  expect(interruptArgument(job).type).toBe('node_restart');
  const state = await e2e.nodeState(node, name);
  for (const p of ['kernel', 'cron', 'daemons'])
    expect(entry(state, p)).toMatchObject({ stage: 'post-interrupt', state: 'complete' });
  expect(entry(state, 'base')).toMatchObject({ stage: 'config', state: 'complete' });
  // The node was cordoned by this rollout before the interrupt, rebooted (new boot ID), and is uncordoned now.
  expect(seen.some((n) => isCordoned(n, name))).toBe(true);
  const after = await e2e.node(node);
  expect(after.status?.nodeInfo?.bootID).not.toBe(bootBefore);
  expect(after.spec?.unschedulable ?? false).toBe(false);
  expect(after.metadata?.annotations?.[`${PREFIX}cordon_${name}`]).toBeUndefined();
  expect((after.spec?.taints ?? []).map((t) => t.key)).not.toContain('node.kubernetes.io/unschedulable');
});

test('interrupt-grouping: two service interrupts merge into one interrupt Job with the union of services', async () => {
  const node = e2e.nodes[1]!;
  const name = 'grouping';
  const packages = {
    cron: { version: '1.0.0', interrupt: { type: 'service', services: ['cron'] } },
    daemons: { version: '2.0.0', interrupt: { type: 'service', services: ['containerd', 'foobar'] } },
  };
  await e2e.startAndWait(name, [skyhook({ name, nodes: [node], packages })]);
  const jobs = [...e2e.workloads.jobs.values()].filter(
    (j) => j.spec?.template.spec?.nodeName === node && j.metadata?.labels?.['keelson.dev/stage'] === 'interrupt',
  );
  expect(jobs).toHaveLength(1);
  expect(interruptArgument(jobs[0]!)).toMatchObject({
    type: 'service_restart',
    services: ['containerd', 'cron', 'foobar'],
  });
  const n = await e2e.node(node);
  expect(n.spec?.unschedulable ?? false).toBe(false);
  expect(n.spec?.taints ?? []).toEqual([]);
});
