import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { preloadModules, workflowsPath } from '../workers/workflow-bundle';

// Builds the workflow bundle once (`npm run bundle [-- OUT]`, default dist/workflow-bundle.js), so a worker started
// with KEELSON_WORKFLOW_BUNDLE=OUT skips the webpack build it otherwise does at every start.

async function main(): Promise<void> {
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist', 'workflow-bundle.js'));
  const started = Date.now();
  const { code } = await bundleWorkflowCode({ workflowsPath, preloadModules });
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, code);
  process.stdout.write(
    `workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB in ${Date.now() - started} ms)\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bundle-workflows: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
