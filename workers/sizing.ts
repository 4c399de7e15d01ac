import { readFileSync } from 'node:fs';
import os from 'node:os';

// The worker's workflow cache sized from the memory it may use. The SDK sizes it from V8's heap limit, which follows
// the machine's memory, not the container's: 2,310 workflows on a 24 GiB machine, so nothing is ever evicted and a
// worker in a 1 GiB container grows past its limit at a few hundred nodes.

const MiB = 1024 * 1024;
/** What the worker uses with an empty cache (Node, the SDK's core, watch caches), measured at about 300 MiB. */
const BASE_BYTES = 300 * MiB;
/** A cached node or rollout workflow with its state and history, measured at 2-4 MiB (bench/README.md). */
const PER_WORKFLOW_BYTES = 3 * MiB;
const MIN_CACHED = 20;
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

/** Workflows to keep cached within three quarters of `limitBytes`, the rest left to V8's garbage and the SDK. */
export function cachedWorkflowsFor(limitBytes: number): number {
  const fit = Math.floor((limitBytes * 0.75 - BASE_BYTES) / PER_WORKFLOW_BYTES);
  return Math.min(MAX_CACHED, Math.max(MIN_CACHED, fit));
}
