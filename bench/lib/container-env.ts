import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot } from '../../deploy/dev/paths';
import { cachedWorkflowsFor } from '../../workers/sizing';

// `--worker-memory-mib`: the worker as the chart runs it in a container of that limit. The process runs in a memory
// cgroup of the limit (bench/lib/memory-cgroup.ts), so Node and the kernel see what a container gives them; the
// settings the chart passes come from here.

const chartValuesPath = path.join(projectRoot, 'deploy', 'helm', 'keelson', 'values.yaml');
const HEAP_LIMIT = /^--max[-_]old[-_]space[-_]size=/;

/** The worker's V8 options in the chart's values (`worker.env.NODE_OPTIONS`), less the heap limit the bench sizes. */
export function chartNodeOptions(valuesYaml: string = fs.readFileSync(chartValuesPath, 'utf8')): string[] {
  const values = YAML.parse(valuesYaml) as { worker?: { env?: { NODE_OPTIONS?: unknown } } } | null;
  const options = values?.worker?.env?.NODE_OPTIONS;
  if (typeof options !== 'string') throw new Error(`${chartValuesPath}: worker.env.NODE_OPTIONS is not a string`);
  return options.split(/\s+/).filter((o) => o !== '' && !HEAP_LIMIT.test(o));
}

export interface WorkerContainer {
  limitBytes: number;
  /** What the chart sets for that limit: V8's heap at three quarters of it, and the workflow cache sized from it. */
  env: Record<string, string>;
}

/**
 * The container of `--worker-memory-mib` (none: the worker runs on the whole machine). The cache is passed, not read
 * by the worker from its cgroup: outside a cgroup namespace the worker's reading (workers/sizing.ts) finds the host's.
 */
export function workerContainer(value: string, nodeOptions?: string[]): WorkerContainer | undefined {
  if (value === 'none') return undefined;
  const mib = Number(value);
  if (!Number.isInteger(mib) || mib < 256)
    throw new Error(`--worker-memory-mib takes a whole number of MiB from 256 up, or none, got ${value}`);
  const heapMiB = Math.floor(mib * 0.75);
  const cached = cachedWorkflowsFor(mib * 2 ** 20, heapMiB * 2 ** 20);
  return {
    limitBytes: mib * 2 ** 20,
    env: {
      NODE_OPTIONS: [...(nodeOptions ?? chartNodeOptions()), `--max-old-space-size=${heapMiB}`].join(' '),
      KEELSON_MAX_CACHED_WORKFLOWS: String(cached),
    },
  };
}
