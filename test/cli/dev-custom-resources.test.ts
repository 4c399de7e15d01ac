import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { kubeconfigPath, toolPaths } from '../../deploy/dev/paths';
import { logFile, runningPid, stopDetached } from '../../deploy/dev/processes';
import { skyhook } from '../../harness/manifests';
import type { RolloutResource } from '../../controller/resources';
import { kubeClients, until } from '../../harness/kube';

// `keelson dev up --custom-resources` as a user runs it on the local stack (up already, from the global setup): the
// definitions installed, the controller a process of the stack, and `kubectl apply -f skyhook.yaml` starting a
// rollout whose status comes back on the resource; `kubectl delete` waits for its cleanup.

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const name = `dev-cr-${Date.now().toString(36)}`;
const where = { group: 'skyhook.nvidia.com', version: 'v1alpha1', plural: 'skyhooks', name };
const custom = kubeClients().kc.makeApiClient(CustomObjectsApi);
const kubectl = (args: string[]) =>
  run(join(toolPaths().kubeBin, 'kubectl'), args, { env: { ...process.env, KUBECONFIG: kubeconfigPath } });
let startedHere = false;

afterAll(async () => {
  await custom.deleteClusterCustomObject(where).catch(() => undefined);
  if (startedHere) await stopDetached('controller');
}, 60_000);

test('dev up --custom-resources installs the definitions and runs the controller; kubectl apply starts a rollout', async () => {
  startedHere = runningPid('controller') === undefined;
  const up = await run(process.execPath, [join(root, 'bin', 'keelson.js'), 'dev', 'up', '--custom-resources'], {
    cwd: root,
    env: process.env,
  });
  expect(up.stdout).toMatch(/^custom resources: Skyhook, NodeWright and DeploymentPolicy definitions installed$/m);
  expect(up.stdout).toMatch(/^controller: (running \(pid \d+\)|already running)/m);
  expect(runningPid('controller')).toBeDefined();

  // A rollout whose selector matches no node of the shared cluster: the controller's work is all this checks.
  const file = join(mkdtempSync(join(tmpdir(), 'keelson-dev-cr-')), 'skyhook.yaml');
  const doc = skyhook({
    name,
    selector: { matchLabels: { 'keelson.dev/none': name } },
    packages: { hello: { version: '1.0.0' } },
  });
  writeFileSync(file, JSON.stringify(doc));
  await kubectl(['apply', '-f', file]);
  const status = await until(
    `the controller's status on Skyhook/${name} (its log: ${logFile('controller')})`,
    async () => {
      const s = ((await custom.getClusterCustomObject(where)) as RolloutResource).status;
      return s?.packageList === 'hello:1.0.0' ? s : undefined;
    },
    60_000,
  );
  expect(status).toMatchObject({ observedGeneration: 1, completeNodes: '0/0' });
  expect(status.conditions).toContainEqual(
    expect.objectContaining({ type: 'Valid', status: 'True', reason: 'Accepted' }),
  );

  await kubectl(['delete', 'skyhooks', name, '--timeout=60s']);
  await expect(custom.getClusterCustomObject(where)).rejects.toMatchObject({ code: 404 });
}, 300_000);
