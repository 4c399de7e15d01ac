import type { Command } from 'commander';
import { allSucceeded, IgnoreActionSchema, type IgnoreAnswer } from '../../model/node-ignore';
import { ApiClient } from '../../client/http-client';
import { EXIT, printJson, run, table } from './output';
import { packagesText, type PackageView } from './progress';

// `keelson node ...`: a node's state across rollouts, rerun a package, reset a rollout on the node, keep nodes out
// of every rollout or let them in again (through the API).

interface NodeBody {
  node: string;
  link: string;
  rollouts: Record<
    string,
    { status: string; paused: boolean; disabled: boolean; packages: Record<string, PackageView> }
  >;
  cordonedBy: string | null;
}

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
    .command('rerun <node>')
    .description('Run a package again on the node: from its first stage, or only --stage')
    .requiredOption('--rollout <rollout>', 'rollout the package belongs to')
    .requiredOption('--package <package>', 'package name')
    .option('--stage <stage>', 'only this stage (uninstall, upgrade, apply, config, interrupt, post-interrupt)')
    .option('--json', 'print the API answer as JSON')
    .action((name: string, o: { rollout: string; package: string; stage?: string; json?: boolean }) =>
      run(async () => {
        const { body } = await api().request<object>('POST', path(name, '/rerun'), {
          json: { rollout: o.rollout, package: o.package, ...(o.stage !== undefined && { stage: o.stage }) },
        });
        if (o.json) printJson(body);
        else
          process.stdout.write(
            `node ${name}: ${o.package} of ${o.rollout} runs again${o.stage ? ` from ${o.stage}` : ''}\n`,
          );
        return EXIT.ok;
      }),
    );

  node
    .command('reset <node>')
    .description("Forget a rollout's package entries on the node; its packages run from the start")
    .requiredOption('--rollout <rollout>', 'rollout to reset on the node')
    .option('--json', 'print the API answer as JSON')
    .action((name: string, o: { rollout: string; json?: boolean }) =>
      run(async () => {
        const { body } = await api().request<object>('POST', path(name, '/reset'), { json: { rollout: o.rollout } });
        if (o.json) printJson(body);
        else process.stdout.write(`node ${name}: rollout ${o.rollout} reset\n`);
        return EXIT.ok;
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
