// The workflow bundle's entry point: every workflow type the worker registers.
import type { rolloutWorkflow as runRollout } from './rollout/workflow';

export { nodeWorkflow } from './node/workflow';

/**
 * The rollout workflow, its modules (the manifests' schemas) instantiated when it runs. A worker's reusable context
 * instantiates the entry's static imports again for every workflow it caches, and node workflows, one per node, are
 * nearly all of them: imported statically, the schemas cost each of them about 400 KiB (docs/architecture.md, "Changing
 * a workflow"). The module is in the bundle ("eager"), so the import resolves in the same activation, before any
 * command.
 */
export async function rolloutWorkflow(...args: Parameters<typeof runRollout>): ReturnType<typeof runRollout> {
  const rollout = await import(/* webpackMode: "eager" */ './rollout/workflow.js');
  return rollout.rolloutWorkflow(...args);
}
