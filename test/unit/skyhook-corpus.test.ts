import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseRolloutDocuments, type DeploymentPolicy, type RolloutSpec } from '../../model';
import { loadManifests } from '../../cli/commands/manifests';

// Issue 16's parity corpus (test/fixtures/skyhook-corpus, README.md there): manifests of the shapes Skyhook's examples
// and chainsaw e2e inputs use are accepted; each refusal of Skyhook's validating webhook (and CRD schema) is refused
// with an error naming the field.

const corpus = join(__dirname, '..', 'fixtures', 'skyhook-corpus');
const acceptedDir = join(corpus, 'accepted');
const refusedDir = join(corpus, 'refused');
const yamlFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.yaml'));
const documentsOf = (file: string): unknown[] =>
  parseAllDocuments(readFileSync(file, 'utf8')).map((doc) => doc.toJS() as unknown);
const kindOf = (doc: unknown) => (doc as { kind?: unknown } | null)?.kind;

/** Every policy of the accepted corpus, each file parsed on its own. */
const acceptedPolicies: DeploymentPolicy[] = yamlFiles(acceptedDir).flatMap(
  (file) => parseRolloutDocuments(documentsOf(join(acceptedDir, file))).policies,
);

describe('accepted corpus', () => {
  const files = yamlFiles(acceptedDir);

  test('holds the fixtures the README maps', () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
  });

  test.each(files)('%s parses with no errors, each rollout document a rollout', (file) => {
    const docs = documentsOf(join(acceptedDir, file));
    // Policies of other files are known, as a policy already stored is to `keelson validate`.
    const result = parseRolloutDocuments(docs, { policies: acceptedPolicies });
    expect(result.errors).toEqual([]);
    const rolloutDocs = docs.filter((d) => kindOf(d) === 'Skyhook' || kindOf(d) === 'NodeWright').length;
    const policyDocs = docs.filter((d) => kindOf(d) === 'DeploymentPolicy').length;
    expect(rolloutDocs + policyDocs).toBeGreaterThan(0);
    expect([result.rollouts.length, result.policies.length]).toEqual([rolloutDocs, policyDocs]);
  });

  test('the whole directory validates as `keelson validate -f` reads it, every named policy resolved', async () => {
    const m = await loadManifests([acceptedDir]);
    expect(m.errors).toEqual([]);
    const policies = new Map(acceptedPolicies.map((p) => [p.metadata.name, p]));
    const named = m.rollouts.filter((r) => r.spec.deploymentPolicy !== '');
    expect(named.map((r) => r.name).sort()).toEqual([
      'corpus-empty-fields',
      'corpus-policy-default-reset',
      'corpus-policy-keep-state',
      'corpus-policy-only',
      'corpus-policy-overlap',
      'corpus-policy-tagged',
      'corpus-workers-tolerating',
    ]);
    for (const rollout of named) {
      const policy = policies.get(rollout.spec.deploymentPolicy)!;
      expect(rollout.policy).toEqual({ name: policy.metadata.name, spec: policy.spec });
    }
    for (const rollout of m.rollouts.filter((r) => r.spec.deploymentPolicy === '')) expect(rollout.policy).toBeNull();
  });
});

