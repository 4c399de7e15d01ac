import { readFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { stackEnv } from '../../deploy/dev/stack';
import { deploymentView } from '../../workers/versioning';
import { eventually, skyhook, useE2E } from './e2e-stack';

// Upgrading Keelson while a rollout runs (docs/operations.md, "Upgrading Keelson"): workers of build v1 of a Worker
// Deployment run the rollout; a worker of build v2 starts, replays every running workflow, makes itself current and
// takes them over; v1 is stopped. The rollout finishes with no workflow task failed, its tasks done by v1 then by
// v2. An old build started again does not take the workflows back.

const deployment = `keelson-upgrade-${Date.now().toString(36)}`;
const e2e = useE2E('upgrade', {
  nodes: 3,
  workerSettings: { KEELSON_WORKER_DEPLOYMENT: deployment, KEELSON_WORKER_BUILD_ID: 'v1' },
});
const ROLLOUT = 'upgrade';
let temporal: Client;

beforeAll(async () => {
  temporal = new Client({ connection: await Connection.connect({ address: stackEnv().TEMPORAL_ADDRESS! }) });
});
afterAll(() => temporal?.connection.close());

const build = (buildId: string) => ({ deploymentName: deployment, buildId });
const currentBecomes = (buildId: string) =>
  eventually(
    `build ${buildId} current`,
    async () => expect((await deploymentView(temporal, build(buildId))).current).toBe(buildId),
    180_000,
  );
const readyz = async (metrics: string) => {
  const res = await fetch(`http://${metrics}/readyz`);
  return `${res.status} ${await res.text()}`;
};

test('a worker upgrade mid-rollout: the new build replays the running workflows, takes them over, and the rollout finishes with no workflow task failed', async () => {
  await currentBecomes('v1');
  // One node at a time, two packages in order: about 90 s of work, so the upgrade lands in the middle.
  const packages = {
    base: { version: '1.0.0', simSeconds: 5 },
    tune: { version: '1.0.0', simSeconds: 5, dependsOn: { base: '1.0.0' } },
  };
  await e2e.start_(ROLLOUT, [skyhook({ name: ROLLOUT, nodes: e2e.nodes, packages, budget: { count: 1 } })]);
  await e2e.statusUntil(ROLLOUT, 'one node complete', (s) => expect(s.completeNodes).toMatch(/^[12]\/3$/), 180_000);

  const v1 = e2e.workers[0]!;
  const v2 = await e2e.startWorker({ KEELSON_WORKER_BUILD_ID: 'v2' });
  await currentBecomes('v2');
  expect((await e2e.status(ROLLOUT)).completeNodes).not.toBe('3/3');
  // Its readiness follows once the worker reads the deployment again after making itself current.
  await eventually('v2 ready', async () =>
    expect(await readyz(v2.metrics)).toBe(`200 build ${deployment}/v2 is current\n`),
  );
  await eventually('v1 out of service', async () =>
    expect(await readyz(v1.metrics)).toBe(
      `503 build ${deployment}/v1 is not current (v2 is); make it so with set-current-version\n`,
    ),
  );
  const log = readFileSync(e2e.workerLog, 'utf8');
  const replayed = /replayed (\d+) running workflows; making \S+\/v2 current \(was v1\)/.exec(log);
  expect(Number(replayed?.[1])).toBeGreaterThanOrEqual(2); // the rollout and at least one node
  v1.process.kill('SIGTERM');

  const status = await e2e.waitComplete(ROLLOUT, 240_000);
  expect(status.completeNodes).toBe('3/3');

  const query = `TaskQueue = '${e2e.taskQueue}'`;
  const builds: Record<string, string[]> = {};
  for await (const { workflowId, runId } of temporal.workflow.list({ query })) {
    const events = (await temporal.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    expect({ workflowId, failed: events.filter((e) => e.workflowTaskFailedEventAttributes).length }).toEqual({
      workflowId,
      failed: 0,
    });
    builds[workflowId] = events.flatMap((e) => {
      const done = e.workflowTaskCompletedEventAttributes;
      return done ? [done.deploymentVersion?.buildId ?? ''] : [];
    });
  }
  const rollout = Object.entries(builds).find(([id]) => id.endsWith(`/rollout/${ROLLOUT}`))![1];
  expect(rollout[0]).toBe('v1');
  expect(rollout.at(-1)).toBe('v2');
  expect(new Set(Object.values(builds).flat())).toEqual(new Set(['v1', 'v2']));

  // v1 started again (a pod restarting late) serves nothing: v2 stays current.
  const again = await e2e.startWorker({ KEELSON_WORKER_BUILD_ID: 'v1' });
  await eventually('v1 started again, not current', async () =>
    expect(await readyz(again.metrics)).toContain(`503 build ${deployment}/v1 is not current (v2 is)`),
  );
  expect((await deploymentView(temporal, build('v1'))).current).toBe('v2');
}, 600_000);
