import {
  applyVersionChanges,
  buildStageJob,
  parseRolloutDocuments,
  RolloutSpecSchema,
  type JobContext,
  type NodeState,
  type RolloutSpec,
} from '../../model';
import { sameSpec } from '../../client/rollouts';
import { newNodeRollout } from '../../workflows/node/node-rollout';
import { DEFAULT_NODE_SETTINGS } from '../../workflows/messages';

// Manifests that Skyhook or NodeWright accept and Keelson once refused (issue 16, "Manifest parity").

type Doc = Record<string, unknown>;
const skyhook = (spec: Doc, metadata: Doc = { name: 'demo' }): Doc => ({
  apiVersion: 'skyhook.nvidia.com/v1alpha1',
  kind: 'Skyhook',
  metadata,
  spec: { nodeSelectors: { matchLabels: { pool: 'gpu' } }, interruptionBudget: { count: 1 }, packages, ...spec },
});
const pkg = (extra: Doc = {}): Doc => ({ version: '1.2.3', image: 'ghcr.io/nvidia/skyhook/agentless', ...extra });
const packages = { base: pkg() };

function parse(...docs: Doc[]) {
  const result = parseRolloutDocuments(docs);
  expect(result.errors).toEqual([]);
  return { rollout: result.rollouts[0]!, warnings: result.warnings };
}

const ctx: JobContext = {
  rollout: 'demo',
  rolloutUid: 'uid1',
  generation: 1,
  node: 'worker-1',
  namespace: 'keelson',
  agentImage: 'nvcr.io/nvidia/skyhook/agent:v6.4.1',
  copyDirRoot: '/var/lib/skyhook',
  agentLogRoot: '/var/log/skyhook',
  additionalTolerations: [],
  nodeMetadataConfigMap: 'demo-worker-1-metadata',
  backoffLimit: 3,
  activeDeadlineSeconds: 600,
};
const packageImage = (rollout: RolloutSpec) =>
  buildStageJob(ctx, rollout.spec.packages['dexter']!, 'apply').spec.template.spec.initContainers[0]!.image;

describe('an image with a tag', () => {
  test('is accepted and the version replaces the tag, as Skyhook does; a warning says what runs', () => {
    const image = 'ghcr.io/nvidia/skyhook/agentless:bogus';
    const { rollout, warnings } = parse(skyhook({ packages: { dexter: pkg({ image }) } }));
    expect(rollout.spec.packages['dexter']!.image).toBe('ghcr.io/nvidia/skyhook/agentless');
    expect(packageImage(rollout)).toBe('ghcr.io/nvidia/skyhook/agentless:1.2.3');
    expect(warnings).toEqual([
      {
        path: 'Skyhook/demo.spec.packages.dexter.image',
        message: `"${image}" has tag "bogus", which the version replaces: runs ghcr.io/nvidia/skyhook/agentless:1.2.3`,
      },
    ]);
  });

  test('with containerSHA: pulled by the digest, as before', () => {
    const sha = `sha256:${'a'.repeat(64)}`;
    const { rollout, warnings } = parse(
      skyhook({ packages: { dexter: pkg({ image: 'registry.local:5000/agentless:old', containerSHA: sha }) } }),
    );
    expect(packageImage(rollout)).toBe(`registry.local:5000/agentless@${sha}`);
    expect(warnings[0]!.message).toMatch(/runs registry\.local:5000\/agentless@sha256:a{64}$/);
  });

  test('the tag equal to the version: no warning; a digest in image: still refused', () => {
    expect(parse(skyhook({ packages: { dexter: pkg({ image: 'example.com/a:1.2.3' }) } })).warnings).toEqual([]);
    const { errors } = parseRolloutDocuments([
      skyhook({ packages: { dexter: pkg({ image: `example.com/a@sha256:${'b'.repeat(64)}` }) } }),
    ]);
    expect(errors).toEqual([
      {
        path: 'Skyhook/demo.spec.packages.dexter.image',
        message: expect.stringMatching(/has a digest: give the repository in image and the digest in containerSHA$/),
      },
    ]);
  });
});

