import path from 'node:path';
import { stateDir, toolPaths } from '../deploy/dev/paths';
import { installTools } from '../deploy/dev/stack';
import { buildWorkflowBundle } from '../deploy/dev/workflow-bundle';
import { BUNDLE_VARIABLE } from './workflow-bundle';

/**
 * What workflow tests need and nothing more: the pinned Temporal binaries (each test file runs a dev server of its
 * own) and this Jest process's workflow bundle. No shared stack: `npm run test:workflows` runs with none.
 */
export async function workflowSetup(
  log: (line: string) => void,
  /** What else to bring up meanwhile; it must install the tools (stackUp does). */
  alongside: () => Promise<void> = () => installTools(log),
): Promise<void> {
  // One bundle file per Jest process, as `npm test` runs two at once; built while the rest comes up.
  const bundle = buildWorkflowBundle(path.join(stateDir, 'run', `workflow-bundle-${process.pid}.js`));
  bundle.catch(() => undefined);
  await alongside();
  const tools = toolPaths();
  process.env.TEMPORAL_CLI_PATH = tools.temporal;
  process.env.TEMPORAL_TEST_SERVER_PATH = tools.temporalTestServer;
  process.env[BUNDLE_VARIABLE] = await bundle;
}

export default async function globalSetup(): Promise<void> {
  await workflowSetup((line) => process.stderr.write(`[setup] ${line}\n`));
}
