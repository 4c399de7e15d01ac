import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { ignoreOutcome, type IgnoreAction, type IgnoreBody, type IgnoreResult } from '../model';
import { NotFoundError } from '../client';
import { kubeCode, kubeFailure, kubeMessage, type ClusterAccess } from './cluster';

// `node ignore|unignore`: sets (or removes) the ignore labels on each node named or selected. Idempotent: a node
// already as asked is not written. Each node has its own outcome; one failing does not stop the others.

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The nodes a request names, then those its selector matches, each once; none matching the selector is an error. */
export async function targetNodes(cluster: ClusterAccess, body: IgnoreBody): Promise<string[]> {
  const names = new Set(body.nodes ?? []);
  if (body.selector !== undefined) {
    const listed = await cluster.core
      .listNode({ labelSelector: body.selector })
      .catch((err: unknown) => Promise.reject(kubeFailure(err, `list nodes -l ${body.selector}`, 'body.selector')));
    if (listed.items.length === 0) throw new NotFoundError(`no node matches selector ${JSON.stringify(body.selector)}`);
    for (const n of listed.items) names.add(n.metadata!.name!);
  }
  return [...names];
}

export async function setIgnored(cluster: ClusterAccess, action: IgnoreAction, node: string): Promise<IgnoreResult> {
  const wanted = action === 'ignore' ? 'true' : null;
  try {
    const current = (await cluster.core.readNode({ name: node })).metadata?.labels ?? {};
    const asked = cluster.ignoreLabels.every((l) => (current[l] ?? null) === wanted);
    if (!asked) {
      const labels = Object.fromEntries(cluster.ignoreLabels.map((l) => [l, wanted]));
      await cluster.core.patchNode({ name: node, body: { metadata: { labels } } }, mergePatch);
    }
    return { node, outcome: ignoreOutcome(action, asked) };
  } catch (err) {
    if (kubeCode(err) === 404) return { node, outcome: 'not found', error: `node ${node} does not exist` };
    return { node, outcome: 'failed', error: `${action} node ${node}: ${kubeMessage(err)}` };
  }
}
