#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { apiClientFor } from '../client/api-target';
import type { TargetFlags } from '../model/cli-config';
import { registerConfig } from './commands/config';
import { registerDev } from './commands/dev';
import { registerLogs } from './commands/logs';
import { registerNode } from './commands/node';
import { registerDeploymentPolicy } from './commands/reset-batches';
import { registerRollout } from './commands/rollout';
import { registerValidate } from './commands/validate';
import { printVersions } from './commands/version';

// Exit codes (docs/cli.md): 0 success, 1 the input or the rollout is bad (validation errors, failed rollout, a wait
// that timed out, a confirmation answered no), 2 usage errors (commander's own, and a destructive command without
// --yes when stdin is not a terminal), 3 a service could not be reached (the API, or Temporal behind it), 4 not found
// (rollout, node, package), 5 conflict (a rollout of that name runs with a different spec: use `rollout apply`),
// 6 unauthorized (the token missing or wrong).
// The rollout, node, logs and deployment-policy commands talk to the HTTP API, so auth and validation live in one
// place; which API and token: --api-url and --token, else KEELSON_API_URL and KEELSON_API_TOKEN, else the context
// of the config file (docs/cli.md, "Contexts").
const program = new Command()
  .name('keelson')
  .description('Roll host-level packages across Kubernetes fleets as durable Temporal workflows')
  .option('-V, --version', "print the CLI's version, and the API's when it answers")
  .option('--api-url <url>', 'the Keelson API (over KEELSON_API_URL and the context)')
  .option('--token <token>', 'bearer token for the API (over KEELSON_API_TOKEN and the context)')
  .option('--context <name>', 'a context of the config file other than the current one (over KEELSON_CONTEXT)')
  .showHelpAfterError()
  .exitOverride()
  .action(async (o: { version?: boolean }, command: Command) => {
    if (command.args.length > 0) command.error(`error: unknown command '${command.args[0]}'`);
    if (!o.version) command.help({ error: true });
    process.exitCode = await printVersions(() => apiClientFor(program.opts<TargetFlags>(), process.env, 5_000));
  });
program.allowExcessArguments();

const api = () => apiClientFor(program.opts<TargetFlags>());
registerDev(program);
registerValidate(program);
registerRollout(program, api);
registerNode(program, api);
registerDeploymentPolicy(program, api);
registerLogs(program, api);
registerConfig(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  process.stderr.write(`keelson: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(process.exitCode && process.exitCode !== 0 ? process.exitCode : 1);
});
