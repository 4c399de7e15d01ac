import type { RolloutChange } from '../../workflows/messages';
import { ApiError, type ApiClient } from '../../client/http-client';
import { EXIT, table } from './output';
import { byName, explainErroring, holdsError } from './why';

// Live progress of a rollout (`rollout start --wait`, `rollout status --watch`): on a terminal a progress bar and a
// per-node table redrawn in place; otherwise one plain line per change. Ends when the rollout settles.

export interface PackageView {
  version: string;
  stage: string;
  state: string;
  restarts: number;
}

export interface StatusBody {
  name: string;
  status: string;
  generation: number;
  paused: boolean;
  disabled: boolean;
  nodes: Record<string, { status: string; packages: Record<string, PackageView> }>;
  completeNodes: string;
  startedBy?: string;
  lastChange?: RolloutChange;
  links?: { rollout: string };
}

export function packagesText(packages: Record<string, PackageView>): string {
  return (
    Object.entries(packages)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([n, p]) => `${n}@${p.version} ${p.stage} ${p.state}${p.restarts ? ` (${p.restarts} restarts)` : ''}`)
      .join(', ') || '-'
  );
}

export function summaryLine(s: StatusBody): string {
  const flags = [s.paused && 'paused', s.disabled && 'disabled'].filter(Boolean).join(', ');
  return `rollout ${s.name}: ${s.status}, ${s.completeNodes} nodes complete, generation ${s.generation}${flags ? ` (${flags})` : ''}`;
}

/** Who started the rollout and who changed it last (API token names); empty when neither is known. */
export function auditLine(s: StatusBody): string {
  const c = s.lastChange;
  const parts = [
    s.startedBy && `started by ${s.startedBy}`,
    c &&
      `last change: ${c.action} by ${c.actor}${c.onBehalfOf ? ` for ${c.onBehalfOf}` : ''}` +
        `${c.reason ? ` (${c.reason})` : ''}, generation ${c.generation}`,
  ].filter(Boolean);
  return parts.length > 0 ? `${parts.join('; ')}\n` : '';
}

/** Above this many nodes, a status shows counts and the nodes that need a look, not every node (`-o wide` does). */
export const NODE_ROWS_SHOWN = 20;

/** The statuses of a node that needs a look: work under way, stopped on an error or a block, or not known. */
const ACTIVE = new Set(['in_progress', 'erroring', 'blocked', 'unknown']);

/** A node to list among many: by its status, or (its rollout paused or disabled) by a package running or erroring. */
const needsALook = (v: StatusBody['nodes'][string]) =>
  ACTIVE.has(v.status) || holdsError(v) || Object.values(v.packages).some((p) => p.state === 'in_progress');

/**
 * One row a node. With more than NODE_ROWS_SHOWN nodes, a line of counts per status, then only the nodes that need a
 * look (those holding an error first, at most NODE_ROWS_SHOWN), so hundreds of nodes stay readable.
 */
export function nodeTable(s: StatusBody): string {
  const nodes = Object.entries(s.nodes).sort(([a], [b]) => byName(a, b));
  const head = ['NODE', 'STATUS', 'PACKAGES'];
  const row = ([n, v]: (typeof nodes)[number]) => [n, v.status, packagesText(v.packages)];
  if (nodes.length <= NODE_ROWS_SHOWN) return table([head, ...nodes.map(row)]);
  const counts = new Map<string, number>();
  for (const [, v] of nodes) counts.set(v.status, (counts.get(v.status) ?? 0) + 1);
  const countLine = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([st, n]) => `${st} ${n}`);
  const active = nodes
    .filter(([, v]) => needsALook(v))
    .sort(([, a], [, b]) => Number(holdsError(b)) - Number(holdsError(a)));
  const shown = active.slice(0, NODE_ROWS_SHOWN);
  const more = active.length - shown.length;
  return (
    `${nodes.length} nodes: ${countLine.join(', ')}\n` +
    (shown.length > 0 ? table([head, ...shown.map(row)]) : '') +
    (more > 0 ? `... and ${more} more to look at (-o wide lists every node)\n` : '')
  );
}

