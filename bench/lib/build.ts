import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../deploy/dev/paths';
import { buildWorkflowBundle } from '../../deploy/dev/workflow-bundle';
import type { CompiledWorker } from './fleet';
import { workerContainer, type WorkerContainer } from './container-env';

// The worker the bench measures is the one the image runs (Dockerfile: `npm run build`, i.e. `tsc -p tsconfig.json`,
// then `npm run bundle`, then `node dist/workers/worker.js` with KEELSON_WORKFLOW_BUNDLE), not the TypeScript source
// under tsx: tsx transpiles every module at load time and keeps its loader thread, which is neither the start-up
// nor the memory of a deployed worker.
//
// Built once per bench invocation into the checkout's .keelson/bench-dist (ignored by git, as all of .keelson/ is;
// never the project's own dist/, which the image build writes), wherever KEELSON_HOME puts the stack's state: inside
// the checkout, the compiled modules find node_modules by Node's usual upward search with no path fix. tsc runs incrementally: a second bench
// on an unchanged tree recompiles nothing.

export const benchDist = path.join(projectRoot, '.keelson', 'bench-dist');

function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: projectRoot, timeout: 900_000, maxBuffer: 16 * 2 ** 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(file)} ${args.join(' ')} failed:\n${stdout}${stderr}`));
      else resolve();
    });
  });
}

export async function buildCompiledWorker(log: (line: string) => void): Promise<CompiledWorker> {
  fs.mkdirSync(benchDist, { recursive: true });
  const started = Date.now();
  log(`build: tsc -p tsconfig.json into ${path.relative(projectRoot, benchDist)} (as npm run build does)`);
  // The project's own compiler and settings, only the output elsewhere. A type error fails the bench, as it fails
  // the image build.
  const tsc = path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const script = path.join(benchDist, 'workers', 'worker.js');
  const buildInfo = path.join(benchDist, 'tsconfig.tsbuildinfo');
  // tsc --incremental trusts its build info, not the files: with the output gone, start over.
  if (!fs.existsSync(script)) fs.rmSync(buildInfo, { force: true });
  await run(process.execPath, [
    tsc,
    '-p',
    'tsconfig.json',
    '--outDir',
    benchDist,
    '--incremental',
    '--tsBuildInfoFile',
    buildInfo,
  ]);
  if (!fs.existsSync(script)) throw new Error(`build: ${script} was not emitted`);
  log(`build: compiled in ${((Date.now() - started) / 1000).toFixed(0)} s; bundling the workflows (npm run bundle)`);
  const workflowBundle = await buildWorkflowBundle(path.join(benchDist, 'workflow-bundle.js'));
  log(`build: worker ${path.relative(projectRoot, script)}, bundle ${path.relative(projectRoot, workflowBundle)}`);
  return { script, workflowBundle };
}

/**
 * How the Keelson side of a bench is set up: `--worker compiled|tsx`, `--workers <n>`, `--temporal fresh|shared`,
 * `--worker-memory-mib <n>`.
 */
export interface KeelsonSetup {
  compiledWorker?: CompiledWorker;
  /** Worker processes on the one task queue. */
  workers: number;
  /** The container of `--worker-memory-mib` each worker process runs in; none without it. */
  container?: WorkerContainer;
  freshTemporal: boolean;
  describe: string;
}

/**
 * The defaults are the fair ones: the compiled worker, as deployed, and a Temporal dev server of each run's own.
 * `--worker tsx` and `--temporal shared` measure the earlier bench's setup, to see what each choice costs.
 */
export async function keelsonSetup(
  arg: (name: string, fallback: string) => string,
  log: (line: string) => void,
): Promise<KeelsonSetup> {
  const worker = arg('worker', 'compiled');
  const temporal = arg('temporal', 'fresh');
  const workersArg = arg('workers', '1');
  const workers = Number(workersArg);
  if (!Number.isInteger(workers) || workers < 1 || workers > 8)
    throw new Error(`--workers takes a whole number of worker processes from 1 to 8, got ${workersArg}`);
  if (worker !== 'compiled' && worker !== 'tsx') throw new Error(`--worker takes compiled or tsx, got ${worker}`);
  if (temporal !== 'fresh' && temporal !== 'shared')
    throw new Error(`--temporal takes fresh or shared, got ${temporal}`);
  const container = workerContainer(arg('worker-memory-mib', 'none'));
  const compiledWorker = worker === 'compiled' ? await buildCompiledWorker(log) : undefined;
  const describe =
    (compiledWorker
      ? `Keelson worker compiled (node ${path.relative(projectRoot, compiledWorker.script)}, prebuilt workflow bundle)`
      : 'Keelson worker from TypeScript under tsx') +
    (workers > 1 ? `, ${workers} worker processes on one task queue (a kill fault SIGKILLs the first)` : '') +
    (temporal === 'fresh' ? ', a fresh Temporal dev server per run' : ', the shared Temporal dev server') +
    (container
      ? `, in a memory cgroup of ${container.limitBytes / 2 ** 20} MiB as in a container (${Object.entries(
          container.env,
        )
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')})`
      : '') +
    '.';
  return { compiledWorker, workers, container, freshTemporal: temporal === 'fresh', describe };
}
