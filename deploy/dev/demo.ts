/**
 * `npm run demo`: brings the local stack up, starts the demo rollout (deploy/dev/demo/rollout.yaml) through the
 * Keelson API with the CLI, follows it live to the end, and prints where to read its history in the Temporal UI.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from './paths';
import { stackEnv, stackUp } from './stack';
import { devCluster } from './services';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';

const manifest = path.join(__dirname, 'demo', 'rollout.yaml');

async function main(): Promise<void> {
  await stackUp({ nodes: 10, log: (line) => process.stdout.write(`${line}\n`) });
  const env = { ...process.env, ...stackEnv() };
  process.stdout.write(`\nstarting the demo rollout from ${path.relative(projectRoot, manifest)}\n`);
  const cli = spawnSync(
    process.execPath,
    [path.join(projectRoot, 'bin', 'keelson.js'), 'rollout', 'start', '-f', manifest, '--wait', '--timeout', '600'],
    { stdio: 'inherit', env },
  );
  const ui = env.TEMPORAL_UI_URL;
  const ns = 'default';
  const link = (id: string) => `${ui}/namespaces/${ns}/workflows/${encodeURIComponent(id)}`;
  process.stdout.write(
    [
      '',
      'Temporal UI:',
      `  rollout   ${link(rolloutWorkflowId(devCluster, 'demo'))}`,
      `  a node    ${link(nodeWorkflowId(devCluster, 'node-000'))}`,
      `  all       ${ui}/namespaces/${ns}/workflows?query=${encodeURIComponent("KeelsonRollout='demo'")}`,
      'More: eval "$(npx keelson dev env)"; npx keelson rollout status demo; npx keelson dev down',
      '',
    ].join('\n'),
  );
  process.exit(cli.status ?? 1);
}

main().catch((err: unknown) => {
  process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
