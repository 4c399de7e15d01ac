/**
 * `npm run bench:memory`: the module state each cached workflow costs the worker, by workflow type. Usage:
 *   npm run bench:memory                 # bundles the workflows as the image does, 40 workflows of each type
 *   npm run bench:memory -- --bundle dist/workflow-bundle.js --workflows 100
 *
 * The SDK's reusable V8 context evaluates the bundle once, keeps the preloaded modules (zod) in one shared module
 * cache, and instantiates every other module a workflow requires in a cache of that workflow's own. This does the
 * same in a V8 context of its own and prints the heap each workflow's cache holds after a full collection: what the
 * entry instantiates (every workflow, so a node workflow), and that plus the rollout workflow's modules.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import { bundleWorkflowCode } from '@temporalio/worker';
import { preloadModules, workflowsPath } from '../workers/workflow-bundle';
import { arg } from './lib/machine';

v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as () => void;

/** The heap in use after full collections. */
function heapUsed(): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

interface Sandbox {
  /** Instantiates, in a new module cache, what one workflow of the type would (`module`: a lazily imported one too). */
  instantiate(module?: string): Map<string, unknown>;
}

function sandbox(code: string): Sandbox {
  const shared = new Map<string, unknown>();
  let current: Map<string, unknown> | undefined;
  const context = vm.createContext({ console });
  const cache = new Proxy(
    {},
    {
      get: (_, id: string) => shared.get(id) ?? current?.get(id),
      set: (_, id: string, value) => {
        (current ?? shared).set(id, value);
        return true;
      },
    },
  );
  Object.defineProperty(context, '__webpack_module_cache__', { value: cache });
  // The bundle's require function, to instantiate a lazily imported module as its import() would.
  const exposed = code.replace(
    'function __webpack_require__(moduleId) {',
    'globalThis.__bench_require__ = __webpack_require__; function __webpack_require__(moduleId) {',
  );
  if (exposed === code)
    throw new Error('bench:memory: the bundle has no __webpack_require__ to instantiate modules with');
  new vm.Script(exposed).runInContext(context);
  vm.runInContext('__TEMPORAL__.preloadModules?.()', context);
  return {
    instantiate(module) {
      current = new Map();
      vm.runInContext('__TEMPORAL__.importWorkflows()', context);
      if (module !== undefined) vm.runInContext(`__bench_require__(${JSON.stringify(module)})`, context);
      const made = current;
      current = undefined;
      return made;
    },
  };
}

function measure(box: Sandbox, count: number, module?: string): { kib: number; modules: number } {
  const kept: Map<string, unknown>[] = [];
  const before = heapUsed();
  for (let i = 0; i < count; i++) kept.push(box.instantiate(module));
  const bytes = (heapUsed() - before) / count;
  return { kib: Math.round(bytes / 1024), modules: kept[0]!.size };
}

async function main(): Promise<void> {
  const count = Number(arg('workflows', '40'));
  if (!Number.isInteger(count) || count < 1) {
    throw new Error(`--workflows ${arg('workflows', '')}: must be a whole number of at least 1`);
  }
  const path = arg('bundle', '');
  const code = path
    ? fs.readFileSync(path, 'utf8')
    : (await bundleWorkflowCode({ workflowsPath, preloadModules })).code;
  const box = sandbox(code);
  const node = measure(box, count);
  const rollout = measure(box, count, './workflows/rollout/workflow.ts');
  process.stdout.write(
    `module state per cached workflow (${count} of each, bundle ${Math.round(code.length / 1024)} KiB):\n` +
      `  node workflow:    ${node.kib} KiB in ${node.modules} modules\n` +
      `  rollout workflow: ${rollout.kib} KiB in ${rollout.modules} modules\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:memory: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
