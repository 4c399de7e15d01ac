import type { DeploymentPolicy } from './deployment-policy';
import { parseImageReference } from './image';
import type { SkyhookManifest } from './skyhook';
import { formatPath, type ValidationError } from './validation-error';

// Warnings: what a valid manifest says that is likely not what its author meant, or that Keelson accepts without
// acting on it yet. They never refuse a manifest; `keelson validate` prints them.

export type ValidationWarning = ValidationError;

/**
 * The warnings of a valid rollout manifest. `images` holds each package's image as written (the parsed spec keeps the
 * repository alone).
 */
export function rolloutWarnings(
  label: string,
  manifest: SkyhookManifest,
  images: Readonly<Record<string, string>>,
): ValidationWarning[] {
  const spec = manifest.spec;
  const at = (...path: string[]) => formatPath(`${label}.spec`, path);
  const warnings: ValidationWarning[] = [];
  const selector = spec.nodeSelectors;
  if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
    warnings.push({
      path: at('nodeSelectors'),
      message: 'is empty: the rollout targets every node of the cluster; set matchLabels or matchExpressions',
    });
  }
  const budget = spec.interruptionBudget;
  if (spec.deploymentPolicy === '' && budget?.count == null && (budget?.percent ?? 100) === 100) {
    warnings.push({
      path: at('interruptionBudget'),
      message:
        `${budget?.percent === 100 ? 'is percent 100' : 'is not set (100%)'}: every targeted node may be ` +
        'interrupted at once; set a lower percent, a count, or a deploymentPolicy',
    });
  }
  if (spec.sequencing === 'all') {
    warnings.push({
      path: at('sequencing'),
      message: '"all" is accepted but not applied yet: Keelson orders rollouts per node, as "node" does',
    });
  }
  if (Object.keys(spec.packages).length === 0) {
    warnings.push({
      path: at('packages'),
      message: 'is empty: applied to a running rollout, every package is uninstalled from every node',
    });
  }
  for (const pkg of Object.values(spec.packages)) {
    const written = images[pkg.name] ?? pkg.image;
    const image = parseImageReference(written);
    if (!('problem' in image) && image.tag !== undefined && image.tag !== pkg.version) {
      const runs = pkg.containerSHA ? `${pkg.image}@${pkg.containerSHA}` : `${pkg.image}:${pkg.version}`;
      warnings.push({
        path: at('packages', pkg.name, 'image'),
        message: `${JSON.stringify(written)} has tag ${JSON.stringify(image.tag)}, which the version replaces: runs ${runs}`,
      });
    }
    if (pkg.uninstall?.apply) {
      warnings.push({
        path: at('packages', pkg.name, 'uninstall', 'apply'),
        message:
          'is accepted but not applied yet: Keelson uninstalls a package when it is removed from the spec ' +
          '(without its env and configMap)',
      });
    }
  }
  return warnings;
}

/** A policy budget of 100% of a compartment's nodes leaves only the strategy's batch sizes to limit interruptions. */
export function policyWarnings(label: string, policy: DeploymentPolicy): ValidationWarning[] {
  const budgets = [
    { path: ['default', 'budget', 'percent'], budget: policy.spec.default.budget },
    ...policy.spec.compartments.map((c, i) => ({ path: ['compartments', i, 'budget', 'percent'], budget: c.budget })),
  ];
  return budgets
    .filter(({ budget }) => budget.percent === 100)
    .map(({ path }) => ({
      path: formatPath(`${label}.spec`, path),
      message: 'is 100: every node of the compartment may be interrupted at once; set a lower percent or a count',
    }));
}
