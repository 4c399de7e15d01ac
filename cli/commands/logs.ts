import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { ApiClient } from '../../client/http-client';
import { EXIT, run } from './output';

// `keelson logs`: the log of a package stage's Job pod on a node (through the API, which reads pods/log). The log
// goes to stdout as it is; which pod and container it is, to stderr.

interface LogsOptions {
  rollout: string;
  node: string;
  package: string;
  stage?: string;
  container?: string;
  follow?: boolean;
  tail?: string;
}

export function registerLogs(program: Command): void {
  program
    .command('logs')
    .description("The log of a package stage's Job pod on a node (without --stage: the latest stage that has a pod)")
    .requiredOption('--rollout <rollout>', 'rollout the package belongs to')
    .requiredOption('--node <node>', 'node the stage ran on')
    .requiredOption('--package <package>', 'package name')
    .option('--stage <stage>', 'uninstall, upgrade, apply, config, interrupt or post-interrupt')
    .option('--container <container>', "one of the pod's containers (default: the one that failed, else the stage's)")
    .option('-f, --follow', 'stream the log until the container ends')
    .option('--tail <lines>', 'only the last lines (1-100000)')
    .action((o: LogsOptions) =>
      run(async () => {
        const query = new URLSearchParams({ rollout: o.rollout, package: o.package });
        if (o.stage !== undefined) query.set('stage', o.stage);
        if (o.container !== undefined) query.set('container', o.container);
        if (o.tail !== undefined) query.set('tail', o.tail);
        if (o.follow) query.set('follow', 'true');
        const res = await ApiClient.fromEnv().stream(`/v1/nodes/${encodeURIComponent(o.node)}/logs?${query}`);
        const h = (name: string) => res.headers.get(`x-keelson-${name}`) ?? '';
        const waiting = res.headers.get('x-keelson-waiting');
        process.stderr.write(
          `pod ${h('pod')}, container ${h('container')} (containers: ${h('containers').replace(/,/g, ', ')})` +
            `${waiting !== null ? `: has not started yet (${waiting}), no log` : ''}\n`,
        );
        if (res.body) await pipeline(Readable.fromWeb(res.body), process.stdout, { end: false });
        return EXIT.ok;
      }),
    );
}
