import { z } from 'zod';
import {
  DeploymentPolicySchema,
  IgnoreAnswerSchema,
  IgnoreBodySchema,
  RolloutSpecSchema,
  SkyhookManifestSchema,
  StatusSchema,
} from '../model';
import { ControlBodySchema, ErrorBodySchema, LogsQuerySchema, RerunBodySchema, ResetBodySchema } from './schemas';

// The OpenAPI 3.1 document of the API, generated from the zod schemas the API validates with.

const json = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});
const ok = (description: string, schema: object = { type: 'object' }) => ({
  description,
  content: { 'application/json': { schema } },
});
const jsonBody = (name: string) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const nameParam = { name: 'name', in: 'path', required: true, schema: { type: 'string' }, description: 'rollout name' };
const nodeParam = { name: 'node', in: 'path', required: true, schema: { type: 'string' }, description: 'node name' };
const common = {
  '400': errorResponse('invalid request: `errors` names each field path'),
  '401': errorResponse('missing or wrong bearer token'),
  '403': errorResponse("the token lacks the route's scope (read, operate or deploy; docs/api.md)"),
  '503': errorResponse('Temporal, the worker or Kubernetes did not answer'),
};
const manifestBody = {
  required: true,
  description: 'One Skyhook or NodeWright manifest, with the DeploymentPolicy documents it names',
  content: {
    'application/yaml': { schema: { type: 'string' } },
    'text/yaml': { schema: { type: 'string' } },
    'application/json': {
      schema: {
        oneOf: [
          ref('RolloutManifest'),
          { type: 'array', items: { oneOf: [ref('RolloutManifest'), ref('DeploymentPolicy')] } },
        ],
      },
    },
  },
};

function ignore(action: string, effect: string) {
  return {
    post: {
      summary: `${action} nodes: ${effect}; idempotent, one outcome a node`,
      requestBody: jsonBody('IgnoreBody'),
      responses: {
        '200': ok("each node's outcome (a node that does not exist is `not found`)", ref('IgnoreAnswer')),
        '404': errorResponse('the selector matches no node'),
        ...common,
      },
    },
  };
}

/** The query parameters of the logs route, from its schema. */
function logsParameters() {
  const schema = json(LogsQuerySchema) as { properties: Record<string, object>; required?: string[] };
  return Object.entries(schema.properties).map(([name, s]) => ({
    name,
    in: 'query',
    required: (schema.required ?? []).includes(name),
    schema: s,
  }));
}

function control(action: string, effect: string) {
  return {
    post: {
      summary: `${action} a rollout: ${effect}`,
      parameters: [nameParam],
      requestBody: jsonBody('ControlBody'),
      responses: { '202': ok(`${action} sent`), '404': errorResponse('no running rollout of that name'), ...common },
    },
  };
}

