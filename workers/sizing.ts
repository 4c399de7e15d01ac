import { readFileSync } from 'node:fs';
import os from 'node:os';
import v8 from 'node:v8';

// The worker's workflow cache sized from the memory it may use. The SDK sizes it from V8's heap limit alone, about
// 0.6 workflows a MiB past 200 MiB: 2,310 workflows on a 24 GiB machine outside a container, where nothing is ever
// evicted. Here it is sized from the smaller of three quarters of the container's memory limit and the heap limit, at
// what a workflow was measured to take (bench/README.md).

const MiB = 1024 * 1024;
/** What the worker uses with an empty cache (Node, the SDK's core, watch caches), measured at about 300 MiB. */
const BASE_BYTES = 300 * MiB;
/**
 * A cached workflow with its state: about 1 MiB measured for node workflows, which no longer instantiate the rollout's
 * schemas (bench/README.md, "N = 100 side by side, N = 1,000, and node workflows without the schemas (2026-12-05)");
 * 1.5 MiB leaves room for rollout workflows.
 */
const PER_WORKFLOW_BYTES = 1.5 * MiB;
const MIN_CACHED = 50;
const MAX_CACHED = 2_000;

/** Reads a file's text, or undefined when it cannot be read (no cgroup of that version). */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The memory limit of this process's container (cgroup v2, then v1), or the machine's memory when none is lower. */
export function memoryLimitBytes(read: (path: string) => string | undefined = readText): number {
  const machine = os.totalmem();
  for (const path of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    const value = Number(read(path));
    if (Number.isFinite(value) && value > 0 && value < machine) return value;
  }
  return machine;
}

/**
 * Workflows to keep cached: 1.5 MiB each in the smaller of three quarters of the memory limit and V8's heap limit
 * (`--max-old-space-size`), less 300 MiB, from 50 (above the 40 workflow tasks run at once) to 2000.
 */
export function cachedWorkflowsFor(limitBytes: number, heapBytes = v8.getHeapStatistics().heap_size_limit): number {
  const fit = Math.floor((Math.min(limitBytes * 0.75, heapBytes) - BASE_BYTES) / PER_WORKFLOW_BYTES);
  return Math.min(MAX_CACHED, Math.max(MIN_CACHED, fit));
}