describe('what the accepted corpus means', () => {
  let rollouts: Map<string, RolloutSpec>;
  beforeAll(async () => {
    rollouts = new Map((await loadManifests([acceptedDir])).rollouts.map((r) => [r.name, r]));
  });
  const rollout = (name: string) => rollouts.get(name)!;

  test('`packages:` with nothing after it and `packages: {}` are both no packages', () => {
    expect(rollout('corpus-packages-null').spec.packages).toEqual({});
    expect(rollout('corpus-packages-empty').spec.packages).toEqual({});
  });

  test('an image tag is dropped (the version is the tag), and a tag equal to the version likewise', () => {
    const graceful = rollout('corpus-graceful').spec.packages;
    expect(graceful['pa']!.image).toBe('registry.example.com/hostpkgs/stepper');
    expect(rollout('corpus-policy-tagged').spec.packages['dns-resolver']!.image).toBe(
      'registry.example.com/hostpkgs/resolver',
    );
  });

  test('two-part and prerelease versions are kept as written, and dependencies on them resolve', () => {
    const chain = rollout('corpus-tolerating-chain').spec.packages;
    expect(chain['layer-two']!.version).toBe('1.5');
    expect(chain['layer-three']!.dependsOn).toEqual({ 'layer-two': '1.5' });
    expect(rollout('corpus-prerelease').spec.packages['calendar-build']!.version).toBe('2025.11.30-preview');
  });

  test('pause and disable annotations of "false" neither pause nor disable', () => {
    for (const name of ['corpus-example-basic', 'corpus-order-first', 'corpus-nodewright-kind']) {
      expect([name, rollout(name).paused, rollout(name).disabled]).toEqual([name, false, false]);
    }
  });

  test("the batch-state reset: the rollout's option, else its policy's flag, else off", () => {
    expect(rollout('corpus-policy-keep-state').resetBatchStateOnCompletion).toBe(false);
    expect(rollout('corpus-policy-default-reset').resetBatchStateOnCompletion).toBe(true);
    expect(rollout('corpus-policy-overlap').resetBatchStateOnCompletion).toBe(false);
    expect(rollout('corpus-legacy-count').resetBatchStateOnCompletion).toBe(false);
  });

  test('`fixed: {}` gets every parameter from the defaults', () => {
    expect(rollout('corpus-policy-only').policy!.spec.default.strategy.fixed).toEqual({
      initialBatch: 1,
      batchThreshold: 100,
      failureThreshold: null,
      safetyLimit: 50,
    });
  });

  test('fields written with nothing after them are absent; `linear:` so written is linear with its defaults', () => {
    const sparse = rollout('corpus-empty-fields');
    expect(sparse.spec.packages['sparse']).toEqual({
      name: 'sparse',
      version: '1.0.0',
      image: 'registry.example.com/hostpkgs/sparse',
      configMap: { 'kept.conf': 'kept=true\n' },
    });
    expect([sparse.spec.priority, sparse.spec.additionalTolerations, sparse.resetBatchStateOnCompletion]).toEqual([
      200,
      [],
      true,
    ]);
    expect(sparse.policy!.spec.default.strategy.linear).toEqual({
      initialBatch: 1,
      batchThreshold: 100,
      failureThreshold: null,
      safetyLimit: 50,
      delta: 1,
    });
  });

  test('sequencing is carried as written, and absent when not written', () => {
    expect(['corpus-seq-before', 'corpus-seq-gate', 'corpus-seq-after'].map((n) => rollout(n).spec.sequencing)).toEqual(
      ['node', 'all', undefined],
    );
  });

  test('uninstall flags are carried per package', () => {
    const pkgs = rollout('corpus-uninstall-apply').spec.packages;
    expect([pkgs['vendor-agent']!.uninstall, pkgs['keep-me']!.uninstall]).toEqual([
      { enabled: true, apply: true },
      { enabled: true, apply: false },
    ]);
    expect(rollout('corpus-nodewright-kind').spec.packages['nw-package']!.uninstall).toEqual({
      enabled: true,
      apply: false,
    });
  });
});

