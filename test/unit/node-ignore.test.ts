import { toValidationErrors, errorMap } from '../../model';
import {
  allSucceeded,
  ignoreLabelKeys,
  IgnoreBodySchema,
  ignoreOutcome,
  stagePodSelector,
  buildStageJob,
  parseRolloutDocuments,
  type JobContext,
} from '../../model';

// `node ignore|unignore` requests and outcomes, the labels it sets, and the selector `logs` finds stage pods with.

const errorsOf = (body: unknown) => {
  const parsed = IgnoreBodySchema.safeParse(body, { error: errorMap });
  return parsed.success ? [] : toValidationErrors('body', parsed.error);
};

test('a request names nodes or a selector; bad names and selectors are refused naming the field', () => {
  expect(errorsOf({ nodes: ['node-001'] })).toEqual([]);
  expect(errorsOf({ selector: 'pool=gpu' })).toEqual([]);
  expect(errorsOf({})).toEqual([{ path: 'body.nodes', message: 'name at least one node, or a selector' }]);
  expect(errorsOf({ nodes: [] })).toEqual([{ path: 'body.nodes', message: 'name at least one node, or a selector' }]);
  expect(errorsOf({ nodes: ['Node_1'] })).toEqual([
    {
      path: 'body.nodes[0]',
      message: expect.stringContaining('must be a DNS subdomain: lowercase letters, digits, "-" and "."'),
    },
  ]);
  expect(errorsOf({ selector: ' ' })).toEqual([
    {
      path: 'body.selector',
      message: expect.stringContaining('must not be empty (an empty selector matches every node)'),
    },
  ]);
  expect(errorsOf({ selector: 'a=b;rm' })).toEqual([
    { path: 'body.selector', message: expect.stringContaining('must be a Kubernetes label selector') },
  ]);
  expect(errorsOf({ nodes: ['n1'], force: true }).map((e) => e.path)).toEqual(['body.force']);
});

test('outcomes: changed or already so; a node not found or failed is not a success', () => {
  expect(ignoreOutcome('ignore', false)).toBe('ignored');
  expect(ignoreOutcome('ignore', true)).toBe('already ignored');
  expect(ignoreOutcome('unignore', false)).toBe('unignored');
  expect(ignoreOutcome('unignore', true)).toBe('not ignored');
  expect(
    allSucceeded([
      { node: 'a', outcome: 'ignored' },
      { node: 'b', outcome: 'already ignored' },
    ]),
  ).toBe(true);
  expect(
    allSucceeded([
      { node: 'a', outcome: 'ignored' },
      { node: 'b', outcome: 'not found' },
    ]),
  ).toBe(false);
  expect(allSucceeded([{ node: 'a', outcome: 'failed', error: 'x' }])).toBe(false);
});

test("the ignore labels: both operators' (each kind honours its own) and the worker's key prefix's, once each", () => {
  expect(ignoreLabelKeys()).toEqual(['skyhook.nvidia.com/ignore', 'nodewright.nvidia.com/ignore']);
  expect(ignoreLabelKeys('skyhook.nvidia.com/')).toEqual(['skyhook.nvidia.com/ignore', 'nodewright.nvidia.com/ignore']);
  expect(ignoreLabelKeys('acme.example/')).toEqual([
    'skyhook.nvidia.com/ignore',
    'nodewright.nvidia.com/ignore',
    'acme.example/ignore',
  ]);
});

test("the stage pod selector matches the labels of that stage's Job pods, and only the stage asked for", () => {
  const { rollouts } = parseRolloutDocuments([
    {
      apiVersion: 'skyhook.nvidia.com/v1alpha1',
      kind: 'Skyhook',
      metadata: { name: 'demo' },
      spec: { packages: { dexter: { version: '1.2.3', image: 'registry.example/dexter' } } },
    },
  ]);
  const ctx: JobContext = {
    rollout: 'demo',
    rolloutUid: 'uid1',
    generation: 1,
    node: 'worker-1',
    namespace: 'keelson',
    agentImage: 'registry.example/agent:1',
    copyDirRoot: '/var/lib/skyhook',
    agentLogRoot: '/var/log/skyhook',
    additionalTolerations: [],
    nodeMetadataConfigMap: 'meta',
    backoffLimit: 3,
    activeDeadlineSeconds: 600,
  };
  const labels = buildStageJob(ctx, rollouts[0]!.spec.packages['dexter']!, 'apply').spec.template.metadata.labels;
  const matches = (selector: string) =>
    selector.split(',').every((req) => {
      const [k, v] = req.split('=');
      return labels[k!] === v;
    });
  expect(matches(stagePodSelector({ rollout: 'demo', package: 'dexter', node: 'worker-1' }))).toBe(true);
  expect(matches(stagePodSelector({ rollout: 'demo', package: 'dexter', node: 'worker-1', stage: 'apply' }))).toBe(
    true,
  );
  expect(matches(stagePodSelector({ rollout: 'demo', package: 'dexter', node: 'worker-1', stage: 'config' }))).toBe(
    false,
  );
  expect(matches(stagePodSelector({ rollout: 'demo', package: 'dexter', node: 'worker-2' }))).toBe(false);
});
