import fs from 'node:fs';

// The workflow bundle, built once per test run by global setup (a webpack build takes 5-10 s on the CI machine, and
// every worker a test starts would otherwise build its own).

export const BUNDLE_VARIABLE = 'KEELSON_TEST_WORKFLOW_BUNDLE';

/** Path of the run's workflow bundle. */
export function testWorkflowBundlePath(): string {
  const p = process.env[BUNDLE_VARIABLE];
  if (!p || !fs.existsSync(p)) {
    throw new Error(`${BUNDLE_VARIABLE} is ${p ? `${p}, which does not exist` : 'unset'}: run the tests through jest`);
  }
  return p;
}

/** A workflow bundle as Worker.create and Worker.runReplayHistory take it. */
export interface WorkflowBundle {
  code: string;
}

/** The run's workflow bundle. */
export function testWorkflowBundle(): WorkflowBundle {
  return { code: fs.readFileSync(testWorkflowBundlePath(), 'utf8') };
}
