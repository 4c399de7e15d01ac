import { CoreV1Api } from '@kubernetes/client-node';
import { kubeClients } from '../../harness/kube';
import { caller } from './http';
import { eventually, SCOPED, startTestKeelson, type TestKeelson } from './stack';
import { skyhookYaml } from '../../harness/manifests';

// `node ignore|unignore` and `logs` over real HTTP: the API patches the real Node and reads the real stage pod's
// log (kwok serves the simulator's log file as the kubelet would), each route under its scope, the actor in the
// access log; a rollout then leaves the ignored node out.

let k: TestKeelson;
const { core } = kubeClients();
const IGNORED = 'node-000';
const WORKED = 'node-006';
const LABELS = ['skyhook.nvidia.com/ignore', 'nodewright.nvidia.com/ignore'];
const PRINTED = 'driver 5.1 refused: no such device';
const as = (who: keyof typeof SCOPED) => caller(() => ({ url: k.url, token: SCOPED[who].token }));
const reader = as('reader');
const operator = as('operator');
const deployer = as('deployer');
const suffix = Date.now().toString(36);

const labelsOf = async (node: string, c: CoreV1Api = core) =>
  Object.fromEntries(
    Object.entries((await c.readNode({ name: node })).metadata?.labels ?? {}).filter(([key]) =>
      key.endsWith('/ignore'),
    ),
  );

beforeAll(async () => {
  k = await startTestKeelson('nops');
}, 120_000);

afterAll(async () => {
  await operator('POST', '/v1/nodes/unignore', { nodes: [IGNORED] }).catch(() => undefined);
  await k?.stop();
});

test('a read or deploy token is refused ignore and unignore (403 naming operate), and the node keeps its labels', async () => {
  for (const [who, call] of [
    ['reader', reader],
    ['deployer', deployer],
  ] as const) {
    const refused = await call('POST', '/v1/nodes/ignore', { nodes: [IGNORED] });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      `token ${who} (scopes ${SCOPED[who].scopes.join(', ')}) may not call POST /v1/nodes/ignore: it needs scope operate`,
    );
    expect((await call('POST', '/v1/nodes/unignore', { nodes: [IGNORED] })).status).toBe(403);
  }
  expect(await labelsOf(IGNORED)).toEqual({});
});

test('ignore sets both ignore labels, idempotently, one outcome a node; a node that does not exist is named', async () => {
  const first = await operator('POST', '/v1/nodes/ignore', { nodes: [IGNORED, 'no-such-node'] });
  expect(first.status).toBe(200);
  expect(first.body).toEqual({
    action: 'ignore',
    actor: 'operator',
    labels: LABELS,
    results: [
      { node: IGNORED, outcome: 'ignored' },
      { node: 'no-such-node', outcome: 'not found', error: 'node no-such-node does not exist' },
    ],
  });
  expect(await labelsOf(IGNORED)).toEqual({ [LABELS[0]!]: 'true', [LABELS[1]!]: 'true' });
  const again = await operator('POST', '/v1/nodes/ignore', { nodes: [IGNORED] });
  expect(again.body.results).toEqual([{ node: IGNORED, outcome: 'already ignored' }]);
  const logged = k.accessLog.filter((e) => e.route === '/v1/nodes/ignore' && e.status === 200);
  expect(logged.map((e) => [e.actor, e.nodes])).toEqual([
    ['operator', [IGNORED, 'no-such-node']],
    ['operator', [IGNORED]],
  ]);
});

test('bad requests name the field: no node, a bad name, a selector matching nothing', async () => {
  const none = await operator('POST', '/v1/nodes/ignore', {});
  expect(none.status).toBe(400);
  expect(none.body.errors).toEqual([{ path: 'body.nodes', message: 'name at least one node, or a selector' }]);
  const bad = await operator('POST', '/v1/nodes/unignore', { nodes: ['Node_1'] });
  expect(bad.status).toBe(400);
  expect(bad.body.errors[0].path).toBe('body.nodes[0]');
  const nothing = await operator('POST', '/v1/nodes/ignore', { selector: 'keelson.dev/no-such-label=x' });
  expect(nothing.status).toBe(404);
  expect(nothing.body.message).toBe('no node matches selector "keelson.dev/no-such-label=x"');
  const invalid = await operator('POST', '/v1/nodes/ignore', { selector: 'a in b' });
  expect(invalid.status).toBe(400);
  expect(invalid.body.errors[0].path).toBe('body.selector');
});

test('a rollout leaves the ignored node out (blocked, no stage, no node state); unignore by selector lets it in', async () => {
  const name = `ign-${suffix}`;
  const started = await deployer(
    'POST',
    '/v1/rollouts',
    skyhookYaml(name, [WORKED, IGNORED], { base: { version: '1.0.0' } }),
    'application/yaml',
  );
  expect(started.status).toBe(201);
  await eventually(async () => {
    const s = await reader('GET', `/v1/rollouts/${name}`);
    expect([s.body.nodes[WORKED]?.status, s.body.nodes[IGNORED]?.status]).toEqual(['complete', 'blocked']);
  }, 60_000);
  const annotations = (await core.readNode({ name: IGNORED })).metadata?.annotations ?? {};
  expect(Object.keys(annotations).filter((a) => a.endsWith(`_${name}`))).toEqual([]);

  const unignored = await operator('POST', '/v1/nodes/unignore', { selector: `kubernetes.io/hostname=${IGNORED}` });
  expect(unignored.body.results).toEqual([{ node: IGNORED, outcome: 'unignored' }]);
  expect(await labelsOf(IGNORED)).toEqual({});
  const again = await operator('POST', '/v1/nodes/unignore', { nodes: [IGNORED] });
  expect(again.body.results).toEqual([{ node: IGNORED, outcome: 'not ignored' }]);
  await deployer('DELETE', `/v1/rollouts/${name}`);
});

