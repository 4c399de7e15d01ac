import { globMatches, isGlob } from './glob';
import type { Status } from './node-state';

// Which nodes a per-node command (`node rerun`, `node reset`) acts on: names as given, `*` patterns matched against
// the rollout's node list, and the rollout's erroring nodes on request. Pure: the CLI reads the list from the API.

export interface NodeSelectionRequest {
  /** Node names and `*` patterns, as typed. */
  args: readonly string[];
  allErroring: boolean;
}

/** The rollout's nodes with their status, in the order the status lists them. */
export type RolloutNodes = readonly { name: string; status: Status }[];

/** The nodes to act on, or (nothing selected) the errors that say why. */
export interface NodeSelection {
  nodes: string[];
  errors: string[];
}

/** True when the request cannot be answered from the names alone: it needs the rollout's node list. */
export function needsNodeList(request: NodeSelectionRequest): boolean {
  return request.allErroring || request.args.some(isGlob);
}

/**
 * The nodes selected, each once, in the order asked (a pattern's matches and the erroring nodes in list order).
 * A pattern that matches no node is an error naming it; so is a request that names nothing.
 */
export function selectNodes(request: NodeSelectionRequest, rollout: string, listed: RolloutNodes): NodeSelection {
  if (request.args.length === 0 && !request.allErroring) {
    return { nodes: [], errors: ['nodes: give at least one node name or pattern, or --all-erroring'] };
  }
  const picked: string[] = [];
  const errors: string[] = [];
  for (const arg of request.args) {
    if (!isGlob(arg)) {
      picked.push(arg);
      continue;
    }
    const matches = listed.filter((n) => globMatches(arg, n.name)).map((n) => n.name);
    if (matches.length === 0) {
      errors.push(
        `nodes: pattern ${JSON.stringify(arg)} matches no node of rollout ${rollout}; ` +
          `its nodes: ${listed.map((n) => n.name).join(', ') || 'none'}`,
      );
    }
    picked.push(...matches);
  }
  if (request.allErroring) picked.push(...listed.filter((n) => n.status === 'erroring').map((n) => n.name));
  if (errors.length > 0) return { nodes: [], errors };
  return { nodes: [...new Set(picked)], errors: [] };
}
