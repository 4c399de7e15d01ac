import type { V1Node } from '@kubernetes/client-node';
import type { LabelSelector } from '../model';
import { labelSelectorString } from '../model/selector-string';
import type { ListedNode, NodeFacts } from './contract';
import type { Clients } from './clients';
import { kube } from './kube-errors';

// Node facts as workflows see them, and the node list a rollout selects.

export function nodeFacts(node: V1Node): NodeFacts {
  return {
    name: node.metadata?.name ?? '',
    labels: { ...(node.metadata?.labels ?? {}) },
    annotations: { ...(node.metadata?.annotations ?? {}) },
    taints: (node.spec?.taints ?? []).map((t) => ({
      key: t.key,
      ...(t.value !== undefined && { value: t.value }),
      effect: t.effect,
    })),
    unschedulable: node.spec?.unschedulable === true,
    ready: isReady(node),
    bootId: node.status?.nodeInfo?.bootID ?? '',
  };
}

export function isReady(node: V1Node): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The listing is a rollout's activity result, kept in its history: without annotations, 0.1 KB a node, not 1.1. */
export async function listNodes(clients: Clients, selector: LabelSelector): Promise<ListedNode[]> {
  const labelSelector = labelSelectorString(selector);
  const nodes = await kube('list', 'nodes', () => clients.core.listNode(labelSelector ? { labelSelector } : {}));
  return nodes.items
    .map((node): ListedNode => {
      const facts: Partial<NodeFacts> & ListedNode = nodeFacts(node);
      delete facts.annotations;
      return facts;
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function readNodeObject(clients: Clients, name: string): Promise<V1Node> {
  return kube('get', `node ${name}`, () => clients.core.readNode({ name }));
}
