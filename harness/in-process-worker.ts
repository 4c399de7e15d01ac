import { loadConfig } from '../workers/config';
import { startWorker } from '../workers/worker';
import { installTestRuntime } from './runtime';

// The in-process level of the harness: a whole Keelson worker (workers/worker.ts startWorker, with the settings a
// deployment would give it) running in the test's own process.

export interface InProcessWorker {
  /** Where its metrics endpoint listens (`http://127.0.0.1:<port>/metrics`). */
  metricsUrl: string;
  /** Stops polling, waits for the worker to end, and closes its connections. */
  stop(): Promise<void>;
}

export async function startInProcessWorker(settings: Record<string, string | undefined>): Promise<InProcessWorker> {
  installTestRuntime();
  const running = await startWorker(loadConfig(settings));
  const done = running.worker.run();
  const address = running.metricsServer.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    metricsUrl: `http://127.0.0.1:${port}/metrics`,
    async stop() {
      running.worker.shutdown();
      await done;
      await running.close();
    },
  };
}
