import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { strategicPatch } from '../../activities/clients';
import { kubeClients, testNamespace, until } from '../../harness/kube';
import { createSmokeActivities } from '../../harness/smoke-activities';
import { smokeJobWorkflow } from '../../harness/smoke-workflow';

const { kc, core } = kubeClients();
let namespace: string;

beforeAll(async () => {
  namespace = await testNamespace(core, 'smoke');
});

afterAll(async () => {
  await core.deleteNamespace({ name: namespace });
});

async function runSmokeWorkflow(node: string, failStage?: string): Promise<string> {
  const taskQueue = `smoke-${randomUUID()}`;
  const workerConnection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
  try {
    const worker = await Worker.create({
      connection: workerConnection,
      taskQueue,
      workflowsPath: require.resolve('../../harness/smoke-workflow'),
      activities: createSmokeActivities(kc),
    });
    const client = new Client({ connection });
    return await worker.runUntil(
      client.workflow.execute(smokeJobWorkflow, {
        taskQueue,
        workflowId: `smoke/${node}/${randomUUID()}`,
        args: [namespace, node, failStage],
      }),
    );
  } finally {
    await connection.close();
    await workerConnection.close();
  }
}

test('a workflow activity runs a Job on a fake node and sees it Complete', async () => {
  await expect(runSmokeWorkflow('node-001')).resolves.toBe('Complete');
  const pods = await core.listNamespacedPod({ namespace, fieldSelector: 'spec.nodeName=node-001' });
  expect(pods.items.map((p) => p.status?.phase)).toContain('Succeeded');
});

test('a Job whose pods fail ends Failed with BackoffLimitExceeded', async () => {
  await expect(runSmokeWorkflow('node-002', 'apply')).resolves.toBe('Failed:BackoffLimitExceeded');
  const pods = await core.listNamespacedPod({ namespace, fieldSelector: 'spec.nodeName=node-002' });
  // backoffLimit 1: the first pod and one retry, both failed.
  expect(pods.items.filter((p) => p.status?.phase === 'Failed')).toHaveLength(2);
});

test('a simulated reboot interrupt gives the node a new boot ID and a NotReady spell', async () => {
  const node = 'node-003';
  const bootIdOf = async () => (await core.readNode({ name: node })).status?.nodeInfo?.bootID;
  const readyOf = async () =>
    (await core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
  const before = await bootIdOf();
  expect(before).toBeTruthy();
  const interrupt = Buffer.from(JSON.stringify({ type: 'node_restart' })).toString('base64');
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'reboot-node-003', labels: { 'keelson.dev/stage': 'interrupt' } },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        containers: [
          {
            name: 'interrupt',
            image: 'registry.example/agent:6.4.1',
            args: ['interrupt', '/root', '/var/lib/skyhook', interrupt],
            env: [{ name: 'KEELSON_SIM_REBOOT_SECONDS', value: '3' }],
          },
        ],
      },
    },
  });
  const after = await until('a new boot ID', async () => {
    const id = await bootIdOf();
    return id !== before ? id : undefined;
  });
  expect(after).not.toBe(before);
  expect(await readyOf()).toBe('False');
  await until('Ready again', async () => ((await readyOf()) === 'True' ? true : undefined), 20_000);
});

test('a fake node the controller-manager marked Unknown (lease lapsed) is made Ready again by kwok', async () => {
  const node = 'node-004';
  const ready = async () => (await core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready');
  const at = new Date().toISOString();
  // What the node lifecycle controller writes when a node's lease is not renewed within its grace period.
  const unknown = {
    type: 'Ready',
    status: 'Unknown',
    reason: 'NodeStatusUnknown',
    message: 'Kubelet stopped posting node status.',
  };
  await core.patchNodeStatus(
    { name: node, body: { status: { conditions: [{ ...unknown, lastHeartbeatTime: at, lastTransitionTime: at }] } } },
    strategicPatch,
  );
  const back = await until('Ready again', async () => {
    const c = await ready();
    return c?.status === 'True' ? c : undefined;
  });
  expect(back.reason).toBe('KubeletReady');
});
