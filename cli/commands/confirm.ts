import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';

// Destructive commands (`rollout delete`, `node reset`, `rollout reset-batches`) ask first: on a terminal a y/N
// question, and without a terminal (a script, a pipe) a refusal unless `--yes` says the caller means it.

export interface ConfirmIo {
  input: Readable & { isTTY?: boolean };
  /** Where the question and the refusal go: stderr, so stdout holds only results. */
  output: Writable;
}

export type Confirmation = 'yes' | 'declined' | 'no-terminal';

/** The exit code of a command not confirmed: a missing `--yes` is a usage error, a "no" a plain failure. */
export const NOT_CONFIRMED_EXIT: Record<Exclude<Confirmation, 'yes'>, number> = { 'no-terminal': 2, declined: 1 };

/** `action` completes "keelson: ... " and the question, e.g. "delete rollout drivers". */
export async function confirm(
  action: string,
  yes: boolean | undefined,
  io: ConfirmIo = { input: process.stdin, output: process.stderr },
): Promise<Confirmation> {
  if (yes) return 'yes';
  if (!io.input.isTTY) {
    io.output.write(`keelson: refusing to ${action} without confirmation: stdin is not a terminal; pass --yes\n`);
    return 'no-terminal';
  }
  const rl = createInterface({ input: io.input, output: io.output, terminal: false });
  try {
    // Input that ends before an answer (Ctrl-D) declines.
    const ended = new Promise<string>((resolve) => rl.once('close', () => resolve('')));
    const answer = await Promise.race([rl.question(`${action[0]!.toUpperCase()}${action.slice(1)}? [y/N] `), ended]);
    if (/^y(es)?$/i.test(answer.trim())) return 'yes';
    io.output.write('keelson: not confirmed; nothing done\n');
    return 'declined';
  } finally {
    rl.close();
  }
}