// Each refused fixture: the path of every error, and a part of its message that says what is wrong.
const REFUSED: Record<string, [path: string, message: string][]> = {
  'budget-percent-and-count.yaml': [
    ['Skyhook/corpus-budget-both.spec.interruptionBudget', 'sets percent 20 and count 2: set at most one'],
  ],
  'budget-percent-over-100.yaml': [
    ['Skyhook/corpus-budget-over.spec.interruptionBudget.percent', '150 is above the maximum 100'],
  ],
  'config-interrupt-glob-no-match.yaml': [
    ['Skyhook/corpus-ci-glob.spec.packages.base.configInterrupts["*.yaml"]', 'glob "*.yaml" matches no configMap key'],
  ],
  'config-interrupt-unknown-key.yaml': [
    [
      'Skyhook/corpus-ci-missing.spec.packages.base.configInterrupts["absent.conf"]',
      'key "absent.conf" is not a configMap key',
    ],
  ],
  'depends-on-cycle.yaml': [
    ['Skyhook/corpus-dep-cycle.spec.packages.first.dependsOn', 'dependsOn has a cycle first -> second -> first'],
  ],
  'depends-on-empty-version.yaml': [
    ['Skyhook/corpus-dep-empty.spec.packages.first.dependsOn.second', 'dependency second needs a version'],
  ],
  'depends-on-missing-package.yaml': [
    ['Skyhook/corpus-dep-missing.spec.packages.first.dependsOn.nowhere', 'the spec has no package "nowhere"'],
  ],
  'depends-on-wrong-version.yaml': [
    [
      'Skyhook/corpus-dep-version.spec.packages.first.dependsOn.second',
      'depends on second@1.3.0, but the spec has second@1.2',
    ],
  ],
  'interrupt-type-unknown.yaml': [
    [
      'Skyhook/corpus-interrupt-bad.spec.packages.base.interrupt.type',
      '"restart" is not one of "service", "reboot", "noop", "restartAllServices"',
    ],
  ],
  'package-name-differs.yaml': [
    ['Skyhook/corpus-name-mismatch.spec.packages.base.name', '"other" differs from its key "base"'],
  ],
  'package-name-one-letter.yaml': [['Skyhook/corpus-name-short.spec.packages.x', 'package name "x" must match']],
  'package-name-trailing-hyphen.yaml': [
    ['Skyhook/corpus-name-hyphen.spec.packages.trailing-', 'package name "trailing-" must match'],
  ],
  'package-name-uppercase.yaml': [['Skyhook/corpus-name-upper.spec.packages.Base', 'package name "Base" must match']],
  'package-without-image.yaml': [['Skyhook/corpus-no-image.spec.packages.base.image', 'is required (string)']],
  'policy-and-budget.yaml': [
    [
      'Skyhook/corpus-policy-and-budget.spec.interruptionBudget',
      'is set together with deploymentPolicy "corpus-refused-helper": use one or the other',
    ],
  ],
  'policy-batch-threshold-over-100.yaml': [
    [
      'DeploymentPolicy/corpus-threshold-over.spec.default.strategy.linear.batchThreshold',
      '101 is above the maximum 100',
    ],
  ],
  'policy-budget-both.yaml': [
    ['DeploymentPolicy/corpus-budget-both.spec.default.budget', 'sets percent 10 and count 2: set exactly one'],
  ],
  'policy-budget-neither.yaml': [
    ['DeploymentPolicy/corpus-budget-none.spec.default.budget', 'sets neither percent nor count: set exactly one'],
  ],
  'policy-budget-percent-zero.yaml': [
    ['DeploymentPolicy/corpus-percent-zero.spec.default.budget.percent', '0 is below the minimum 1'],
  ],
  'policy-compartment-bad-selector.yaml': [
    [
      'DeploymentPolicy/corpus-compartment-selector.spec.compartments[0].selector.matchLabels.zone',
      'label value "-east" is invalid',
    ],
  ],
  'policy-compartment-budget-empty.yaml': [
    [
      'DeploymentPolicy/corpus-compartment-budget.spec.compartments[0].budget',
      'sets neither percent nor count: set exactly one',
    ],
  ],
  'policy-compartment-empty-name.yaml': [
    ['DeploymentPolicy/corpus-compartment-unnamed.spec.compartments[0].name', '"" has length 0, below the minimum 1'],
  ],
  'policy-compartment-two-strategies.yaml': [
    [
      'DeploymentPolicy/corpus-compartment-strategy.spec.compartments[0].strategy',
      'sets 2 strategies: set exactly one of fixed, linear, exponential',
    ],
  ],
  'policy-default-without-strategy.yaml': [
    ['DeploymentPolicy/corpus-no-default-strategy.spec.default.strategy', 'is required (object)'],
  ],
  'policy-duplicate-compartment.yaml': [
    [
      'DeploymentPolicy/corpus-dup-compartment.spec.compartments[1].name',
      '"twin" is already the name of compartments[0]: names must be unique',
    ],
  ],
  'policy-growth-factor-one.yaml': [
    ['DeploymentPolicy/corpus-growth-one.spec.default.strategy.exponential.growthFactor', '1 is below the minimum 2'],
  ],
  'policy-identical-selectors.yaml': [
    [
      'DeploymentPolicy/corpus-same-selector.spec.compartments[1].selector',
      'is identical to the selector of compartment "first"',
    ],
  ],
  'policy-initial-batch-zero.yaml': [
    ['DeploymentPolicy/corpus-initial-zero.spec.default.strategy.fixed.initialBatch', '0 is below the minimum 1'],
  ],
  'policy-not-found.yaml': [
    [
      'Skyhook/corpus-policy-missing.spec.deploymentPolicy',
      '"corpus-no-such-policy" names no DeploymentPolicy among the documents given',
    ],
  ],
  'policy-reserved-compartment.yaml': [
    [
      'DeploymentPolicy/corpus-reserved-compartment.spec.compartments[0].name',
      '"__default__" is reserved for nodes that match no compartment',
    ],
  ],
  'policy-strategy-empty.yaml': [
    [
      'DeploymentPolicy/corpus-no-strategy-kind.spec.default.strategy',
      'sets 0 strategies: set exactly one of fixed, linear, exponential',
    ],
  ],
  'policy-two-strategies.yaml': [
    [
      'DeploymentPolicy/corpus-two-strategies.spec.default.strategy',
      'sets 2 strategies: set exactly one of fixed, linear, exponential',
    ],
  ],
  'priority-zero.yaml': [['Skyhook/corpus-priority-zero.spec.priority', '0 is below the minimum 1']],
  'resources-limit-below-request.yaml': [
    [
      'Skyhook/corpus-resources-limit.spec.packages.base.resources.memoryLimit',
      '"64Mi" is below memoryRequest "128Mi": a limit may not be lower than its request',
    ],
  ],
  'resources-partial.yaml': [
    [
      'Skyhook/corpus-resources-partial.spec.packages.base.resources',
      'sets cpuRequest, memoryRequest but not cpuLimit, memoryLimit: set all four resource fields or none',
    ],
  ],
  'resources-zero.yaml': [
    ['Skyhook/corpus-resources-zero.spec.packages.base.resources.cpuRequest', '"0" is not a positive quantity'],
  ],
  'selector-bad-label-key.yaml': [
    ['Skyhook/corpus-selector-bad-key.spec.nodeSelectors.matchLabels["-pool"]', 'label key "-pool" is invalid'],
  ],
  'selector-bad-operator.yaml': [
    [
      'Skyhook/corpus-selector-operator.spec.nodeSelectors.matchExpressions[0].operator',
      '"Gt" is not one of "In", "NotIn", "Exists", "DoesNotExist"',
    ],
  ],
  'selector-exists-with-values.yaml': [
    [
      'Skyhook/corpus-selector-exists-values.spec.nodeSelectors.matchExpressions[0].values',
      'operator Exists takes no values',
    ],
  ],
  'selector-in-without-values.yaml': [
    [
      'Skyhook/corpus-selector-in-empty.spec.nodeSelectors.matchExpressions[0].values',
      'operator In needs at least one value',
    ],
  ],
  'selector-long-label-value.yaml': [
    ['Skyhook/corpus-selector-long-value.spec.nodeSelectors.matchLabels.pool', 'is invalid (at most 63 alphanumerics'],
  ],
  'sequencing-unknown.yaml': [
    ['Skyhook/corpus-sequencing-bad.spec.sequencing', '"cluster" is not one of "node", "all"'],
  ],
  'uninstall-apply-without-enabled.yaml': [
    [
      'Skyhook/corpus-apply-not-enabled.spec.packages.vendor-agent.uninstall.apply',
      'is true but enabled is false: uninstall.apply needs uninstall.enabled true',
    ],
  ],
  'version-four-parts.yaml': [
    ['Skyhook/corpus-four-part.spec.packages.base.version', '"1.2.3.4" is not a semantic version'],
  ],
  'version-not-semver.yaml': [
    ['Skyhook/corpus-bad-version.spec.packages.base.version', '"2025/11/30" is not a semantic version'],
  ],
};

describe('refused corpus', () => {
  test('every refused fixture has its expected errors listed here, and every listed one exists', () => {
    expect(yamlFiles(refusedDir).sort()).toEqual(Object.keys(REFUSED).sort());
  });

  test.each(Object.entries(REFUSED))('%s is refused naming the field', async (file, expected) => {
    const m = await loadManifests([join(refusedDir, file)]);
    expect(m.rollouts).toEqual([]);
    expect(m.errors.map((e) => e.path)).toEqual(expected.map(([path]) => path));
    m.errors.forEach((error, i) => expect(error.message).toContain(expected[i]![1]));
  });
});

describe('corpus README', () => {
  const readme = readFileSync(join(corpus, 'README.md'), 'utf8');

  test.each([
    ...yamlFiles(acceptedDir).map((f) => `accepted/${f}`),
    ...yamlFiles(refusedDir).map((f) => `refused/${f}`),
  ])('maps %s to what it stands for', (fixture) => {
    expect(readme).toMatch(new RegExp(`^\\| \`${fixture.replace(/[.]/g, '\\.')}\` +\\| *\\S.*\\|`, 'm'));
  });
});
