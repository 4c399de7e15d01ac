import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { preloadModules, workflowsPath } from '../../workers/workflow-bundle';
import { bundledModules, root } from './workflow-imports';

// A worker's reusable V8 context instantiates the modules the bundle's entry imports statically again for every
// workflow it caches, and node workflows, one per node, are nearly all of them. The manifests' schemas (about 400 KiB
// of module state a workflow) are the rollout workflow's alone: imported lazily, by path, never through model/index.ts
// (docs/architecture.md, "Changing a workflow"; `npm run bench:memory` prints the figures).

const eager = bundledModules({ lazy: false });
const all = bundledModules({ lazy: true });

test('every cached workflow instantiates the node workflow and the model modules it uses, no more', () => {
  expect(eager).toEqual(expect.arrayContaining(['workflows/node/workflow.ts', 'model/node-decide.ts']));
  expect(eager.filter((m) => m === 'model/index.ts' || m.startsWith('workflows/rollout/'))).toEqual([]);
  // Only the validation messages' helpers, which the node state's decoder uses: no schema of a manifest.
  expect(eager.filter((m) => m.startsWith('model/manifests/'))).toEqual([
    'model/manifests/closest-name.ts',
    'model/manifests/validation-error.ts',
  ]);
});

test('the rollout workflow and the manifests it validates are in the bundle, loaded when a rollout runs', () => {
  const lazyOnly = all.filter((m) => !eager.includes(m));
  expect(lazyOnly).toEqual(
    expect.arrayContaining(['workflows/rollout/workflow.ts', 'model/manifests/rollout-spec.ts', 'model/index.ts']),
  );
});

test('no bundled module loads another with require(), which the walk above would not see', () => {
  const requiring = all.filter((m) => /\brequire\(/.test(readFileSync(path.join(root, m), 'utf8')));
  expect(requiring).toEqual([]);
});

test('the bundle holds the rollout workflow in its one file: an import() with no chunk to load', async () => {
  const { code } = await bundleWorkflowCode({ workflowsPath, preloadModules, logger: new DefaultLogger('WARN') });
  expect(code).toContain('"./workflows/rollout/workflow.ts"');
  expect(code).toContain('import() eager');
  // A lazy chunk would be a second file, which the SDK's bundler drops without a word: every rollout task would fail.
  expect(code).not.toMatch(/__webpack_require__\.e\(/);
}, 120_000);
