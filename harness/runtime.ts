import { DefaultLogger, Runtime } from '@temporalio/worker';

let installed = false;

/** The Temporal SDK runtime of a test process, once and before any connection, logging errors only. */
export function installTestRuntime(): void {
  if (installed) return;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // Installed already by a connection made before this.
  }
  installed = true;
}
