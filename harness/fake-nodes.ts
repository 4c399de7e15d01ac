import type { CoreV1Api, V1Taint } from '@kubernetes/client-node';
import { fakeNode } from '../deploy/dev/nodes';
import { eventually } from './wait';

// Fake kwok nodes of one test file or bench run alone. Shared nodes (node-000...) would mix in other users' pods,
// drains and PDBs; and without the shared nodes' pool, zone and role labels, suites running beside this one (they
// select by them) never see these nodes drained or rebooted.

export interface FakeNodeDef {
  name: string;
  /** Labels besides kubernetes.io/hostname and kubernetes.io/os; they must include the label `selector` matches. */
  labels: Record<string, string>;
  taints?: V1Taint[];
}

/** Creates the nodes (kwok's annotations from deploy/dev/nodes.ts) and waits until `selector` lists each Ready. */
export async function createFakeNodes(
  core: CoreV1Api,
  nodes: FakeNodeDef[],
  selector: string,
  timeoutMs = 60_000,
  pollMs?: number,
): Promise<string[]> {
  for (const [i, def] of nodes.entries()) {
    const base = fakeNode(i);
    const labels = { 'kubernetes.io/hostname': def.name, 'kubernetes.io/os': 'linux', ...def.labels };
    const spec = def.taints ? { taints: def.taints } : base.spec;
    await core.createNode({ body: { ...base, metadata: { ...base.metadata, name: def.name, labels }, spec } });
  }
  const names = nodes.map((n) => n.name);
  await eventually(
    'fake nodes Ready',
    async () => {
      const listed = await core.listNode({ labelSelector: selector });
      const ready = new Set(
        listed.items
          .filter((n) => (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'))
          .map((n) => n.metadata?.name),
      );
      const notReady = names.filter((n) => !ready.has(n));
      if (notReady.length > 0) throw new Error(`${notReady.length} of ${names.length} not Ready: ${notReady[0]}...`);
    },
    timeoutMs,
    pollMs,
  );
  return names;
}
