import { caller } from './http';
import { startTestKeelson, eventually, type TestKeelson } from './stack';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { skyhookYaml } from '../../harness/manifests';

// The HTTP API over real HTTP, with a real worker, the local stack's Temporal server and kwok cluster.

let k: TestKeelson;
const NODES = ['node-001', 'node-002'];
const name = `api-r-${Date.now().toString(36)}`;

beforeAll(async () => {
  k = await startTestKeelson('apit');
}, 120_000);

afterAll(async () => {
  await k?.stop();
});

const call = caller(() => k);

test('start a rollout with a YAML manifest: 201 with workflow IDs and UI links, then it completes', async () => {
  const started = Date.now();
  const r = await call(
    'POST',
    '/v1/rollouts',
    skyhookYaml(name, NODES, { base: { version: '1.0.0' } }),
    'application/yaml',
  );
  const answeredMs = Date.now() - started;
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({
    name,
    created: true,
    workflowId: rolloutWorkflowId(k.cluster, name),
    links: {
      rollout: `http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(rolloutWorkflowId(k.cluster, name))}`,
    },
  });
  expect(typeof r.body.runId).toBe('string');
  expect(answeredMs).toBeLessThan(5_000);
  const status = await eventually(async () => {
    const s = await call('GET', `/v1/rollouts/${name}`);
    expect(s.status).toBe(200);
    expect(s.body.status).toBe('complete');
    return s.body;
  }, 90_000);
  console.log(
    `POST /v1/rollouts answered in ${answeredMs} ms; 2 nodes x 1 package complete in ${Date.now() - started} ms`,
  );
  expect(Object.keys(status.nodes).sort()).toEqual(NODES);
  for (const node of NODES) {
    expect(status.nodes[node]).toMatchObject({
      status: 'complete',
      packages: { base: { version: '1.0.0', stage: 'config', state: 'complete', restarts: 0 } },
    });
    expect(status.links.nodeWorkflows[node]).toContain(encodeURIComponent(nodeWorkflowId(k.cluster, node)));
  }
});

test('the same manifest again (YAML or JSON): 200 with the same IDs; a different spec: 409', async () => {
  const first = await call('GET', `/v1/rollouts/${name}`);
  const again = await call(
    'POST',
    '/v1/rollouts',
    skyhookYaml(name, NODES, { base: { version: '1.0.0' } }),
    'text/yaml',
  );
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({
    name,
    created: false,
    workflowId: first.body.workflowId,
    runId: first.body.runId,
  });
  const asJson = {
    apiVersion: 'skyhook.nvidia.com/v1alpha1',
    kind: 'Skyhook',
    metadata: { name },
    spec: {
      interruptionBudget: { percent: 100 },
      packages: {
        base: {
          version: '1.0.0',
          image: 'registry.example/keelson/base',
          env: [{ name: 'KEELSON_SIM_SECONDS', value: '1' }],
        },
      },
      nodeSelectors: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: NODES }] },
    },
  };
  const json = await call('POST', '/v1/rollouts', asJson);
  expect(json.status).toBe(200);
  expect(json.body.runId).toBe(first.body.runId);
  const other = await call(
    'POST',
    '/v1/rollouts',
    skyhookYaml(name, NODES, { base: { version: '1.1.0' } }),
    'application/yaml',
  );
  expect(other.status).toBe(409);
  expect(other.body.error).toBe('conflict');
  expect(other.body.message).toContain(`PUT /v1/rollouts/${name}`);
});

test('GET /v1/rollouts lists the running rollout with its published status', async () => {
  const entry = await eventually(async () => {
    const r = await call('GET', '/v1/rollouts');
    expect(r.status).toBe(200);
    const found = (r.body.rollouts as { name: string; status: string }[]).find((x) => x.name === name);
    expect(found?.status).toBe('complete');
    return found!;
  }, 30_000);
  expect(entry).toMatchObject({ workflowId: rolloutWorkflowId(k.cluster, name), packages: ['base'] });
});

test('GET /v1/nodes/:node shows the rollout and its packages on the node; unknown node: 404', async () => {
  const r = await call('GET', `/v1/nodes/${NODES[0]}`);
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({
    node: NODES[0],
    workflowId: nodeWorkflowId(k.cluster, NODES[0]!),
    rollouts: {
      [name]: { status: 'complete', packages: { base: { version: '1.0.0', stage: 'config', state: 'complete' } } },
    },
  });
  const missing = await call('GET', '/v1/nodes/node-999');
  expect(missing.status).toBe(404);
  expect(missing.body.error).toBe('not_found');
});

