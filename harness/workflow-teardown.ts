import fs from 'node:fs';
import { BUNDLE_VARIABLE } from './workflow-bundle';

/** Removes this Jest process's workflow bundle; the workflow tests start no shared service, so they stop none. */
export default function workflowTeardown(): void {
  const bundle = process.env[BUNDLE_VARIABLE];
  if (bundle) fs.rmSync(bundle, { force: true });
}