describe('logs', () => {
  const name = `logs-${suffix}`;
  const path = (query: string) => `/v1/nodes/${WORKED}/logs?rollout=${name}&${query}`;

  beforeAll(async () => {
    const body = skyhookYaml(name, [WORKED], {
      ok: { version: '1.0.0' },
      bad: { version: '1.0.0', failStages: 'apply', log: PRINTED },
    });
    expect((await deployer('POST', '/v1/rollouts', body, 'application/yaml')).status).toBe(201);
    await eventually(async () => {
      const s = await reader('GET', `/v1/nodes/${WORKED}`);
      const packages = s.body.rollouts?.[name]?.packages ?? {};
      expect([packages.ok?.state, packages.bad?.state]).toEqual(['complete', 'erroring']);
    }, 90_000);
  }, 120_000);

  test("a read token gets the failed stage pod's log: the failed container, the simulator's output", async () => {
    const r = await reader('GET', path('package=bad'));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(r.headers.get('x-keelson-containers')).toBe('bad-init,bad-apply,bad-applycheck');
    expect(r.headers.get('x-keelson-container')).toBe('bad-apply');
    expect(r.text).toContain(`[keelson-sim] apply started on ${WORKED}`);
    expect(r.text).toContain('[keelson-sim] apply failed: exit code 1');
    expect(r.text).toContain(PRINTED);
    const same = await reader('GET', path('package=bad&stage=apply&tail=1'));
    expect(same.headers.get('x-keelson-pod')).toBe(r.headers.get('x-keelson-pod'));
    expect(same.text).toBe(`${PRINTED}\n`);
    const check = await reader('GET', path('package=bad&container=bad-applycheck'));
    expect(check.headers.get('x-keelson-container')).toBe('bad-applycheck');
    const followed = await reader('GET', path('package=bad&follow=true'));
    expect(followed.status).toBe(200);
    expect(followed.text).toContain(PRINTED);
    const logged = k.accessLog.filter((e) => e.route === '/v1/nodes/:node/logs' && e.status === 200);
    expect(logged[0]).toMatchObject({ method: 'GET', actor: 'reader', rollout: name, node: WORKED });
  });

  test("a completed stage's Job is gone: 404 saying so and pointing to the node's recorded outcome", async () => {
    const r = await reader('GET', path('package=ok'));
    expect(r.status).toBe(404);
    expect(r.body.message).toBe(
      `no stage Job pod of package ok of rollout ${name} on node ${WORKED} in namespace ${k.namespace}: ` +
        "the stage has not started there, or its Job is gone (a completed stage's Job is deleted once its outcome " +
        "is recorded, a failed one after the retention time). Kept: the recorded outcome, with a failed stage's " +
        `log tail, in \`keelson node status ${WORKED}\``,
    );
    const stage = await reader('GET', path('package=bad&stage=config'));
    expect(stage.status).toBe(404);
    expect(stage.body.message).toContain('package bad of rollout');
    expect(stage.body.message).toContain(', stage config,');
  });

  test('follow streams a running container until it ends', async () => {
    const slow = `follow-${suffix}`;
    const node = 'node-003';
    const body = skyhookYaml(slow, [node], {
      slow: { version: '1.0.0', simSeconds: 8, failStages: 'apply', log: PRINTED },
    });
    expect((await deployer('POST', '/v1/rollouts', body, 'application/yaml')).status).toBe(201);
    await eventually(async () => {
      const pods = await core.listNamespacedPod({ namespace: k.namespace, labelSelector: 'keelson.dev/package=slow' });
      expect(pods.items.map((p) => p.status?.phase)).toContain('Running');
    }, 60_000);
    const started = Date.now();
    const query = `rollout=${slow}&package=slow&container=slow-applycheck&follow=true`;
    const r = await reader('GET', `/v1/nodes/${node}/logs?${query}`);
    expect(r.status).toBe(200);
    // Open while the container ran: the end of the run, then its last lines, came down the same answer.
    expect(Date.now() - started).toBeGreaterThan(3_000);
    expect(r.text).toContain(`[keelson-sim] apply started on ${node}`);
    expect(r.text).toContain(PRINTED);
    await deployer('DELETE', `/v1/rollouts/${slow}`);
  });

  test('bad queries name the field; operate and deploy tokens are refused', async () => {
    const tail = await reader('GET', path('package=bad&tail=0'));
    expect(tail.status).toBe(400);
    expect(tail.body.errors).toEqual([
      { path: 'query.tail', message: 'must be a whole number of lines from 1 to 100000' },
    ]);
    const stage = await reader('GET', path('package=bad&stage=install'));
    expect(stage.status).toBe(400);
    expect(stage.body.errors[0].path).toBe('query.stage');
    const container = await reader('GET', path('package=bad&container=nope'));
    expect(container.status).toBe(400);
    expect(container.body.errors[0].message).toContain('"nope" is not a container of pod');
    const missing = await reader('GET', `/v1/nodes/${WORKED}/logs?package=bad`);
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].path).toBe('query.rollout');
    for (const call of [operator, deployer]) {
      const refused = await call('GET', path('package=bad'));
      expect(refused.status).toBe(403);
      expect(refused.body.message).toContain('it needs scope read');
    }
  });
});
