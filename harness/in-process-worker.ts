import { loadConfig } from '../workers/config';
import { startWorker } from '../workers/worker';
import { installTestRuntime } from './runtime';

// The in-process level of the harness: a whole Keelson worker (workers/worker.ts startWorker, with the settings a
// deployment would give it) running in the test's own process.

export interface InProcessWorker {
  /** Stops polling, waits for the worker to end, and closes its connections. */
  stop(): Promise<void>;
}

export async function startInProcessWorker(settings: Record<string, string | undefined>): Promise<InProcessWorker> {
  installTestRuntime();
  const running = await startWorker(loadConfig(settings));
  const done = running.worker.run();
  return {
    async stop() {
      running.worker.shutdown();
      await done;
      await running.close();
    },
  };
}
