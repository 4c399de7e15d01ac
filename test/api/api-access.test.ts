import { WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { rolloutFromBody } from '../../api/manifest-body';
import type { temporal } from '@temporalio/proto';
import { nodeWorkflowId, rolloutWorkflowId } from '../../model/workflow-ids';
import { updateSpecUpdate } from '../../workflows/messages';
import { caller } from './http';
import { eventually, SCOPED, startTestKeelson, type TestKeelson } from './stack';
import { skyhookYaml } from '../../harness/manifests';

// Scoped tokens over real HTTP with a real worker: each route takes its scope, the actor is the token's name, kept
// in the workflow's history (start memo, update and signal arguments, cancel reason), shown by the status and named
// by the access log.

let k: TestKeelson;
const NODES = ['node-004'];
const name = `access-${Date.now().toString(36)}`;
const as = (who: keyof typeof SCOPED) => caller(() => ({ url: k.url, token: SCOPED[who].token }));
const reader = as('reader');
const operator = as('operator');
const deployer = as('deployer');
const prometheus = as('prometheus');

beforeAll(async () => {
  k = await startTestKeelson('apia', { policy: { KEELSON_IMAGE_ALLOWED_PREFIXES: 'registry.example/keelson/' } });
}, 120_000);

afterAll(async () => {
  await k?.stop();
});

const yaml = (version: string) => skyhookYaml(name, NODES, { base: { version } });

/** The JSON values a history event carries (payloads are JSON-encoded). */
function decoded(payloads: temporal.api.common.v1.IPayload[] | null | undefined): unknown[] {
  return (payloads ?? []).map((p) => JSON.parse(Buffer.from(p.data!).toString('utf8')));
}

test('a read token is refused a start (403 naming the scope it needs), and steering; it reads status and metrics', async () => {
  const start = await reader('POST', '/v1/rollouts', yaml('1.0.0'), 'application/yaml');
  expect(start.status).toBe(403);
  expect(start.body).toEqual({
    error: 'forbidden',
    message: 'token reader (scopes read) may not call POST /v1/rollouts: it needs scope deploy',
  });
  expect((await reader('GET', `/v1/rollouts/${name}`)).status).toBe(404);
  await expect(k.temporal.workflow.getHandle(rolloutWorkflowId(k.cluster, name)).describe()).rejects.toThrow(
    WorkflowNotFoundError,
  );
  const pause = await reader('POST', `/v1/rollouts/${name}/pause`, { reason: 'x' });
  expect(pause.status).toBe(403);
  expect(pause.body.message).toContain('it needs scope operate');
  expect((await reader('GET', '/v1/rollouts')).status).toBe(200);
  expect((await reader('GET', '/metrics')).status).toBe(200);
  expect((await prometheus('GET', '/metrics')).status).toBe(200);
  expect((await prometheus('GET', '/v1/rollouts')).status).toBe(403);
  expect((await operator('POST', '/v1/rollouts', yaml('1.0.0'), 'application/yaml')).status).toBe(403);
  expect((await deployer('POST', `/v1/nodes/${NODES[0]}/reset`, { rollout: name })).status).toBe(403);
  expect((await deployer('GET', `/v1/rollouts/${name}`)).status).toBe(403);
  // Refused before its body is read: the log names the actor, and the rollout of the path when there is one.
  const refused = k.accessLog.filter((e) => e.actor === 'reader' && e.status === 403);
  expect(refused.map((e) => [e.method, e.route, e.rollout])).toEqual([
    ['POST', '/v1/rollouts', undefined],
    ['POST', '/v1/rollouts/:name/pause', name],
  ]);
});

test('the actor is the token name: in the start memo, the update and signal arguments, the cancel reason, the status and the access log', async () => {
  const started = await deployer('POST', '/v1/rollouts', yaml('1.0.0'), 'application/yaml');
  expect(started.status).toBe(201);
  const startEntry = k.accessLog.find((e) => e.method === 'POST' && e.route === '/v1/rollouts' && e.status === 201);
  expect(startEntry).toEqual({
    time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    method: 'POST',
    route: '/v1/rollouts',
    status: 201,
    actor: 'deployer',
    rollout: name,
    durationMs: expect.any(Number),
  });

  const paused = await operator('POST', `/v1/rollouts/${name}/pause`, { reason: 'change freeze', actor: 'bob@laptop' });
  expect(paused.status).toBe(202);
  expect(paused.body).toMatchObject({ actor: 'operator', onBehalfOf: 'bob@laptop', reason: 'change freeze' });
  const updated = await deployer('PUT', `/v1/rollouts/${name}`, yaml('1.1.0'), 'application/yaml');
  expect(updated.status).toBe(200);
  expect(updated.body.generation).toBe(2);
  await eventually(async () => {
    const s = await reader('GET', `/v1/rollouts/${name}`);
    expect(s.body.startedBy).toBe('deployer');
    expect(s.body.owner).toBe('api');
    expect(s.body.lastChange).toEqual({ action: 'update', actor: 'deployer', generation: 2 });
  }, 30_000);
  expect((await operator('POST', `/v1/rollouts/${name}/resume`, { reason: 'freeze over' })).status).toBe(202);
  await eventually(async () => {
    const s = await reader('GET', `/v1/rollouts/${name}`);
    expect(s.body.lastChange).toEqual({ action: 'resume', actor: 'operator', reason: 'freeze over', generation: 2 });
  }, 30_000);
  // The pause may have come before the rollout admitted the node: a rerun needs the node to hold the rollout.
  await eventually(async () => {
    const node = await reader('GET', `/v1/nodes/${NODES[0]}`);
    expect(node.body.rollouts?.[name]).toBeDefined();
  }, 30_000);
  const rerun = await operator('POST', `/v1/nodes/${NODES[0]}/rerun`, { rollout: name, package: 'base' });
  expect(rerun.status).toBe(200);
  expect(rerun.body.actor).toBe('operator');
  const deleted = await deployer('DELETE', `/v1/rollouts/${name}`);
  expect(deleted.status).toBe(202);
  expect(deleted.body.actor).toBe('deployer');

  const handle = k.temporal.workflow.getHandle(rolloutWorkflowId(k.cluster, name), started.body.runId as string);
  expect((await handle.describe()).memo).toEqual({ startedBy: 'deployer', owner: 'api' });
  const { events } = await handle.fetchHistory();
  const signals = events!
    .filter((e) => e.workflowExecutionSignaledEventAttributes)
    .map((e) => e.workflowExecutionSignaledEventAttributes!)
    .filter((a) => a.signalName === 'pause' || a.signalName === 'resume')
    .map((a) => [a.signalName, ...decoded(a.input?.payloads)]);
  expect(signals).toEqual([
    ['pause', { actor: 'operator', reason: 'change freeze', onBehalfOf: 'bob@laptop' }],
    ['resume', { actor: 'operator', reason: 'freeze over' }],
  ]);
  const update = events!.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes)!
    .workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!;
  expect(update.name).toBe('updateSpec');
  expect(decoded(update.args?.payloads)[1]).toEqual({ actor: 'deployer' });
  const cancel = events!.find((e) => e.workflowExecutionCancelRequestedEventAttributes)!;
  expect(cancel.workflowExecutionCancelRequestedEventAttributes!.cause).toBe('deleted by deployer');

  const nodeHistory = await k.temporal.workflow.getHandle(nodeWorkflowId(k.cluster, NODES[0]!)).fetchHistory();
  const rerunArgs = nodeHistory
    .events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'rerun')
    .map((e) => decoded(e.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args?.payloads)[0]);
  expect(rerunArgs).toEqual([{ rollout: name, package: 'base', actor: 'operator' }]);

  const actors = k.accessLog
    .filter((e) => e.rollout === name)
    .map((e) => `${e.method} ${e.route} ${e.actor} ${e.status}`);
  expect(actors).toEqual(
    expect.arrayContaining([
      `POST /v1/rollouts/:name/pause operator 202`,
      `PUT /v1/rollouts/:name deployer 200`,
      `POST /v1/nodes/:node/rerun operator 200`,
      `DELETE /v1/rollouts/:name deployer 202`,
      `GET /v1/rollouts/:name reader 200`,
    ]),
  );
});

