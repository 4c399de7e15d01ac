import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot } from '../../deploy/dev/paths';
import { cachedWorkflowsFor } from '../../workers/sizing';

// `--worker-memory-mib`: the bench runs the worker as the chart would in a container of that size, the chart's own
// V8 options included, so what it measures is what a deployment gets.

/** The worker's V8 options in the chart (deploy/helm/keelson/values.yaml), whose heap limit the bench sizes itself. */
export function chartNodeOptions(): string[] {
  const values = YAML.parse(
    fs.readFileSync(path.join(projectRoot, 'deploy', 'helm', 'keelson', 'values.yaml'), 'utf8'),
  );
  const options = (values as { worker?: { env?: { NODE_OPTIONS?: unknown } } }).worker?.env?.NODE_OPTIONS;
  if (typeof options !== 'string')
    throw new Error('deploy/helm/keelson/values.yaml: worker.env.NODE_OPTIONS is not set');
  return options.split(/\s+/).filter((o) => o !== '' && !o.startsWith('--max-old-space-size='));
}

/**
 * The worker as in a container with this memory limit: the chart's V8 options with the heap at three quarters of it,
 * as the chart sets it (deploy/helm/keelson/values.yaml), and the workflow cache the worker would size from the limit
 * (workers/sizing.ts), which a process outside a container cannot read from its cgroup. The limit itself is not
 * enforced: the bench reports the peak RSS against it.
 */
export function containerEnv(value: string): Record<string, string> {
  if (value === 'none') return {};
  const mib = Number(value);
  if (!Number.isInteger(mib) || mib < 256)
    throw new Error(`--worker-memory-mib takes a whole number of MiB from 256 up, or none, got ${value}`);
  const heapMiB = Math.floor(mib * 0.75);
  const cached = cachedWorkflowsFor(mib * 2 ** 20, heapMiB * 2 ** 20);
  const nodeOptions = [`--max-old-space-size=${heapMiB}`, ...chartNodeOptions()].join(' ');
  return { NODE_OPTIONS: nodeOptions, KEELSON_MAX_CACHED_WORKFLOWS: String(cached) };
}
