import type { Command } from 'commander';
import { stackDown, stackEnv, stackUp } from '../../deploy/dev/stack';

function positiveInt(name: string, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new Error(`${name}: "${value}" is not allowed; use a whole number from 1 to ${max}`);
    }
    return n;
  };
}

export function registerDev(program: Command): void {
  const dev = program.command('dev').description('The local stack: Temporal dev server and a kwok Kubernetes cluster');

  dev
    .command('up')
    .description('Install missing tools, then start every service of the local stack that is not running')
    .option('--nodes <n>', 'number of fake nodes', positiveInt('--nodes', 1000), 10)
    .option(
      '--custom-resources',
      'also install the Skyhook, NodeWright and DeploymentPolicy definitions and run the controller, so that ' +
        '`kubectl apply -f skyhook.yaml` starts a rollout',
    )
    .action(async (opts: { nodes: number; customResources?: boolean }) => {
      await stackUp({
        nodes: opts.nodes,
        customResources: opts.customResources === true,
        log: (line) => process.stdout.write(`${line}\n`),
      });
      process.stdout.write('local stack is up; `npx keelson dev env` prints its settings\n');
    });

  dev
    .command('down')
    .description('Stop every service of the local stack (its data stays under .keelson/)')
    .action(async () => {
      const stopped = await stackDown();
      process.stdout.write(stopped.length ? `stopped: ${stopped.join(', ')}\n` : 'nothing was running\n');
    });

  dev
    .command('env')
    .description('Print the local stack settings as shell exports: eval "$(npx keelson dev env)"')
    .action(() => {
      for (const [key, value] of Object.entries(stackEnv())) process.stdout.write(`export ${key}=${value}\n`);
    });
}
