import type { Command } from 'commander';
import type { RolloutSpec } from '../../model';
import { collectFiles, FILE_FLAGS, FILE_HELP, loadManifests, printFindings } from './manifests';
import { printJson } from './output';

// `keelson validate -f PATH...`: the webhook's checks (and Keelson's) without a cluster. Exit 0 with one summary line
// per rollout, or exit 1 with every error at once, one `path: message` line each on stderr; warnings never fail.
// `--json` prints all of it as one object on stdout, for CI.

function summary(rollout: RolloutSpec): string {
  const packages = Object.values(rollout.spec.packages)
    .map((p) => `${p.name}@${p.version}`)
    .sort();
  const budget = rollout.spec.interruptionBudget;
  const pacing = rollout.policy
    ? `policy ${rollout.policy.name}`
    : budget?.count != null
      ? `interruptionBudget count ${budget.count}`
      : `interruptionBudget percent ${budget?.percent ?? 100}`;
  const flags = [rollout.paused && 'paused', rollout.disabled && 'disabled'].filter(Boolean);
  return (
    `${rollout.kind}/${rollout.name}: valid, ${packages.length} package${packages.length === 1 ? '' : 's'}` +
    `${packages.length ? ` (${packages.join(', ')})` : ''}, priority ${rollout.spec.priority}, ${pacing}` +
    (flags.length ? `, ${flags.join(', ')}` : '')
  );
}

async function validate(files: readonly string[], json: boolean): Promise<number> {
  const { rollouts, errors, warnings } = await loadManifests(files);
  const valid = errors.length === 0;
  if (json) {
    printJson({
      valid,
      rollouts: valid ? rollouts.map((r) => ({ kind: r.kind, name: r.name, summary: summary(r) })) : [],
      errors,
      warnings,
    });
  } else {
    printFindings({ errors, warnings });
    if (valid) for (const r of rollouts) process.stdout.write(`${summary(r)}\n`);
  }
  return valid ? 0 : 1;
}

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('Check Skyhook, NodeWright and DeploymentPolicy manifests without a cluster')
    .requiredOption(FILE_FLAGS, FILE_HELP, collectFiles)
    .option('--json', 'print {valid, rollouts, errors, warnings} as JSON on stdout')
    .action(async (opts: { file: string[]; json?: boolean }) => {
      process.exitCode = await validate(opts.file, opts.json === true);
    });
}
