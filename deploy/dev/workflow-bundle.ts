import { execFile } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from './paths';

/** Builds the workflow bundle into `out` (scripts/bundle-workflows.ts in a child process); resolves to `out`. */
export function buildWorkflowBundle(out: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(projectRoot, 'scripts', 'bundle-workflows.ts'), out],
      { cwd: projectRoot, timeout: 300_000 },
      (err, _stdout, stderr) => (err ? reject(new Error(`bundle-workflows failed: ${stderr}`)) : resolve(out)),
    );
  });
}