export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keelson API',
      version: '1',
      description: 'Start and steer rollouts of host packages across Kubernetes nodes (Temporal workflows)',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        RolloutManifest: json(SkyhookManifestSchema),
        DeploymentPolicy: json(DeploymentPolicySchema),
        RolloutSpec: json(RolloutSpecSchema),
        Status: json(StatusSchema),
        ControlBody: json(ControlBodySchema),
        RerunBody: json(RerunBodySchema),
        ResetBody: json(ResetBodySchema),
        IgnoreBody: json(IgnoreBodySchema),
        IgnoreAnswer: json(IgnoreAnswerSchema),
        Error: json(ErrorBodySchema),
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/rollouts': {
        post: {
          summary: 'Start a rollout (idempotent: the same name and spec answer 200 with the same IDs)',
          requestBody: manifestBody,
          responses: {
            '201': ok('started: workflow IDs and Temporal UI links'),
            '200': ok('already running with this spec: the same IDs'),
            '409': errorResponse('a rollout of that name runs with a different spec: use PUT'),
            '413': errorResponse('body too large'),
            '415': errorResponse('unsupported content type'),
            ...common,
          },
        },
        get: { summary: 'List running rollouts', responses: { '200': ok('rollouts'), ...common } },
      },
      '/v1/rollouts/{name}': {
        get: {
          summary: 'Skyhook-compatible status of a rollout',
          parameters: [nameParam],
          responses: { '200': ok('status'), '404': errorResponse('no running rollout of that name'), ...common },
        },
        put: {
          summary: "Update a running rollout's spec",
          parameters: [nameParam],
          requestBody: manifestBody,
          responses: {
            '200': ok('updated (changed: false when the spec was the same)'),
            '404': errorResponse('no running rollout'),
            ...common,
          },
        },
        delete: {
          summary: 'Delete a rollout: its workflow is cancelled and its nodes forget it',
          parameters: [nameParam],
          responses: {
            '202': ok('cancelled, and ended unless it took over 30 s'),
            '404': errorResponse('no running rollout'),
            ...common,
          },
        },
      },
      '/v1/rollouts/{name}/pause': control('pause', 'in-flight stage Jobs are suspended, no new stage starts'),
      '/v1/rollouts/{name}/resume': control('resume', 'undoes pause'),
      '/v1/rollouts/{name}/disable': control('disable', 'at least as strong as pause'),
      '/v1/rollouts/{name}/enable': control('enable', 'undoes disable'),
      '/v1/rollouts/{name}/reset-batches': {
        post: {
          summary:
            "Reset a rollout's batches (Skyhook's deployment-policy reset): every compartment starts again from " +
            'batch 1, a halted one included; nodes in flight are not interrupted',
          parameters: [nameParam],
          requestBody: jsonBody('ControlBody'),
          responses: {
            '200': ok("reset: each compartment's batch state after it, and the generation"),
            '404': errorResponse('no running rollout of that name'),
            ...common,
          },
        },
      },
      '/v1/nodes/{node}': {
        get: {
          summary: 'What the node workflow holds for every rollout on the node',
          parameters: [nodeParam],
          responses: { '200': ok('node state'), '404': errorResponse('no node workflow for that node'), ...common },
        },
      },
      '/v1/nodes/{node}/rerun': {
        post: {
          summary: 'Run a package again on a node (from its first stage, or one stage)',
          parameters: [nodeParam],
          requestBody: jsonBody('RerunBody'),
          responses: {
            '200': ok('rerun accepted'),
            '404': errorResponse('unknown node, rollout or package'),
            ...common,
          },
        },
      },
      '/v1/nodes/{node}/reset': {
        post: {
          summary: "Forget a rollout's package entries on a node; its packages run from the start",
          parameters: [nodeParam],
          requestBody: jsonBody('ResetBody'),
          responses: { '200': ok('reset done'), '404': errorResponse('unknown node or rollout'), ...common },
        },
      },
      '/v1/nodes/ignore': ignore('ignore', 'set the ignore labels, so no rollout admits them'),
      '/v1/nodes/unignore': ignore('unignore', 'remove the ignore labels'),
      '/v1/nodes/{node}/logs': {
        get: {
          summary: "The log of a package stage's Job pod on the node (without stage: the latest stage with a pod)",
          parameters: [nodeParam, ...logsParameters()],
          responses: {
            '200': {
              description:
                'the log as text; headers x-keelson-pod, x-keelson-container, x-keelson-containers, and ' +
                'x-keelson-waiting when the container has not started (empty body)',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
            '404': errorResponse(
              'no pod: the stage has not started, or its Job is gone (the message says what is kept)',
            ),
            ...common,
          },
        },
      },
      '/openapi.json': { get: { summary: 'This document', responses: { '200': ok('OpenAPI 3.1') } } },
      '/healthz': {
        get: {
          summary: 'Liveness and Temporal reachability (no auth)',
          security: [],
          responses: { '200': ok('ok'), '503': errorResponse('Temporal unreachable') },
        },
      },
      '/metrics': { get: { summary: 'Prometheus metrics', responses: { '200': { description: 'text exposition' } } } },
    },
  };
}
