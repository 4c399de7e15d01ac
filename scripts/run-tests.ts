/**
 * The whole Jest suite, in three phases, on the one local stack (`npm test`; with arguments, plain Jest on them).
 *
 * The unit tests need no stack (jest.unit.config.js has no global setup): they run while the stack comes up. One
 * Jest process in band for the rest took about 51 minutes on two cores, most of it waiting on fake reboots and
 * timers, not CPU, so two processes then run side by side: the end-to-end and fault suites, each with its own worker
 * and fake nodes, and everything else; their global setup finds the stack up. The apiserver fault stops the shared
 * kube-apiserver, so it runs last, alone. Services this run started are stopped at the end.
 */
import { spawn } from 'node:child_process';
import { runningComponents, stackComponents, stackUp } from '../deploy/dev/stack';
import { stopDetached } from '../deploy/dev/processes';

const jest = require.resolve('jest/bin/jest');
const exclusive = ['test/faults/apiserver-stop.test.ts'];
const sideBySide: Record<string, string[]> = {
  'e2e+faults': [
    'test/e2e',
    'test/faults/worker-sigkill.test.ts',
    'test/faults/two-workers.test.ts',
    'test/faults/temporal-restart.test.ts',
  ],
  rest: ['--testPathIgnorePatterns', '/node_modules/', 'test/unit', 'test/e2e', 'test/faults'],
};

/** Runs Jest in band on `args`, each output line prefixed with `label`; resolves to its exit code. */
function runJest(label: string, args: string[]): Promise<number> {
  const started = Date.now();
  const child = spawn(process.execPath, [jest, '--runInBand', ...args], {
    env: { ...process.env, KEELSON_KEEP_STACK: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) process.stdout.write(`[${label}] ${line}\n`);
    });
    stream.on('end', () => rest && process.stdout.write(`[${label}] ${rest}\n`));
  }
  return new Promise((resolve) => {
    child.on('close', (code) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(`[tests] ${label}: ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds} s\n`);
      resolve(code ?? 1);
    });
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length) return runJest('jest', args);
  const before = new Set(runningComponents());
  try {
    const stack = stackUp({ nodes: 10, log: (line) => process.stdout.write(`[stack] ${line}\n`) });
    stack.catch(() => undefined);
    const codes = [await runJest('unit', ['-c', 'jest.unit.config.js'])];
    await stack;
    codes.push(...(await Promise.all(Object.entries(sideBySide).map(([label, paths]) => runJest(label, paths)))));
    codes.push(await runJest('apiserver-stop', exclusive));
    return codes.find((code) => code !== 0) ?? 0;
  } finally {
    if (process.env.KEELSON_KEEP_STACK !== '1')
      for (const name of [...stackComponents].reverse()) if (!before.has(name)) await stopDetached(name);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[tests] ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
