import fs from 'node:fs';
import path from 'node:path';

// A memory cgroup per worker process of `--worker-memory-mib`, so the worker runs as in a container of that limit:
// Node sizes V8's heaps from the cgroup's limit (its young generation most of all: 4 MiB semi-spaces at 640 MiB, 16
// on the whole machine), and the kernel enforces the limit as a container's would. cgroup v2 first, then v1.

const V2_ROOT = '/sys/fs/cgroup';
const V1_MEMORY_ROOT = '/sys/fs/cgroup/memory';
const PREFIX = 'keelson-bench-';

/** Where this process's own v1 memory cgroup is: the bench's cgroups nest under it, inside whatever bounds it. */
function ownV1Dir(): string {
  const line = fs
    .readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes('memory'));
  return path.join(V1_MEMORY_ROOT, line?.split(':')[2] ?? '/');
}

/** Removes the bench cgroups an earlier run left (a crashed or interrupted bench); one still in use stays. */
function removeLeftovers(parent: string): void {
  for (const name of fs.readdirSync(parent)) {
    if (!name.startsWith(PREFIX)) continue;
    try {
      fs.rmdirSync(path.join(parent, name));
    } catch {
      // Still holds a process: not ours to end.
    }
  }
}

export class MemoryCgroup {
  private constructor(
    readonly dir: string,
    private readonly version: 1 | 2,
  ) {}

  /** Writing a process ID here moves that process into the cgroup. */
  get procsFile(): string {
    return path.join(this.dir, 'cgroup.procs');
  }

  static create(name: string, limitBytes: number): MemoryCgroup {
    const v2 = fs.existsSync(path.join(V2_ROOT, 'cgroup.controllers'));
    try {
      const parent = v2 ? V2_ROOT : ownV1Dir();
      removeLeftovers(parent);
      const dir = path.join(parent, `${PREFIX}${name}`);
      if (v2) {
        // Allowed at the hierarchy's root even with processes in it; in a cgroup namespace this is not the root.
        const control = path.join(V2_ROOT, 'cgroup.subtree_control');
        if (!fs.readFileSync(control, 'utf8').split(/\s+/).includes('memory')) fs.writeFileSync(control, '+memory');
      }
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(limitBytes));
      return new MemoryCgroup(dir, v2 ? 2 : 1);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(
        `--worker-memory-mib runs each worker in a memory cgroup of that limit, and none could be made (${v2 ? `cgroup v2 at ${V2_ROOT}` : `cgroup v1 under ${V1_MEMORY_ROOT}`}): ${why}. ` +
          'It needs root and a memory controller this process may delegate (not the case inside a container with a ' +
          'cgroup namespace); or leave --worker-memory-mib out.',
      );
    }
  }

  /** How often the kernel's OOM killer acted in the cgroup: a worker over its limit. */
  oomKills(): number {
    const file = path.join(this.dir, this.version === 2 ? 'memory.events' : 'memory.oom_control');
    const match = /oom_kill (\d+)/.exec(fs.readFileSync(file, 'utf8'));
    return match ? Number(match[1]) : 0;
  }

  /** Once its processes have ended. */
  remove(): void {
    try {
      fs.rmdirSync(this.dir);
    } catch {
      // A process still in it: the next run's create() removes it once that process is gone.
    }
  }
}