test('PUT updates the spec: generation 2 and the new version everywhere; the same spec again changes nothing', async () => {
  const r = await call(
    'PUT',
    `/v1/rollouts/${name}`,
    skyhookYaml(name, NODES, { base: { version: '1.1.0' } }),
    'application/yaml',
  );
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ name, changed: true, generation: 2 });
  const status = await eventually(async () => {
    const s = await call('GET', `/v1/rollouts/${name}`);
    expect(s.body.generation).toBe(2);
    expect(s.body.status).toBe('complete');
    for (const node of NODES) expect(s.body.nodes[node].packages.base.version).toBe('1.1.0');
    return s.body;
  }, 90_000);
  expect(status.packageList).toBe('base:1.1.0');
  const same = await call(
    'PUT',
    `/v1/rollouts/${name}`,
    skyhookYaml(name, NODES, { base: { version: '1.1.0' } }),
    'application/yaml',
  );
  expect(same.status).toBe(200);
  expect(same.body).toMatchObject({ changed: false, generation: 2 });
  const wrongName = await call(
    'PUT',
    `/v1/rollouts/${name}`,
    skyhookYaml('another', NODES, { base: { version: '1.1.0' } }),
    'application/yaml',
  );
  expect(wrongName.status).toBe(400);
  expect(wrongName.body.errors).toEqual([{ path: 'metadata.name', message: `is "another", not "${name}"` }]);
  const unknown = await call(
    'PUT',
    '/v1/rollouts/no-such-rollout',
    skyhookYaml('no-such-rollout', NODES, { base: { version: '1.0.0' } }),
    'application/yaml',
  );
  expect(unknown.status).toBe(404);
});

test('pause and resume: 202, the status shows paused, then not; a missing reason is 400 naming body.reason', async () => {
  const paused = await call('POST', `/v1/rollouts/${name}/pause`, { reason: 'maintenance window', actor: 'alice' });
  expect(paused.status).toBe(202);
  // The actor is the token's name (this test's token has none); what the caller says of itself is kept beside it.
  expect(paused.body).toMatchObject({
    name,
    action: 'pause',
    actor: 'api',
    onBehalfOf: 'alice',
    reason: 'maintenance window',
  });
  await eventually(async () => {
    const s = await call('GET', `/v1/rollouts/${name}`);
    expect(s.body.paused).toBe(true);
    expect(s.body.status).toBe('paused');
  }, 30_000);
  const noReason = await call('POST', `/v1/rollouts/${name}/resume`, {});
  expect(noReason.status).toBe(400);
  expect(noReason.body.errors).toEqual([{ path: 'body.reason', message: 'is required (string)' }]);
  const resumed = await call('POST', `/v1/rollouts/${name}/resume`, { reason: 'done' });
  expect(resumed.status).toBe(202);
  await eventually(async () => {
    const s = await call('GET', `/v1/rollouts/${name}`);
    expect(s.body.paused).toBe(false);
    expect(s.body.status).toBe('complete');
  }, 30_000);
  const unknown = await call('POST', '/v1/rollouts/no-such-rollout/disable', { reason: 'x' });
  expect(unknown.status).toBe(404);
});

test('rerun a package on a node: it runs again and completes; unknown package, rollout or stage are refused', async () => {
  const node = NODES[1]!;
  const r = await call('POST', `/v1/nodes/${node}/rerun`, { rollout: name, package: 'base', stage: 'config' });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ node, action: 'rerun', rollout: name, package: 'base', stage: 'config' });
  await eventually(async () => {
    const s = await call('GET', `/v1/nodes/${node}`);
    expect(s.body.rollouts[name].packages.base).toMatchObject({ version: '1.1.0', stage: 'config', state: 'complete' });
    expect(s.body.rollouts[name].status).toBe('complete');
  }, 60_000);
  const badPkg = await call('POST', `/v1/nodes/${node}/rerun`, { rollout: name, package: 'nope' });
  expect(badPkg.status).toBe(404);
  expect(badPkg.body.message).toContain('has no package nope');
  const badRollout = await call('POST', `/v1/nodes/${node}/rerun`, { rollout: 'nope', package: 'base' });
  expect(badRollout.status).toBe(404);
  const badStage = await call('POST', `/v1/nodes/${node}/rerun`, { rollout: name, package: 'base', stage: 'boot' });
  expect(badStage.status).toBe(400);
  expect(badStage.body.errors[0].path).toBe('body.stage');
});

test('reset a rollout on a node: its packages run from the start and complete again', async () => {
  const node = NODES[0]!;
  const r = await call('POST', `/v1/nodes/${node}/reset`, { rollout: name });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ node, action: 'reset', rollout: name });
  await eventually(async () => {
    const s = await call('GET', `/v1/nodes/${node}`);
    expect(s.body.rollouts[name].status).toBe('complete');
    expect(s.body.rollouts[name].packages.base).toMatchObject({ version: '1.1.0', state: 'complete' });
  }, 60_000);
  const unknown = await call('POST', `/v1/nodes/${node}/reset`, { rollout: 'nope' });
  expect(unknown.status).toBe(404);
});

test('DELETE cancels the rollout: 202, then 404, and its nodes forget it', async () => {
  const r = await call('DELETE', `/v1/rollouts/${name}`);
  expect(r.status).toBe(202);
  expect(r.body).toMatchObject({ name, action: 'delete' });
  await eventually(async () => expect((await call('GET', `/v1/rollouts/${name}`)).status).toBe(404), 30_000);
  await eventually(async () => {
    const s = await call('GET', `/v1/nodes/${NODES[0]}`);
    if (s.status === 200) expect(Object.keys(s.body.rollouts)).not.toContain(name);
    else expect(s.status).toBe(404);
  }, 30_000);
  expect((await call('DELETE', `/v1/rollouts/${name}`)).status).toBe(404);
});
