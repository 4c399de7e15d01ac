import path from 'node:path';
import { installCustomResourceDefinitions } from './custom-resources';
import { kubeconfigPath, projectRoot } from './paths';
import { logFile, runningPid, sleep, startDetached } from './processes';
import { serviceEnv } from './services';

// Custom-resource mode on the local stack (`keelson dev up --custom-resources`): the chart's definitions installed,
// and the controller (controller/main.ts) running beside the worker and the API, as the chart runs it.

/**
 * The resources the local controller handles: all but the end-to-end tests' (labelled keelson.dev/e2e), which each
 * test file's own controller handles for its own cluster.
 */
export const DEV_CONTROLLER_SELECTOR = '!keelson.dev/e2e';

export async function startDevController(log: (line: string) => void): Promise<void> {
  installCustomResourceDefinitions(kubeconfigPath);
  log('custom resources: Skyhook, NodeWright and DeploymentPolicy definitions installed');
  if (runningPid('controller') !== undefined) {
    log('controller: already running');
    return;
  }
  const pid = startDetached(
    'controller',
    process.execPath,
    ['--import', 'tsx', path.join(projectRoot, 'controller', 'main.ts')],
    {
      ...serviceEnv(),
      KEELSON_CONTROLLER_SELECTOR: DEV_CONTROLLER_SELECTOR,
    },
  );
  // A bad setting or an unreachable Temporal stops it at once: say so now rather than leave a dead process behind.
  for (let waited = 0; waited < 3_000; waited += 250) {
    await sleep(250);
    if (runningPid('controller') === undefined)
      throw new Error(`the controller exited during start-up; see ${logFile('controller')}`);
  }
  log(`controller: running (pid ${pid}), watching Skyhook and NodeWright resources; log in ${logFile('controller')}`);
}
