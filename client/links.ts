// Temporal Web UI links: a workflow's page, and a workflow list filtered by a visibility query.

export interface UiTarget {
  uiUrl: string;
  namespace: string;
}

export function workflowLink(t: UiTarget, workflowId: string): string {
  return `${t.uiUrl}/namespaces/${encodeURIComponent(t.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

export function workflowListLink(t: UiTarget, query: string): string {
  return `${t.uiUrl}/namespaces/${encodeURIComponent(t.namespace)}/workflows?query=${encodeURIComponent(query)}`;
}
