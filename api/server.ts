import { PassThrough } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { errorMap, IgnoreActionSchema, IgnoreBodySchema, toValidationErrors } from '../model';
import { missingScopes, routeAccess, type ApiToken } from '../model/access';
import { OPEN_IMAGE_POLICY, type ImagePolicy } from '../model/image-policy';
import { InvalidError, KeelsonError, type KeelsonClient, type KeelsonErrorKind } from '../client';
import type { AccessLog } from './access-log';
import { tokenChecker } from './auth';
import type { ClusterAccess } from './cluster';
import { setIgnored, targetNodes } from './node-ignore';
import { rolloutFromBody } from './manifest-body';
import { createMetrics } from './metrics';
import { openApiDocument } from './openapi';
import {
  ControlBodySchema,
  LogsQuerySchema,
  NameParamsSchema,
  NodeParamsSchema,
  RerunBodySchema,
  ResetBodySchema,
} from './schemas';
import { followLog, readLog, stagePod, untilStarted } from './stage-logs';
import { containerEnded, logContainer } from './stage-pod';

// The HTTP API (docs/api.md) over the client library. Every handler validates, makes one or two Temporal calls
// and answers: nothing waits on a rollout's progress. Two kinds of route call Kubernetes instead: `node
// ignore|unignore` (Node labels) and `logs` (a stage pod's log), so the token scopes guard them too.

export interface ApiOptions {
  keelson: KeelsonClient;
  /** Kubernetes, for `node ignore|unignore` and `logs`. */
  cluster: ClusterAccess;
  tokens: readonly ApiToken[];
  bodyLimitBytes?: number;
  logger?: boolean;
  /** Receives one entry a request (route, actor, status, rollout, duration). */
  accessLog?: AccessLog;
  /** What rollouts may run; default: anything (the worker's policy still applies). */
  imagePolicy?: ImagePolicy;
}

/** What a request carries from the auth hook to its handler and the access log. */
interface RequestAudit {
  startedAt: bigint;
  token?: ApiToken;
  rollout?: string;
  nodes?: string[];
}

const STATUS: Record<KeelsonErrorKind, number> = { invalid: 400, not_found: 404, conflict: 409, unavailable: 503 };
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

function parse<T>(schema: z.ZodType<T>, value: unknown, base: string): T {
  const parsed = schema.safeParse(value ?? {}, { error: errorMap });
  if (!parsed.success) throw new InvalidError(toValidationErrors(base, parsed.error));
  return parsed.data;
}

function sendError(
  reply: FastifyReply,
  status: number,
  error: string,
  message: string,
  errors?: unknown,
): FastifyReply {
  return reply.code(status).send({ error, message, ...(errors !== undefined && { errors }) });
}