test('an image outside the policy: the API refuses it (400 naming the field); started straight through Temporal, the worker fails it', async () => {
  const outsider = `outside-${Date.now().toString(36)}`;
  const body = skyhookYaml(outsider, NODES, { base: { version: '1.0.0', image: 'evil.example/keelson/base' } });
  const refused = await deployer('POST', '/v1/rollouts', body, 'application/yaml');
  expect(refused.status).toBe(400);
  expect(refused.body.errors).toEqual([
    {
      path: `Skyhook/${outsider}.spec.packages.base.image`,
      message:
        '"evil.example/keelson/base" is outside the image policy; allowed: registry.example/keelson/ ' +
        '(KEELSON_IMAGE_ALLOWED_PREFIXES)',
    },
  ]);
  const put = await deployer('PUT', `/v1/rollouts/${outsider}`, body, 'application/yaml');
  expect(put.status).toBe(400);
  expect(put.body.errors[0].path).toBe(`Skyhook/${outsider}.spec.packages.base.image`);

  // The client library starts workflows itself, as anyone with access to the Temporal namespace can.
  const started = await k.keelson.startRollout(rolloutFromBody(body));
  const handle = k.temporal.workflow.getHandle(started.workflowId, started.runId);
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect(cause.type).toBe('InvalidSpec');
  expect(cause.message).toContain('spec.packages.base.image: "evil.example/keelson/base" is outside the image policy');
  const { events } = await handle.fetchHistory();
  expect(events!.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'listNodes')).toEqual([]);
});

