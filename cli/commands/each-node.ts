import { ApiError } from '../../client/http-client';
import { exitCodeOf, printJson, reportError } from './output';

// One API call per node, for `node rerun` and `node reset` on several nodes: every node is tried, each outcome is
// reported, and the exit code is the first failure's (0 when all succeeded).

export interface EachNode {
  act: (node: string) => Promise<object>;
  /** The line printed for a node that succeeded. */
  done: (node: string) => string;
  /** Print the API's answers instead: the answer for one node, a list of `{node, ok, ...}` for several. */
  json: boolean;
}

type Outcome = { node: string; ok: boolean; [field: string]: unknown };

export async function eachNode(nodes: readonly string[], e: EachNode): Promise<number> {
  // One node: as before several were possible, the answer or the error as it comes.
  if (nodes.length === 1) {
    try {
      const body = await e.act(nodes[0]!);
      if (e.json) printJson(body);
      else process.stdout.write(`${e.done(nodes[0]!)}\n`);
      return 0;
    } catch (err) {
      return reportError(err);
    }
  }
  const outcomes: Outcome[] = [];
  let code = 0;
  for (const node of nodes) {
    try {
      const body = await e.act(node);
      outcomes.push({ node, ok: true, ...body });
      if (!e.json) process.stdout.write(`${e.done(node)}\n`);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      code ||= exitCodeOf(err);
      outcomes.push({ node, ok: false, status: err.status, error: err.body.error, message: err.message });
      const details = err.body.errors?.map((f) => `${f.path}: ${f.message}`) ?? [err.message];
      for (const d of details) process.stderr.write(`node ${node}: failed: ${d}\n`);
    }
  }
  if (e.json) printJson(outcomes);
  const failed = outcomes.filter((o) => !o.ok).length;
  if (failed > 0) process.stderr.write(`keelson: ${failed} of ${nodes.length} nodes failed\n`);
  return code;
}