describe('packages: null', () => {
  test('is no packages, so every package installed on a node is uninstalled', () => {
    const { rollout } = parse(skyhook({ packages: null }));
    expect(rollout.spec.packages).toEqual({});
    const installed: NodeState = {
      'dexter|1.2.3': { name: 'dexter', version: '1.2.3', image: 'x', stage: 'config', state: 'complete' },
      'spencer|2.0.0': { name: 'spencer', version: '2.0.0', image: 'y', stage: 'apply', state: 'in_progress' },
    };
    const { state } = applyVersionChanges(rollout.spec.packages, installed);
    expect(Object.values(state).map((e) => [e.name, e.stage, e.state])).toEqual([
      ['dexter', 'uninstall', 'in_progress'],
      ['spencer', 'uninstall', 'in_progress'],
    ]);
  });
});

describe('a field written as null', () => {
  const policyDoc = (spec: Doc): Doc => ({
    apiVersion: 'skyhook.nvidia.com/v1alpha1',
    kind: 'DeploymentPolicy',
    metadata: { name: 'staged' },
    spec,
  });

  test('is absent, as the API server drops it from a Skyhook resource: defaults apply, maps and lists are empty', () => {
    const nulls = {
      env: null,
      configMap: { kept: 'yes', dropped: null },
      configInterrupts: null,
      dependsOn: null,
      interrupt: null,
      resources: null,
      uninstall: null,
      gracefulShutdown: null,
    };
    const written = parse(
      skyhook({
        packages: { dexter: pkg(nulls) },
        nodeSelectors: { matchLabels: { pool: 'gpu' }, matchExpressions: null },
        additionalTolerations: null,
        podNonInterruptLabels: null,
        priority: null,
        sequencing: null,
        deploymentPolicyOptions: null,
        stageTimeout: null,
      }),
    );
    const plain = parse(skyhook({ packages: { dexter: pkg({ configMap: { kept: 'yes' } }) } }));
    expect(written.rollout).toEqual(plain.rollout);
    expect(written.rollout.spec.priority).toBe(200);
  });

  test('in a policy: no compartments, a compartment without a strategy, a budget without its other half', () => {
    const { policies, errors } = parseRolloutDocuments([
      policyDoc({
        resetBatchStateOnCompletion: null,
        default: { budget: { percent: 20, count: null }, strategy: { fixed: { failureThreshold: null } } },
        compartments: null,
      }),
    ]);
    expect(errors).toEqual([]);
    expect(policies[0]!.spec).toEqual({
      resetBatchStateOnCompletion: true,
      default: {
        budget: { percent: 20 },
        strategy: { fixed: { initialBatch: 1, batchThreshold: 100, failureThreshold: null, safetyLimit: 50 } },
      },
      compartments: [],
    });
    const compartment = { name: 'a', selector: { matchLabels: { a: 'b' } }, budget: { count: 1 }, strategy: null };
    const withCompartment = parseRolloutDocuments([
      policyDoc({ default: { budget: { count: 1 }, strategy: { fixed: {} } }, compartments: [compartment] }),
    ]);
    expect(withCompartment.errors).toEqual([]);
    expect(withCompartment.policies[0]!.spec.compartments[0]!.strategy).toBeUndefined();
  });

  test('a required field written as null is missing; a null list item is still refused', () => {
    const { errors } = parseRolloutDocuments([
      skyhook({ packages: { dexter: pkg({ version: null }) }, additionalTolerations: [null] }),
    ]);
    expect(errors).toEqual([
      { path: 'Skyhook/demo.spec.packages.dexter.version', message: 'is required (string)' },
      { path: 'Skyhook/demo.spec.additionalTolerations[0]', message: 'expected object, got null' },
    ]);
  });
});

