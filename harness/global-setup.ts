import fs from 'node:fs';
import path from 'node:path';
import { stateDir } from '../deploy/dev/paths';
import { runningComponents, stackEnv, stackUp } from '../deploy/dev/stack';
import { workflowSetup } from './workflow-setup';

export const startedByTestsFile = path.join(stateDir, 'run', 'started-by-tests.json');

/** Brings the local stack up (or reuses a running one) and hands its settings to every test through the env. */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`[stack] ${line}\n`);
  const before = new Set(runningComponents());
  await workflowSetup(log, () => stackUp({ nodes: 10, log }));
  const started = runningComponents().filter((name) => !before.has(name));
  fs.writeFileSync(startedByTestsFile, JSON.stringify(started));
  Object.assign(process.env, stackEnv());
}
