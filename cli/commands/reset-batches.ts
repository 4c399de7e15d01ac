import { Option, type Command } from 'commander';
import { ApiClient } from '../../client/http-client';
import type { BatchResetResult } from '../../workflows/messages';
import { confirm, NOT_CONFIRMED_EXIT } from './confirm';
import { EXIT, printJson, run } from './output';
import { actor } from './who';

// The manual batch reset (§2.2.6): `keelson rollout reset-batches NAME`, and `keelson deployment-policy reset NAME`
// (alias `dp reset`) as a Skyhook user types it. Every compartment starts again from batch 1; nodes in flight go on.

/** Gives `command` the batch reset's arguments, options and action. */
export function defineResetBatches(command: Command): Command {
  return command
    .argument('<name>', 'rollout')
    .description(
      "Reset a rollout's batches: every compartment starts again from batch 1, a halted one included; nodes in " +
        'flight go on',
    )
    .requiredOption('--reason <text>', 'why (kept in the workflow history, shown in the Temporal UI)')
    .option('-y, --yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .addOption(new Option('--confirm', "Skyhook's name for --yes").hideHelp())
    .option('--json', 'print the API answer as JSON')
    .action((name: string, o: { reason: string; yes?: boolean; confirm?: boolean; json?: boolean }) =>
      run(async () => {
        const answer = await confirm(`reset the batches of rollout ${name}`, o.yes || o.confirm);
        if (answer !== 'yes') return NOT_CONFIRMED_EXIT[answer];
        const { body } = await ApiClient.fromEnv().request<BatchResetResult>(
          'POST',
          `/v1/rollouts/${encodeURIComponent(name)}/reset-batches`,
          { json: { reason: o.reason, actor: actor() } },
        );
        if (o.json) printJson(body);
        else {
          const lines = Object.entries(body.compartments).map(
            ([c, s]) => `  ${c}: batch ${s.currentBatch}, ${s.completedNodes} complete, ${s.failedNodes} failed`,
          );
          process.stdout.write(
            `rollout ${name}: batches reset (${o.reason})\n${lines.join('\n')}${lines.length ? '\n' : ''}`,
          );
        }
        return EXIT.ok;
      }),
    );
}

export function registerDeploymentPolicy(program: Command): void {
  const dp = program
    .command('deployment-policy')
    .alias('dp')
    .description("Skyhook's deployment-policy commands (through the Keelson API)");
  defineResetBatches(dp.command('reset'));
}
