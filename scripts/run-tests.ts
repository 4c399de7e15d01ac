/**
 * The whole Jest suite, in three phases, on the one local stack (`npm test`; with arguments, plain Jest on them).
 *
 * The unit tests need no stack (jest.unit.config.js has no global setup): they run while the stack comes up. One
 * Jest process in band for the rest took about 51 minutes on two cores, most of it waiting on fake reboots and
 * timers, not CPU, so two processes then run side by side: the end-to-end and fault suites, each with its own worker
 * and fake nodes, and everything else; their global setup finds the stack up. The apiserver fault stops the shared
 * kube-apiserver, so it runs last, alone. Services this run started are stopped at the end. A phase that failed has
 * its failures printed again at the very end: side by side, one phase's failures end up mid-output under the other's
 * lines, and Jest prints its own summary only past 20 test files.
 */
import { spawn } from 'node:child_process';
import { runningComponents, stackComponents, stackUp } from '../deploy/dev/stack';
import { stopDetached } from '../deploy/dev/processes';
import { failureReport } from './jest-failures';

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

interface JestRun {
  label: string;
  code: number;
  /** How it ended: passed, or its exit code or signal. */
  ended: string;
  /** Every line Jest printed, unprefixed. */
  lines: string[];
}

/** Runs Jest in band on `args`, each output line prefixed with `label`, and keeps its lines. */
function runJest(label: string, args: string[]): Promise<JestRun> {
  const started = Date.now();
  const kept: string[] = [];
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
      for (const line of lines) {
        kept.push(line);
        process.stdout.write(`[${label}] ${line}\n`);
      }
    });
    stream.on('end', () => {
      if (!rest) return;
      kept.push(rest);
      process.stdout.write(`[${label}] ${rest}\n`);
    });
  }
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      const ended = code === 0 ? 'passed' : `failed (${signal ? `killed by ${signal}` : `exit ${code}`})`;
      process.stdout.write(`[tests] ${label}: ${ended} in ${seconds} s\n`);
      resolve({ label, code: code ?? 1, ended, lines: kept });
    });
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.length) return (await runJest('jest', args)).code;
  const before = new Set(runningComponents());
  try {
    const stack = stackUp({ nodes: 10, log: (line) => process.stdout.write(`[stack] ${line}\n`) });
    stack.catch(() => undefined);
    const runs = [await runJest('unit', ['-c', 'jest.unit.config.js'])];
    await stack;
    runs.push(...(await Promise.all(Object.entries(sideBySide).map(([label, paths]) => runJest(label, paths)))));
    runs.push(await runJest('apiserver-stop', exclusive));
    const failed = runs.filter((run) => run.code !== 0);
    for (const run of failed) {
      process.stdout.write(`\n[tests] ${run.label} ${run.ended}; what Jest said of its failures, again:\n`);
      for (const line of failureReport(run.lines)) process.stdout.write(`[${run.label} again] ${line}\n`);
    }
    return failed[0]?.code ?? 0;
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
