// Workflow IDs: one rollout workflow per rollout and one node workflow per node, per cluster. Every reader and
// writer of an ID (workflows, activities, client, worker, visibility queries) builds it here.

const ID_ROOT = 'keelson';

/** The ID prefix of every workflow of a cluster, or of its node or rollout workflows only. */
export function workflowIdPrefix(cluster: string, kind?: 'node' | 'rollout'): string {
  return `${ID_ROOT}/${cluster}/${kind === undefined ? '' : `${kind}/`}`;
}

export function nodeWorkflowId(cluster: string, node: string): string {
  return `${workflowIdPrefix(cluster, 'node')}${node}`;
}

export function rolloutWorkflowId(cluster: string, rollout: string): string {
  return `${workflowIdPrefix(cluster, 'rollout')}${rollout}`;
}