describe("NodeWright's newer fields", () => {
  test('packages.<name>.uninstall is carried, with defaults inside the block', () => {
    const { rollout, warnings } = parse(
      skyhook({ packages: { dexter: pkg({ uninstall: { enabled: true } }), spencer: pkg({ uninstall: {} }) } }),
    );
    expect(rollout.spec.packages['dexter']!.uninstall).toEqual({ enabled: true, apply: false });
    expect(rollout.spec.packages['spencer']!.uninstall).toEqual({ enabled: false, apply: false });
    expect(warnings).toEqual([]);
  });

  test("uninstall.apply needs uninstall.enabled, as NodeWright's webhook says; once allowed, it warns it is not applied", () => {
    const { errors } = parseRolloutDocuments([skyhook({ packages: { dexter: pkg({ uninstall: { apply: true } }) } })]);
    expect(errors).toEqual([
      {
        path: 'Skyhook/demo.spec.packages.dexter.uninstall.apply',
        message: expect.stringMatching(/^is true but enabled is false/),
      },
    ]);
    const { warnings } = parse(skyhook({ packages: { dexter: pkg({ uninstall: { enabled: true, apply: true } }) } }));
    expect(warnings).toEqual([
      {
        path: 'Skyhook/demo.spec.packages.dexter.uninstall.apply',
        message: expect.stringMatching(
          /^is accepted but not applied yet: Keelson uninstalls a package when it is removed/,
        ),
      },
    ]);
  });

  test('sequencing: node and all are carried, all warns it is not applied, anything else names the allowed values', () => {
    const node = parse(skyhook({ sequencing: 'node' }));
    expect([node.rollout.spec.sequencing, node.warnings]).toEqual(['node', []]);
    const all = parse(skyhook({ sequencing: 'all' }));
    expect(all.rollout.spec.sequencing).toBe('all');
    expect(all.warnings).toEqual([
      {
        path: 'Skyhook/demo.spec.sequencing',
        message: expect.stringMatching(/^"all" is accepted but not applied yet/),
      },
    ]);
    expect(parseRolloutDocuments([skyhook({ sequencing: 'global' })]).errors).toEqual([
      { path: 'Skyhook/demo.spec.sequencing', message: '"global" is not one of "node", "all"' },
    ]);
  });

  test('a spec stored before these fields existed re-validates unchanged (no new defaults to tell it apart)', () => {
    const { rollout } = parse(skyhook({ packages: { dexter: pkg() } }));
    expect(rollout.spec).not.toHaveProperty('sequencing');
    expect(rollout.spec.packages['dexter']).not.toHaveProperty('uninstall');
    expect(RolloutSpecSchema.parse(JSON.parse(JSON.stringify(rollout)))).toEqual(rollout);
  });
});

describe('spec.pause', () => {
  test('starts the rollout paused, as the pause annotation does, and reaches the node workflows paused', () => {
    const { rollout } = parse(skyhook({ pause: true }));
    expect(rollout.paused).toBe(true);
    expect(newNodeRollout(rollout, 1, DEFAULT_NODE_SETTINGS).paused).toBe(true);
    expect(parse(skyhook({ pause: false })).rollout.paused).toBe(false);
  });

  test('is not a new spec for a running rollout: pause and disable act at start only', () => {
    const paused = parse(skyhook({ pause: true })).rollout;
    // As stored by a Keelson that ignored spec.pause.
    expect(sameSpec(paused, { ...paused, paused: false })).toBe(true);
    expect(sameSpec(paused, { ...paused, disabled: true })).toBe(true);
    expect(sameSpec(paused, { ...paused, spec: { ...paused.spec, priority: paused.spec.priority + 1 } })).toBe(false);
  });
});

test('a field nested thousands deep is refused as the wrong type, not a crash (null fields are dropped only near the top)', () => {
  let image: unknown = 'x';
  for (let i = 0; i < 20_000; i++) image = { a: [image] };
  const result = parseRolloutDocuments([skyhook({ packages: { base: pkg({ image }) } })]);
  expect(result.errors).toEqual([
    { path: 'Skyhook/demo.spec.packages.base.image', message: 'expected string, got a mapping' },
  ]);
});
