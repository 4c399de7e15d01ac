import type { ApiClient } from '../../client/http-client';
import type { StatusBody } from './progress';
import type { NodeBody } from './views';

// Why a rollout's erroring nodes are erroring: the rollout's status carries each node's progress only, so the reason
// (the package entry's lastError) is read from the nodes themselves, for the first few erroring nodes.

export const ERRORING_NODES_EXPLAINED = 5;

/** `why <node> <rollout>/<package> (<stage>): <error>` lines for the first erroring nodes, and how many were left. */
export async function explainErroring(api: ApiClient, s: StatusBody): Promise<string> {
  const erroring = Object.entries(s.nodes)
    .filter(([, v]) => v.status === 'erroring')
    .map(([n]) => n)
    .sort();
  const lines: string[] = [];
  for (const node of erroring.slice(0, ERRORING_NODES_EXPLAINED)) {
    try {
      const { body } = await api.request<NodeBody>('GET', `/v1/nodes/${encodeURIComponent(node)}`);
      lines.push(...whyLines(body, s.name).map((l) => `why ${node} ${l}`));
    } catch (err) {
      lines.push(`why ${node}: its status could not be read (${err instanceof Error ? err.message : String(err)})\n`);
    }
  }
  const more = erroring.length - ERRORING_NODES_EXPLAINED;
  if (more > 0) lines.push(`... and ${more} more erroring (keelson node status NODE says why)\n`);
  return lines.join('');
}

/** The first line of an error, cut to a readable length (the whole text is in `-o json` and `keelson logs`). */
const firstLine = (text: string) => {
  const line = text.split('\n')[0]!;
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
};

/** Why each erroring package of a node is: `<rollout>/<package> (<stage>): <error's first line>`. */
export function whyLines(body: NodeBody, rollout?: string): string[] {
  return Object.entries(body.rollouts)
    .filter(([r]) => rollout === undefined || r === rollout)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([r, v]) =>
      Object.entries(v.packages)
        .sort(([a], [b]) => a.localeCompare(b))
        .filter(([, p]) => p.state === 'erroring' && p.lastError)
        .map(([name, p]) => `${r}/${name} (${p.stage}): ${firstLine(p.lastError!)}\n`),
    );
}
