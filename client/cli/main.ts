import { Command } from 'commander';
import { registerDev } from './commands/dev';
import { registerValidate } from './commands/validate';

// Exit codes: 0 success, 1 the input or the rollout is bad (validation errors, failed rollout),
// 2 usage errors (commander's own), 3 a service could not be reached.
const program = new Command()
  .name('keelson')
  .description('Roll host-level packages across Kubernetes fleets as durable Temporal workflows')
  .showHelpAfterError();

registerDev(program);
registerValidate(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`keelson: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(process.exitCode && process.exitCode !== 0 ? process.exitCode : 1);
});