export function progressBar(s: StatusBody, width = 30): string {
  const [done, total] = s.completeNodes.split('/').map(Number) as [number, number];
  const filled = total === 0 ? width : Math.round((done / total) * width);
  const pct = total === 0 ? 100 : Math.floor((done * 100) / total);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(pct).padStart(3)}% ${done}/${total} nodes`;
}

/** complete, or erroring once no node has work left; undefined while the rollout still moves. */
export function settled(s: StatusBody): 'complete' | 'erroring' | undefined {
  if (s.status === 'complete') return 'complete';
  const statuses = Object.values(s.nodes).map((n) => n.status);
  const still = statuses.some((x) => x !== 'complete' && x !== 'erroring' && x !== 'blocked');
  if (s.status === 'erroring' && !still) return 'erroring';
  return undefined;
}

export interface FollowOptions {
  tty: boolean;
  intervalMs: number;
  timeoutMs: number;
  out?: NodeJS.WritableStream;
}

/** The API or Temporal behind it not answering for a while: a long wait rides it out rather than giving up. */
const isOutage = (err: unknown) => err instanceof ApiError && (err.status === 0 || err.status === 503);

/**
 * Polls the rollout's status until it settles: 0 complete, 1 erroring or timed out. An outage (API unreachable, 503)
 * is reported on stderr and polled through until the deadline; other API errors are thrown.
 */
export async function follow(api: ApiClient, name: string, opts: FollowOptions): Promise<number> {
  const out = opts.out ?? process.stdout;
  const deadline = Date.now() + opts.timeoutMs;
  let frameLines = 0;
  let lastSummary = '';
  let outage = false;
  const lastNode = new Map<string, string>();
  for (;;) {
    let s: StatusBody;
    try {
      s = (await api.request<StatusBody>('GET', `/v1/rollouts/${encodeURIComponent(name)}`)).body;
    } catch (err) {
      if (!isOutage(err) || Date.now() > deadline) throw err;
      if (!outage) process.stderr.write(`keelson: ${(err as Error).message}; still waiting\n`);
      outage = true;
      await new Promise((r) => setTimeout(r, opts.intervalMs));
      continue;
    }
    if (outage) process.stderr.write('keelson: reachable again\n');
    outage = false;
    if (opts.tty) {
      const frame = `${summaryLine(s)}\n${progressBar(s)}\n${nodeTable(s)}`;
      // Move up over the previous frame and clear it, then draw the new one.
      out.write(`${frameLines > 0 ? `\x1b[${frameLines}F\x1b[J` : ''}${frame}`);
      frameLines = frame.split('\n').length - 1;
    } else {
      const summary = summaryLine(s);
      if (summary !== lastSummary) out.write(`${summary}\n`);
      lastSummary = summary;
      for (const [node, v] of Object.entries(s.nodes).sort(([a], [b]) => a.localeCompare(b))) {
        const line = `${node}: ${v.status} ${packagesText(v.packages)}`;
        if (lastNode.get(node) !== line) out.write(`  ${line}\n`);
        lastNode.set(node, line);
      }
    }
    const end = settled(s);
    if (end === 'complete') return EXIT.ok;
    if (end === 'erroring') {
      out.write(await explainErroring(api, s));
      process.stderr.write(
        `keelson: rollout ${name} is erroring on ${Object.values(s.nodes).filter((n) => n.status === 'erroring').length} node(s)\n`,
      );
      return EXIT.failed;
    }
    if (Date.now() > deadline) {
      process.stderr.write(
        `keelson: rollout ${name} did not settle within ${Math.round(opts.timeoutMs / 1000)}s (it goes on)\n`,
      );
      return EXIT.failed;
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs));
  }
}
