import type { Command } from 'commander';
import { allSucceeded, IgnoreActionSchema, type IgnoreAnswer } from '../../model/node-ignore';
import { ApiClient } from '../../client/http-client';
import type { Status } from '../../model';
import { needsNodeList, selectNodes } from '../../model/node-selection';
import { confirm, NOT_CONFIRMED_EXIT } from './confirm';
import { eachNode } from './each-node';
import { EXIT, printJson, run, table } from './output';
import { packagesText, type PackageView } from './progress';

// `keelson node ...`: a node's state across rollouts, rerun a package, reset a rollout on the node, keep nodes out
// of every rollout or let them in again (through the API). Rerun and reset take several nodes, `*` patterns over the
// rollout's nodes, or its erroring nodes.

interface NodeBody {
  node: string;
  link: string;
  rollouts: Record<
    string,
    { status: string; paused: boolean; disabled: boolean; packages: Record<string, PackageView> }
  >;
  cordonedBy: string | null;
}

interface Selecting {
  rollout: string;
  allErroring?: boolean;
}

/** The nodes asked for, or the exit code once the reason nothing is selected has been printed. */
async function selected(client: ApiClient, args: string[], o: Selecting): Promise<string[] | number> {
  const request = { args, allErroring: o.allErroring === true };
  if (args.length === 0 && !request.allErroring) {
    process.stderr.write('keelson: give at least one node name or pattern, or --all-erroring\n');
    return EXIT.usage;
  }
  let listed: { name: string; status: Status }[] = [];
  if (needsNodeList(request)) {
    const { body } = await client.request<{ nodes: Record<string, { status: Status }> }>(
      'GET',
      `/v1/rollouts/${encodeURIComponent(o.rollout)}`,
    );
    listed = Object.entries(body.nodes).map(([name, v]) => ({ name, status: v.status }));
  }
  const selection = selectNodes(request, o.rollout, listed);
  for (const e of selection.errors) process.stderr.write(`${e}\n`);
  if (selection.errors.length > 0) return EXIT.failed;
  if (selection.nodes.length === 0) process.stdout.write(`no node of rollout ${o.rollout} is erroring; nothing done\n`);
  return selection.nodes;
}

const several = (nodes: string[]) =>
  nodes.length === 1 ? `node ${nodes[0]}` : `${nodes.length} nodes (${nodes.join(', ')})`;

export function registerNode(program: Command): void {
  const node = program.command('node').description("Read and repair a node's packages (through the Keelson API)");
  const api = () => ApiClient.fromEnv();
  const path = (n: string, tail = '') => `/v1/nodes/${encodeURIComponent(n)}${tail}`;

  node
    .command('status <node>')
    .description('Every rollout on the node: status and package entries')
    .option('--json', 'print the state as JSON')
    .action((name: string, o: { json?: boolean }) =>
      run(async () => {
        const { body } = await api().request<NodeBody>('GET', path(name));
        if (o.json) printJson(body);
        else {
          const rows = Object.entries(body.rollouts).map(([r, v]) => [r, v.status, packagesText(v.packages)]);
          process.stdout.write(
            `node ${body.node}${body.cordonedBy ? ` (cordoned by ${body.cordonedBy})` : ''}\n` +
              table([['ROLLOUT', 'STATUS', 'PACKAGES'], ...rows]) +
              `Temporal UI: ${body.link}\n`,
          );
        }
        return EXIT.ok;
      }),
    );

  node
    .command('rerun [nodes...]')
    .description('Run a package again on nodes (names or `*` patterns): from its first stage, or only --stage')
    .requiredOption('--rollout <rollout>', 'rollout the package belongs to')
    .requiredOption('--package <package>', 'package name')
    .option('--stage <stage>', 'only this stage (uninstall, upgrade, apply, config, interrupt, post-interrupt)')
    .option('--all-erroring', 'also every node of the rollout whose status is erroring')
    .option('--json', 'print the API answer as JSON (a list of them for several nodes)')
    .action((args: string[], o: Selecting & { package: string; stage?: string; json?: boolean }) =>
      run(async () => {
        const client = api();
        const nodes = await selected(client, args, o);
        if (typeof nodes === 'number') return nodes;
        const json = { rollout: o.rollout, package: o.package, ...(o.stage !== undefined && { stage: o.stage }) };
        return eachNode(nodes, {
          act: async (n) => (await client.request<object>('POST', path(n, '/rerun'), { json })).body,
          done: (n) => `node ${n}: ${o.package} of ${o.rollout} runs again${o.stage ? ` from ${o.stage}` : ''}`,
          json: o.json === true,
        });
      }),
    );

  node
    .command('reset [nodes...]')
    .description("Forget a rollout's package entries on nodes (names or `*` patterns); its packages run from the start")
    .requiredOption('--rollout <rollout>', 'rollout to reset on the nodes')
    .option('--all-erroring', 'also every node of the rollout whose status is erroring')
    .option('-y, --yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .option('--json', 'print the API answer as JSON (a list of them for several nodes)')
    .action((args: string[], o: Selecting & { yes?: boolean; json?: boolean }) =>
      run(async () => {
        const client = api();
        const nodes = await selected(client, args, o);
        if (typeof nodes === 'number') return nodes;
        if (nodes.length === 0) return EXIT.ok;
        const answer = await confirm(`reset rollout ${o.rollout} on ${several(nodes)}`, o.yes);
        if (answer !== 'yes') return NOT_CONFIRMED_EXIT[answer];
        return eachNode(nodes, {
          act: async (n) =>
            (await client.request<object>('POST', path(n, '/reset'), { json: { rollout: o.rollout } })).body,
          done: (n) => `node ${n}: rollout ${o.rollout} reset`,
          json: o.json === true,
        });
      }),
    );

  for (const action of IgnoreActionSchema.options) {
    node
      .command(`${action} [nodes...]`)
      .description(
        action === 'ignore'
          ? 'Set the ignore label on the nodes: no rollout admits them (at its next listing)'
          : 'Remove the ignore label from the nodes: rollouts admit them again',
      )
      .option('--selector <selector>', 'also every node this label selector matches (e.g. pool=gpu)')
      .option('--json', 'print the API answer as JSON')
      .action((nodes: string[], o: { selector?: string; json?: boolean }) =>
        run(async () => {
          const { body } = await api().request<IgnoreAnswer>('POST', `/v1/nodes/${action}`, {
            json: { nodes, ...(o.selector !== undefined && { selector: o.selector }) },
          });
          if (o.json) printJson(body);
          for (const r of o.json ? [] : body.results) {
            if (r.error === undefined) process.stdout.write(`node ${r.node}: ${r.outcome}\n`);
            else process.stderr.write(`node ${r.node}: ${r.outcome}: ${r.error}\n`);
          }
          if (allSucceeded(body.results)) return EXIT.ok;
          return body.results.every((r) => r.outcome !== 'failed') ? EXIT.notFound : EXIT.failed;
        }),
      );
  }
}