test("an update the worker refuses is not the rollout's spec: applying the running spec again changes nothing", async () => {
  const kept = `kept-${Date.now().toString(36)}`;
  const body = skyhookYaml(kept, NODES, { base: { version: '1.0.0' } });
  expect((await deployer('POST', '/v1/rollouts', body, 'application/yaml')).status).toBe(201);
  // Straight through Temporal, as the API would refuse it: the worker accepts the update, reads its policy and refuses.
  const outside = rolloutFromBody(
    skyhookYaml(kept, NODES, { base: { version: '2.0.0', image: 'evil.example/x/base' } }),
  );
  const handle = k.temporal.workflow.getHandle(rolloutWorkflowId(k.cluster, kept));
  const refused = await handle.executeUpdate(updateSpecUpdate, { args: [outside, { actor: 'mallory' }] }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
  expect((refused as WorkflowUpdateFailedError).cause?.message).toContain('outside the image policy');
  const again = await k.keelson.applyRollout(rolloutFromBody(body));
  expect(again.action).toBe('unchanged');
  await k.keelson.deleteRollout(kept);
});

test('POST /v1/rollouts/:name/reset-batches takes operate: a read token is refused; the actor and reason are kept', async () => {
  const batches = `batches-${Date.now().toString(36)}`;
  const body = skyhookYaml(batches, NODES, { base: { version: '1.0.0' } });
  expect((await deployer('POST', '/v1/rollouts', body, 'application/yaml')).status).toBe(201);
  await eventually(async () => {
    const s = await reader('GET', `/v1/rollouts/${batches}`);
    expect(s.body.compartmentStatuses?.__default__?.batchState.currentBatch).toBe(2);
  }, 60_000);
  const path = `/v1/rollouts/${batches}/reset-batches`;

  const refused = await reader('POST', path, { reason: 'start over' });
  expect(refused.status).toBe(403);
  expect(refused.body).toEqual({
    error: 'forbidden',
    message: `token reader (scopes read) may not call POST /v1/rollouts/:name/reset-batches: it needs scope operate`,
  });
  expect((await deployer('POST', path, { reason: 'start over' })).status).toBe(403);
  const noReason = await operator('POST', path, {});
  expect(noReason.status).toBe(400);
  expect((noReason.body.errors as { path: string }[]).map((e) => e.path)).toEqual(['body.reason']);
  expect((await operator('POST', '/v1/rollouts/no-such-rollout/reset-batches', { reason: 'x' })).status).toBe(404);
  const untouched = await reader('GET', `/v1/rollouts/${batches}`);
  expect(untouched.body.compartmentStatuses.__default__.batchState.currentBatch).toBe(2);

  const reset = await operator('POST', path, { reason: 'start over', actor: 'bob@laptop' });
  expect(reset.status).toBe(200);
  expect(reset.body).toMatchObject({
    name: batches,
    action: 'reset-batches',
    actor: 'operator',
    reason: 'start over',
    onBehalfOf: 'bob@laptop',
    generation: 1,
    compartments: {
      __default__: { currentBatch: 1, consecutiveFailures: 0, shouldStop: false, completedNodes: 1, failedNodes: 0 },
    },
  });
  const status = await reader('GET', `/v1/rollouts/${batches}`);
  expect(status.body.lastChange).toEqual({
    action: 'reset-batches',
    actor: 'operator',
    reason: 'start over',
    onBehalfOf: 'bob@laptop',
    generation: 1,
  });
  expect(status.body.compartmentStatuses.__default__.batchState.currentBatch).toBe(1);

  const { events } = await k.temporal.workflow.getHandle(rolloutWorkflowId(k.cluster, batches)).fetchHistory();
  const resets = events!
    .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input)
    .filter((input) => input?.name === 'resetBatchState')
    .map((input) => decoded(input!.args?.payloads));
  expect(resets).toEqual([[{ actor: 'operator', reason: 'start over', onBehalfOf: 'bob@laptop' }]]);
  expect(k.accessLog.filter((e) => e.rollout === batches && e.route === '/v1/rollouts/:name/reset-batches')).toEqual(
    expect.arrayContaining([expect.objectContaining({ actor: 'reader', status: 403 })]),
  );
  await k.keelson.deleteRollout(batches);
});
