import { table } from './output';
import { whyLines } from './why';
import { auditLine, nodeTable, packagesText, summaryLine, type PackageView, type StatusBody } from './progress';

// The text views of `rollout list`, `rollout status` and `node status`: the plain table, and with `-o wide` one row
// per package with its fields in columns (and the workflow IDs of a listed rollout).

export interface RolloutListEntry {
  name: string;
  status: string;
  packages: string[];
  startTime: string;
  workflowId?: string;
  runId?: string;
}

export function rolloutListText(rollouts: readonly RolloutListEntry[], wide: boolean): string {
  if (rollouts.length === 0) return 'no rollouts\n';
  const head = ['NAME', 'STATUS', 'PACKAGES', 'STARTED'];
  const row = (r: RolloutListEntry) => [r.name, r.status, r.packages.join(',') || '-', r.startTime];
  if (!wide) return table([head, ...rollouts.map(row)]);
  return table([
    [...head, 'WORKFLOW ID', 'RUN ID'],
    ...rollouts.map((r) => [...row(r), r.workflowId ?? '-', r.runId ?? '-']),
  ]);
}

type WidePackage = PackageView & { attempts?: number; lastError?: string };

/** One row per package (sorted), or one row of `-` for an owner without packages. */
function packageRows(owner: string[], packages: Record<string, WidePackage>, attempts: boolean): string[][] {
  const entries = Object.entries(packages).sort(([a], [b]) => a.localeCompare(b));
  const dash = ['-', '-', '-', '-', '-', ...(attempts ? ['-'] : [])];
  if (entries.length === 0) return [[...owner, ...dash]];
  return entries.map(([name, p]) => [
    ...owner,
    name,
    p.version,
    p.stage,
    p.state,
    String(p.restarts),
    ...(attempts ? [String(p.attempts ?? '-')] : []),
  ]);
}

export function rolloutStatusText(s: StatusBody, wide: boolean): string {
  const nodes = Object.entries(s.nodes).sort(([a], [b]) => a.localeCompare(b));
  const body = wide
    ? table([
        ['NODE', 'STATUS', 'PACKAGE', 'VERSION', 'STAGE', 'STATE', 'RESTARTS'],
        ...nodes.flatMap(([n, v]) => packageRows([n, v.status], v.packages, false)),
      ])
    : nodeTable(s);
  return `${summaryLine(s)}\n${auditLine(s)}${body}${s.links ? `Temporal UI: ${s.links.rollout}\n` : ''}`;
}

export interface NodeBody {
  node: string;
  link: string;
  rollouts: Record<
    string,
    { status: string; paused: boolean; disabled: boolean; packages: Record<string, WidePackage> }
  >;
  cordonedBy: string | null;
}

export function nodeStatusText(body: NodeBody, wide: boolean): string {
  const rollouts = Object.entries(body.rollouts);
  const rows = wide
    ? [
        ['ROLLOUT', 'STATUS', 'PACKAGE', 'VERSION', 'STAGE', 'STATE', 'RESTARTS', 'ATTEMPTS'],
        ...rollouts.flatMap(([r, v]) => packageRows([r, v.status], v.packages, true)),
      ]
    : [['ROLLOUT', 'STATUS', 'PACKAGES'], ...rollouts.map(([r, v]) => [r, v.status, packagesText(v.packages)])];
  return (
    `node ${body.node}${body.cordonedBy ? ` (cordoned by ${body.cordonedBy})` : ''}\n` +
    table(rows) +
    whyLines(body)
      .map((l) => `why ${l}`)
      .join('') +
    `Temporal UI: ${body.link}\n`
  );
}
