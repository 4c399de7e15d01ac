import fs from 'node:fs';
import path from 'node:path';
import { toolPaths, stateDir } from '../../deploy/dev/paths';
import { runningComponents, stackEnv, stackUp } from '../../deploy/dev/stack';
import { buildWorkflowBundle } from '../../deploy/dev/workflow-bundle';
import { BUNDLE_VARIABLE } from './workflow-bundle';

export const startedByTestsFile = path.join(stateDir, 'run', 'started-by-tests.json');

/** Brings the local stack up (or reuses a running one) and hands its settings to every test through the env. */
export default async function globalSetup(): Promise<void> {
  // Built while the stack comes up; a failure is reported by the await below. One file per Jest process, as
  // `npm test` runs two at once.
  const bundle = buildWorkflowBundle(path.join(stateDir, 'run', `workflow-bundle-${process.pid}.js`));
  bundle.catch(() => undefined);
  const before = new Set(runningComponents());
  const log = (line: string) => process.stderr.write(`[stack] ${line}\n`);
  await stackUp({ nodes: 10, log });
  const started = runningComponents().filter((name) => !before.has(name));
  fs.writeFileSync(startedByTestsFile, JSON.stringify(started));
  Object.assign(process.env, stackEnv());
  const tools = toolPaths();
  process.env.TEMPORAL_CLI_PATH = tools.temporal;
  process.env.TEMPORAL_TEST_SERVER_PATH = tools.temporalTestServer;
  process.env[BUNDLE_VARIABLE] = await bundle;
}
