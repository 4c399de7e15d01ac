import type { Command } from 'commander';
import { parseRolloutDocuments, type RolloutSpec } from '../../../model';
import { readManifestFile } from '../../manifest-file';

// `keelson validate -f FILE`: the webhook's checks (and Keelson's) without a cluster. Exit 0 with one summary line
// per rollout, or exit 1 with one `path: message` line per error on stderr.

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

export async function validateFile(file: string): Promise<number> {
  const read = await readManifestFile(file);
  if ('problem' in read) {
    process.stderr.write(`${file}: ${read.problem}\n`);
    return 1;
  }
  const { rollouts, errors, recognized } = parseRolloutDocuments(read.documents);
  if (recognized === 0) {
    process.stderr.write(`${file}: holds no rollout (no Skyhook, NodeWright or DeploymentPolicy document)\n`);
    return 1;
  }
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write(`${e.path}: ${e.message}\n`);
    return 1;
  }
  if (rollouts.length === 0) {
    process.stderr.write(`${file}: holds no rollout (no Skyhook or NodeWright document)\n`);
    return 1;
  }
  for (const r of rollouts) process.stdout.write(`${summary(r)}\n`);
  return 0;
}

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('Check a Skyhook, NodeWright or DeploymentPolicy manifest file without a cluster')
    .requiredOption('-f, --file <file>', 'manifest file (YAML or JSON, one or many documents)')
    .action(async (opts: { file: string }) => {
      process.exitCode = await validateFile(opts.file);
    });
}
