import type { ApiClient } from '../../client/http-client';
import type { StatusBody } from './progress';
import type { NodeBody } from './views';

// Why a rollout's erroring nodes are erroring: the rollout's status carries each node's progress only, so the reason
// (the package entry's lastError) is read from the nodes themselves, for the first few erroring nodes.

export const ERRORING_NODES_EXPLAINED = 5;
/** The most lines one node gets; identical reasons (an interrupt failing every package it holds) count once. */
const LINES_PER_NODE = 3;
const REASON_CHARS = 160;

/** Node names in the order every status view lists them. */
export const byName = (a: string, b: string) => a.localeCompare(b);

/** Whether a node of the status needs a reason: erroring itself, or (paused, disabled) holding an erroring package. */
export function holdsError(v: StatusBody['nodes'][string]): boolean {
  return v.status === 'erroring' || Object.values(v.packages).some((p) => p.state === 'erroring');
}

/** `why <node> <rollout>/<package> (<stage>): <reason>` lines for the first erroring nodes, and how many were left. */
export async function explainErroring(api: ApiClient, s: StatusBody): Promise<string> {
  const erroring = Object.entries(s.nodes)
    .filter(([, v]) => holdsError(v))
    .map(([n]) => n)
    .sort(byName);
  const explained = await Promise.all(
    erroring.slice(0, ERRORING_NODES_EXPLAINED).map(async (node) => {
      try {
        const { body } = await api.request<NodeBody>('GET', `/v1/nodes/${encodeURIComponent(node)}`);
        const lines = whyLines(body, s.name);
        return lines.length > 0
          ? lines.map((l) => `why ${node} ${l}`)
          : [`why ${node}: erroring, no error recorded (keelson node status ${node})\n`];
      } catch (err) {
        return [`why ${node}: its status could not be read (${err instanceof Error ? err.message : String(err)})\n`];
      }
    }),
  );
  const more = erroring.length - ERRORING_NODES_EXPLAINED;
  const tail = more > 0 ? [`... and ${more} more erroring (keelson node status NODE says why)\n`] : [];
  return [...explained.flat(), ...tail].join('');
}

/** Control characters but tab and newline: escape sequences from a pod's log would drive the terminal. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Control characters shown as `\xNN`. */
const visible = (text: string) => text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

/**
 * The reason of an error, readable on one line: a stage's lastError is `<reason>: <log tail>`, whose first lines are
 * the oldest kept, so it is the reason with the tail's last non-empty line; cut to REASON_CHARS characters.
 */
export function reasonOf(lastError: string): string {
  const colon = lastError.indexOf(': ');
  const [head, rest] = colon < 0 ? ['', lastError] : [lastError.slice(0, colon), lastError.slice(colon + 2)];
  const last = rest
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .pop();
  const text = visible([head, last].filter(Boolean).join(': ').replace(/\t/g, ' '));
  const chars = Array.from(text);
  return chars.length > REASON_CHARS ? `${chars.slice(0, REASON_CHARS - 3).join('')}...` : text;
}

/** Why each erroring package of a node is: `<rollout>/<package> (<stage>): <reason>`, at most a few per node. */
export function whyLines(body: NodeBody, rollout?: string): string[] {
  const lines = Object.entries(body.rollouts)
    .filter(([r]) => rollout === undefined || r === rollout)
    .sort(([a], [b]) => byName(a, b))
    .flatMap(([r, v]) =>
      Object.entries(v.packages)
        .sort(([a], [b]) => byName(a, b))
        .filter(([, p]) => p.state === 'erroring')
        .map(([name, p]) => ({
          who: `${r}/${name} (${p.stage})`,
          reason: p.lastError ? reasonOf(p.lastError) : '(no error recorded)',
        })),
    );
  const seen = new Map<string, string[]>();
  for (const { who, reason } of lines) seen.set(reason, [...(seen.get(reason) ?? []), who]);
  const merged = [...seen].map(([reason, whos]) => `${whos.join(', ')}: ${reason}\n`);
  const more = merged.length - LINES_PER_NODE;
  return [...merged.slice(0, LINES_PER_NODE), ...(more > 0 ? [`... ${more} more erroring package(s)\n`] : [])];
}
