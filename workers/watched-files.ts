import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

// Tells when the content of a set of files changes, for credentials reloaded without a restart. fs.watch on each
// file's directory answers at once, and sees a Kubernetes Secret volume's update, which swaps a `..data` symlink
// rather than writing the file; a periodic check covers file systems whose events never come (NFS, some overlays).
// Contents are compared, not modification times, so a rewrite within one clock tick is still seen.

export interface WatchedFiles {
  /** Compares the files with what was last seen now, calling onChange if they differ. */
  check(): Promise<void>;
  close(): void;
}

/** One digest of every file's content; a file that cannot be read counts as its error code. */
async function fingerprint(paths: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const p of paths) {
    const content = await readFile(p).catch((err: NodeJS.ErrnoException) => `unreadable:${err.code ?? String(err)}`);
    hash.update(`${p}\0`).update(content).update('\0');
  }
  return hash.digest('hex');
}

/**
 * Calls `onChange` once the files' contents differ from what they were when watching began (or at the last change).
 * A burst of events (a Secret update touches several names) is one check a short moment later; checks never overlap.
 * `onChange` handles its own failures (a bad new file is the caller's to report): one it throws would go unhandled.
 */
export async function watchFiles(
  paths: readonly string[],
  onChange: () => void | Promise<void>,
  opts: { pollMs: number; settleMs?: number },
): Promise<WatchedFiles> {
  let seen = await fingerprint(paths);
  let running: Promise<void> | undefined;
  let again = false;
  let closed = false;
  const runCheck = async (): Promise<void> => {
    const now = await fingerprint(paths);
    if (now === seen) return;
    seen = now;
    await onChange();
  };
  const check = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = runCheck().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        void check();
      }
    });
    return running;
  };

  let settle: NodeJS.Timeout | undefined;
  const soon = () => {
    clearTimeout(settle);
    settle = setTimeout(() => void check(), opts.settleMs ?? 200);
    settle.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set(paths.map((p) => dirname(p)))) {
    try {
      const w = watch(dir, { persistent: false }, soon);
      // A directory that goes away ends its watch; the periodic check still sees the files.
      w.on('error', () => w.close());
      watchers.push(w);
    } catch {
      // No events from this directory (missing, or no inotify): the periodic check covers it.
    }
  }
  const poll = setInterval(() => void check(), opts.pollMs);
  poll.unref();
  return {
    check,
    close: () => {
      closed = true;
      clearInterval(poll);
      clearTimeout(settle);
      for (const w of watchers) w.close();
    },
  };
}
