import fs from 'node:fs';
import { stopDetached } from '../deploy/dev/processes';
import { stackComponents } from '../deploy/dev/stack';
import { startedByTestsFile } from './global-setup';
import workflowTeardown from './workflow-teardown';

/** Stops what global setup started (a stack that was already up stays up), unless KEELSON_KEEP_STACK=1. */
export default async function globalTeardown(): Promise<void> {
  workflowTeardown();
  if (process.env.KEELSON_KEEP_STACK === '1' || !fs.existsSync(startedByTestsFile)) return;
  const started = new Set(JSON.parse(fs.readFileSync(startedByTestsFile, 'utf8')) as string[]);
  fs.rmSync(startedByTestsFile, { force: true });
  for (const name of [...stackComponents].reverse()) if (started.has(name)) await stopDetached(name);
}