export async function buildApi(opts: ApiOptions): Promise<FastifyInstance> {
  const { keelson, cluster } = opts;
  const imagePolicy = opts.imagePolicy ?? OPEN_IMAGE_POLICY;
  const identify = tokenChecker(opts.tokens);
  const audits = new WeakMap<FastifyRequest, RequestAudit>();
  const audit = (req: FastifyRequest): RequestAudit => {
    let a = audits.get(req);
    if (!a) audits.set(req, (a = { startedAt: process.hrtime.bigint() }));
    return a;
  };
  /** The actor of a request that passed the auth hook. */
  const actorOf = (req: FastifyRequest): string => audit(req).token!.name;
  /** Names the rollout a request is about, for the access log. */
  const about = (req: FastifyRequest, rollout: string) => void (audit(req).rollout = rollout);
  const metrics = createMetrics();
  const openapi = openApiDocument();
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit: opts.bodyLimitBytes ?? 1024 * 1024,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    connectionTimeout: 30_000,
    requestTimeout: 60_000,
  });

  // Every route states who may call it (model/access.ts): one missing from the table is a bug caught at start-up.
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (routeAccess(method, route.url) === undefined)
        throw new Error(`route ${method} ${route.url} has no access rule`);
    }
  });
  app.addContentTypeParser(YAML_TYPES, { parseAs: 'string' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (req, reply) => {
    const a = audit(req);
    // Defined for every route (the onRoute hook); a request no route matches needs a valid token.
    const access = routeAccess(req.method, req.routeOptions.url) ?? 'any';
    if (access === 'public') return;
    const token = identify(req.headers.authorization);
    if (!token) {
      reply.header('www-authenticate', 'Bearer');
      await sendError(reply, 401, 'unauthorized', 'a valid bearer token is required (Authorization: Bearer <token>)');
      return;
    }
    a.token = token;
    const missing = missingScopes(access, token.scopes);
    if (missing.length > 0) {
      await sendError(
        reply,
        403,
        'forbidden',
        `token ${token.name} (scopes ${token.scopes.join(', ')}) may not call ${req.method} ${req.routeOptions.url}: ` +
          `it needs scope ${missing.join(' or ')}`,
      );
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const a = audit(req);
    const seconds = Number(process.hrtime.bigint() - a.startedAt) / 1e9;
    metrics.requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    metrics.duration.observe({ method: req.method, route }, seconds);
    const params = (req.params ?? {}) as { name?: unknown; node?: unknown };
    const body = req.body as { rollout?: unknown } | undefined;
    const rollout =
      a.rollout ??
      (typeof params.name === 'string' ? params.name : typeof body?.rollout === 'string' ? body.rollout : undefined);
    opts.accessLog?.({
      time: new Date().toISOString(),
      method: req.method,
      route,
      status: reply.statusCode,
      actor: a.token?.name ?? null,
      ...(rollout !== undefined && { rollout: rollout.slice(0, 253) }),
      ...(typeof params.node === 'string' && { node: params.node.slice(0, 253) }),
      ...(a.nodes !== undefined && { nodes: a.nodes }),
      durationMs: Math.round(seconds * 1000),
    });
  });

  app.setNotFoundHandler((req, reply) =>
    sendError(reply, 404, 'not_found', `no route ${req.method} ${req.url.split('?')[0]}`),
  );
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    if (err instanceof InvalidError) return sendError(reply, 400, 'invalid', err.message, err.errors);
    if (err instanceof KeelsonError) return sendError(reply, STATUS[err.kind], err.kind, err.message);
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(reply, 413, 'too_large', err.message);
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendError(reply, 415, 'unsupported', `${err.message}; send application/json or application/yaml`);
    }
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      return sendError(reply, 400, 'invalid', err.message, [{ path: 'body', message: err.message }]);
    }
    req.log.error(err);
    return sendError(reply, 500, 'internal', 'internal error; see the API log');
  });

  app.get('/healthz', async (_req, reply) => {
    try {
      await keelson.ping();
      return { status: 'ok', temporal: 'ok' };
    } catch (err) {
      return sendError(
        reply,
        503,
        'unavailable',
        `Temporal does not answer: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  });
  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  app.get('/openapi.json', async () => openapi);

  app.post('/v1/rollouts', async (req, reply) => {
    const spec = rolloutFromBody(req.body, imagePolicy);
    about(req, spec.name);
    const result = await keelson.startRollout(spec, actorOf(req));
    return reply.code(result.created ? 201 : 200).send(result);
  });
  app.get('/v1/rollouts', async () => ({ rollouts: await keelson.listRollouts() }));
  app.get('/v1/rollouts/:name', async (req) => {
    const { name } = parse(NameParamsSchema, req.params, 'params');
    return keelson.rolloutStatus(name);
  });
  app.put('/v1/rollouts/:name', async (req) => {
    const { name } = parse(NameParamsSchema, req.params, 'params');
    const { changed, generation, ref } = await keelson.updateSpec(
      name,
      rolloutFromBody(req.body, imagePolicy),
      actorOf(req),
    );
    return { ...ref, changed, generation };
  });
  app.delete('/v1/rollouts/:name', async (req, reply) => {
    const { name } = parse(NameParamsSchema, req.params, 'params');
    const actor = actorOf(req);
    return reply.code(202).send({ ...(await keelson.deleteRollout(name, actor)), action: 'delete', actor });
  });
  for (const kind of ['pause', 'resume', 'disable', 'enable'] as const) {
    app.post(`/v1/rollouts/:name/${kind}`, async (req, reply) => {
      const { name } = parse(NameParamsSchema, req.params, 'params');
      const body = parse(ControlBodySchema, req.body, 'body');
      const who = { actor: actorOf(req), reason: body.reason, ...(body.actor && { onBehalfOf: body.actor }) };
      const ref = await keelson.control(name, kind, who);
      return reply.code(202).send({ ...ref, action: kind, ...who });
    });
  }

  app.post('/v1/rollouts/:name/reset-batches', async (req) => {
    const { name } = parse(NameParamsSchema, req.params, 'params');
    const body = parse(ControlBodySchema, req.body, 'body');
    const who = { actor: actorOf(req), reason: body.reason, ...(body.actor && { onBehalfOf: body.actor }) };
    return { ...(await keelson.resetBatches(name, who)), action: 'reset-batches', ...who };
  });

  app.get('/v1/nodes/:node', async (req) => {
    const { node } = parse(NodeParamsSchema, req.params, 'params');
    return keelson.nodeStatus(node);
  });
  app.post('/v1/nodes/:node/rerun', async (req) => {
    const { node } = parse(NodeParamsSchema, req.params, 'params');
    const body = parse(RerunBodySchema, req.body, 'body');
    const actor = actorOf(req);
    const done = await keelson.rerun(node, body.rollout, body.package, body.stage, actor);
    return { ...done, action: 'rerun', actor, ...body };
  });
  app.post('/v1/nodes/:node/reset', async (req) => {
    const { node } = parse(NodeParamsSchema, req.params, 'params');
    const body = parse(ResetBodySchema, req.body, 'body');
    const actor = actorOf(req);
    return { ...(await keelson.reset(node, body.rollout, actor)), action: 'reset', actor, ...body };
  });

  for (const action of IgnoreActionSchema.options) {
    app.post(`/v1/nodes/${action}`, async (req) => {
      const body = parse(IgnoreBodySchema, req.body, 'body');
      const actor = actorOf(req);
      const nodes = await targetNodes(cluster, body);
      audit(req).nodes = nodes;
      const results = [];
      for (const node of nodes) results.push(await setIgnored(cluster, action, node));
      return { action, actor, labels: cluster.ignoreLabels, results };
    });
  }
  app.get('/v1/nodes/:node/logs', async (req, reply) => {
    const { node } = parse(NodeParamsSchema, req.params, 'params');
    const q = parse(LogsQuerySchema, req.query, 'query');
    about(req, q.rollout);
    const pod = await stagePod(cluster, { node, ...q });
    const follow = q.follow === 'true';
    const container = follow
      ? await untilStarted(cluster, pod, q.container, () => reply.raw.destroyed)
      : logContainer(pod, q.container);
    reply
      .type('text/plain; charset=utf-8')
      .header('x-keelson-pod', pod.metadata!.name)
      .header('x-keelson-container', container.name)
      .header('x-keelson-containers', container.containers.join(','));
    // No log yet: the answer says why in a header, the body is empty.
    if (container.waiting !== undefined) return reply.header('x-keelson-waiting', container.waiting).send('');
    // A container that has ended has its whole log: nothing to follow.
    if (!follow || containerEnded(pod, container.name))
      return reply.send(await readLog(cluster, pod, container.name, q.tail));
    // A followed log may be quiet for longer than the connection timeout.
    req.socket.setTimeout(0);
    const out = new PassThrough();
    const stream = await followLog(cluster, pod, container.name, out, q.tail);
    reply.raw.once('close', stream.stop);
    return reply.send(out);
  });

  await app.ready();
  return app;
}
