import { Command, CommanderError } from 'commander';
import { registerDev } from './commands/dev';
import { registerLogs } from './commands/logs';
import { registerNode } from './commands/node';
import { registerDeploymentPolicy } from './commands/reset-batches';
import { registerRollout } from './commands/rollout';
import { registerValidate } from './commands/validate';

// Exit codes (docs/cli.md): 0 success, 1 the input or the rollout is bad (validation errors, failed rollout, a wait
// that timed out, a confirmation answered no), 2 usage errors (commander's own, and a destructive command without
// --yes when stdin is not a terminal), 3 a service could not be reached (the API, or Temporal behind it), 4 not found
// (rollout, node, package), 5 conflict (a rollout of that name runs with a different spec: use `rollout apply`),
// 6 unauthorized (KEELSON_API_TOKEN missing or wrong).
// The rollout, node and deployment-policy commands talk to the HTTP API (KEELSON_API_URL, default
// http://127.0.0.1:7480, and KEELSON_API_TOKEN), so auth and validation live in one place.
const program = new Command()
  .name('keelson')
  .description('Roll host-level packages across Kubernetes fleets as durable Temporal workflows')
  .showHelpAfterError()
  .exitOverride();

registerDev(program);
registerValidate(program);
registerRollout(program);
registerNode(program);
registerDeploymentPolicy(program);
registerLogs(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  process.stderr.write(`keelson: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(process.exitCode && process.exitCode !== 0 ? process.exitCode : 1);
});
