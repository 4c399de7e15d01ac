import { parseRolloutDocuments, stageTimeoutSeconds, type RolloutSpec } from '../../model';

// Every webhook rule of docs/architecture.md §2, and Keelson's additions, with an accepted and a rejected example.

type Doc = Record<string, unknown>;
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

function skyhook(spec: Doc, extra: Doc = {}): Doc {
  return { apiVersion: 'skyhook.nvidia.com/v1alpha1', kind: 'Skyhook', metadata: { name: 'demo' }, spec, ...extra };
}
function policy(spec: Doc, name = 'pol'): Doc {
  return { apiVersion: 'skyhook.nvidia.com/v1alpha1', kind: 'DeploymentPolicy', metadata: { name }, spec };
}
const pkg = (extra: Doc = {}): Doc => ({ version: '1.2.3', image: 'ghcr.io/nvidia/skyhook/agentless', ...extra });
const policySpec = (extra: Doc = {}): Doc => ({
  default: { budget: { percent: 10 }, strategy: { fixed: {} } },
  ...extra,
});

function accept(...docs: Doc[]): RolloutSpec[] {
  const result = parseRolloutDocuments(docs);
  expect(result.errors).toEqual([]);
  return result.rollouts;
}
function reject(docs: Doc[], path: string, message: RegExp): void {
  const { errors } = parseRolloutDocuments(docs);
  expect(errors).toEqual(expect.arrayContaining([{ path, message: expect.stringMatching(message) }]));
}

describe('Skyhook spec defaults (§2.1)', () => {
  test('an empty spec gets every default', () => {
    const [r] = accept(skyhook({}));
    expect(r).toEqual({
      name: 'demo',
      kind: 'Skyhook',
      paused: false,
      disabled: false,
      policy: null,
      resetBatchStateOnCompletion: false,
      spec: {
        nodeSelectors: {},
        packages: {},
        priority: 200,
        deploymentPolicy: '',
        podNonInterruptLabels: {},
        additionalTolerations: [],
        runtimeRequired: false,
        autoTaintNewNodes: false,
        serial: false,
        pause: false,
      },
    });
  });

  test('package name comes from the key and the tag is stripped', () => {
    const [r] = accept(skyhook({ packages: { dexter: pkg({ image: 'ghcr.io/nvidia/agentless:1.2.3' }) } }));
    expect(r!.spec.packages['dexter']).toEqual({ name: 'dexter', version: '1.2.3', image: 'ghcr.io/nvidia/agentless' });
  });

  test('pause and disable annotations under the kind prefix', () => {
    const annotations = { 'skyhook.nvidia.com/pause': 'true', 'skyhook.nvidia.com/disable': 'true' };
    const [r] = accept(skyhook({}, { metadata: { name: 'demo', annotations } }));
    expect([r!.paused, r!.disabled]).toEqual([true, true]);
    const nw = {
      apiVersion: 'nodewright.nvidia.com/v1alpha1',
      kind: 'NodeWright',
      metadata: { name: 'n', annotations },
    };
    const [n] = accept({ ...nw, spec: {} });
    expect([n!.kind, n!.paused, n!.disabled]).toEqual(['NodeWright', false, false]);
  });

  test('a validated RolloutSpec is stable under re-validation', () => {
    const [r] = accept(skyhook({ packages: { dexter: pkg({ image: 'host:5000/img:1.2.3' }) } }));
    expect(accept(skyhook(r!.spec as unknown as Doc))[0]!.spec).toEqual(r!.spec);
  });
});

describe('webhook rules (§2.1)', () => {
  test('semver with shorthands', () => {
    for (const version of ['1.2.3', '1.2', '1', 'v1.2.3', '2024.7.7-test', '2.3.1-test', '1.0.0+build.1']) {
      accept(skyhook({ packages: { aa: pkg({ version }) } }));
    }
    for (const version of ['1.2.x', '1.2-pre', '01.2.3', 'latest', '']) {
      reject(
        [skyhook({ packages: { aa: pkg({ version }) } })],
        'Skyhook/demo.spec.packages.aa.version',
        /semantic version/,
      );
    }
  });

  test('package name pattern and name equal to key', () => {
    accept(skyhook({ packages: { 'ab-c9z': pkg({ name: 'ab-c9z' }) } }));
    reject([skyhook({ packages: { Abc: pkg() } })], 'Skyhook/demo.spec.packages.Abc', /must match/);
    reject([skyhook({ packages: { a: pkg() } })], 'Skyhook/demo.spec.packages.a', /must match/);
    reject([skyhook({ packages: { abc1: pkg() } })], 'Skyhook/demo.spec.packages.abc1', /must match/);
    const long = 'a'.repeat(44);
    reject([skyhook({ packages: { [long]: pkg() } })], `Skyhook/demo.spec.packages.${long}`, /must match/);
    reject([skyhook({ packages: { abc: pkg({ name: 'abd' }) } })], 'Skyhook/demo.spec.packages.abc.name', /differs/);
  });

  test('image: the tag is dropped (the version replaces it), registry ports accepted, digests refused', () => {
    const [r] = accept(skyhook({ packages: { aa: pkg({ image: 'registry.local:5000/team/img:1.2.3' }) } }));
    expect(r!.spec.packages['aa']!.image).toBe('registry.local:5000/team/img');
    accept(skyhook({ packages: { aa: pkg({ image: 'localhost:5000/img' }) } }));
    const [other] = accept(skyhook({ packages: { aa: pkg({ image: 'ghcr.io/x:2.0.0' }) } }));
    expect(other!.spec.packages['aa']!.image).toBe('ghcr.io/x');
    const path = 'Skyhook/demo.spec.packages.aa.image';
    reject([skyhook({ packages: { aa: pkg({ image: 'Upper/Case' }) } })], path, /invalid path component/);
    reject([skyhook({ packages: { aa: pkg({ image: `x@sha256:${'a'.repeat(64)}` }) } })], path, /containerSHA/);
  });

  test('containerSHA and agentImageOverride', () => {
    accept(
      skyhook({
        packages: { aa: pkg({ containerSHA: `sha256:${'0'.repeat(64)}`, agentImageOverride: 'a/agent:v6' }) },
      }),
    );
    reject(
      [skyhook({ packages: { aa: pkg({ containerSHA: 'sha256:xyz' }) } })],
      'Skyhook/demo.spec.packages.aa.containerSHA',
      /sha256/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ agentImageOverride: 'a/agent' }) } })],
      'Skyhook/demo.spec.packages.aa.agentImageOverride',
      /no tag/,
    );
  });

  test('interrupt type enum', () => {
    for (const type of ['service', 'reboot', 'noop', 'restartAllServices']) {
      accept(skyhook({ packages: { aa: pkg({ interrupt: { type, services: ['cron'] } }) } }));
    }
    reject(
      [skyhook({ packages: { aa: pkg({ interrupt: { type: 'restart_all_services' } }) } })],
      'Skyhook/demo.spec.packages.aa.interrupt.type',
      /"restart_all_services" is not one of/,
    );
  });

  test('resources: all or none, positive, limit not below request', () => {
    const full = { cpuRequest: '100m', cpuLimit: '0.2', memoryRequest: '64Mi', memoryLimit: '1Gi' };
    accept(skyhook({ packages: { aa: pkg({ resources: full }) } }));
    const path = 'Skyhook/demo.spec.packages.aa.resources';
    reject([skyhook({ packages: { aa: pkg({ resources: { cpuRequest: '1' } }) } })], path, /set all four/);
    reject(
      [skyhook({ packages: { aa: pkg({ resources: { ...full, cpuLimit: '50m' } }) } })],
      `${path}.cpuLimit`,
      /"50m" is below cpuRequest "100m"/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ resources: { ...full, memoryRequest: '2Gi' } }) } })],
      `${path}.memoryLimit`,
      /below memoryRequest/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ resources: { ...full, cpuRequest: '0' } }) } })],
      `${path}.cpuRequest`,
      /positive quantity/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ resources: { ...full, cpuRequest: 'lots' } }) } })],
      `${path}.cpuRequest`,
      /positive quantity/,
    );
  });

  test('configInterrupts keys exist or globs match', () => {
    const configMap = { 'game.properties': 'x', 'ui.conf': 'y' };
    accept(
      skyhook({
        packages: {
          aa: pkg({
            configMap,
            configInterrupts: { 'game.properties': { type: 'noop' }, '*.conf': { type: 'reboot' } },
          }),
        },
      }),
    );
    reject(
      [skyhook({ packages: { aa: pkg({ configMap, configInterrupts: { other: { type: 'noop' } } }) } })],
      'Skyhook/demo.spec.packages.aa.configInterrupts.other',
      /not a configMap key/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ configMap, configInterrupts: { '*.ini': { type: 'noop' } } }) } })],
      'Skyhook/demo.spec.packages.aa.configInterrupts["*.ini"]',
      /matches no configMap key/,
    );
  });

  test('dependsOn targets exist at that version, and cycles are rejected', () => {
    accept(skyhook({ packages: { aa: pkg({ dependsOn: { bb: '2.0' } }), bb: pkg({ version: '2.0' }) } }));
    reject(
      [skyhook({ packages: { aa: pkg({ dependsOn: { bb: '1.0' } }) } })],
      'Skyhook/demo.spec.packages.aa.dependsOn.bb',
      /no package "bb"/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ dependsOn: { bb: '1.0' } }), bb: pkg({ version: '2.0' }) } })],
      'Skyhook/demo.spec.packages.aa.dependsOn.bb',
      /spec has bb@2.0/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ dependsOn: { bb: '' } }), bb: pkg() } })],
      'Skyhook/demo.spec.packages.aa.dependsOn.bb',
      /needs a version/,
    );
    reject(
      [
        skyhook({
          packages: {
            aa: pkg({ dependsOn: { bb: '1.2.3' } }),
            bb: pkg({ dependsOn: { cc: '1.2.3' } }),
            cc: pkg({ dependsOn: { aa: '1.2.3' } }),
          },
        }),
      ],
      'Skyhook/demo.spec.packages.aa.dependsOn',
      /cycle aa -> bb -> cc -> aa/,
    );
    reject(
      [skyhook({ packages: { aa: pkg({ dependsOn: { aa: '1.2.3' } }) } })],
      'Skyhook/demo.spec.packages.aa.dependsOn',
      /cycle aa -> aa/,
    );
  });

  test('stageTimeout: positive whole seconds, at most 24h, package and rollout level', () => {
    const [r] = accept(skyhook({ stageTimeout: '30m', packages: { aa: pkg({ stageTimeout: '90s' }), bb: pkg() } }));
    expect(stageTimeoutSeconds(r!, 'aa')).toBe(90);
    expect(stageTimeoutSeconds(r!, 'bb')).toBe(1800);
    expect(stageTimeoutSeconds(accept(skyhook({ packages: { aa: pkg() } }))[0]!, 'aa')).toBe(3600);
    accept(skyhook({ stageTimeout: '24h' }));
    for (const bad of ['0s', '25h', '-5m', '1.5s', 'ten minutes', '10']) {
      reject(
        [skyhook({ packages: { aa: pkg({ stageTimeout: bad }) } })],
        'Skyhook/demo.spec.packages.aa.stageTimeout',
        /not a stage timeout/,
      );
    }
    reject([skyhook({ stageTimeout: '48h' })], 'Skyhook/demo.spec.stageTimeout', /"48h"/);
  });

  test('gracefulShutdown is a duration', () => {
    accept(skyhook({ packages: { aa: pkg({ gracefulShutdown: '1m30s' }) } }));
    reject(
      [skyhook({ packages: { aa: pkg({ gracefulShutdown: 'soon' }) } })],
      'Skyhook/demo.spec.packages.aa.gracefulShutdown',
      /not a duration/,
    );
  });

  test('interruptionBudget: percent 0..100 xor count >= 0', () => {
    accept(skyhook({ interruptionBudget: { percent: 0 } }));
    accept(skyhook({ interruptionBudget: { count: 3, percent: null } }));
    reject(
      [skyhook({ interruptionBudget: { percent: 10, count: 2 } })],
      'Skyhook/demo.spec.interruptionBudget',
      /percent 10 and count 2/,
    );
    reject(
      [skyhook({ interruptionBudget: { percent: 101 } })],
      'Skyhook/demo.spec.interruptionBudget.percent',
      /101 is above the maximum 100/,
    );
    reject(
      [skyhook({ interruptionBudget: { count: -1 } })],
      'Skyhook/demo.spec.interruptionBudget.count',
      /-1 is below the minimum 0/,
    );
  });

  test('deploymentPolicy xor interruptionBudget, and the policy must exist', () => {
    accept(policy(policySpec()), skyhook({ deploymentPolicy: 'pol' }));
    reject(
      [policy(policySpec()), skyhook({ deploymentPolicy: 'pol', interruptionBudget: { count: 1 } })],
      'Skyhook/demo.spec.interruptionBudget',
      /together with deploymentPolicy "pol"/,
    );
    reject(
      [skyhook({ deploymentPolicy: 'nowhere' })],
      'Skyhook/demo.spec.deploymentPolicy',
      /"nowhere" names no DeploymentPolicy/,
    );
  });

  test('a policy is resolved from the file first, then from the given set', () => {
    const known = parseRolloutDocuments([policy(policySpec({ resetBatchStateOnCompletion: false }))]).policies;
    const fromSet = parseRolloutDocuments([skyhook({ deploymentPolicy: 'pol' })], { policies: known });
    expect(fromSet.errors).toEqual([]);
    expect(fromSet.rollouts[0]!.policy!.spec.resetBatchStateOnCompletion).toBe(false);
    const fromFile = parseRolloutDocuments([skyhook({ deploymentPolicy: 'pol' }), policy(policySpec())], {
      policies: known,
    });
    expect(fromFile.rollouts[0]!.policy!.spec.resetBatchStateOnCompletion).toBe(true);
  });

  test('resetBatchStateOnCompletion precedence: rollout option, policy, false (§2.2.6)', () => {
    const docs = (opts?: Doc, pol: Doc = {}) => [
      policy(policySpec(pol)),
      skyhook({ deploymentPolicy: 'pol', ...(opts && { deploymentPolicyOptions: opts }) }),
    ];
    expect(accept(...docs())[0]!.resetBatchStateOnCompletion).toBe(true);
    expect(accept(...docs(undefined, { resetBatchStateOnCompletion: false }))[0]!.resetBatchStateOnCompletion).toBe(
      false,
    );
    expect(accept(...docs({ resetBatchStateOnCompletion: false }))[0]!.resetBatchStateOnCompletion).toBe(false);
    expect(accept(...docs({}, { resetBatchStateOnCompletion: false }))[0]!.resetBatchStateOnCompletion).toBe(true);
  });

  test('selectors must be valid', () => {
    accept(
      skyhook({
        nodeSelectors: {
          matchLabels: { 'example.com/role': 'gpu' },
          matchExpressions: [{ key: 'zone', operator: 'Exists' }],
        },
      }),
    );
    reject(
      [skyhook({ nodeSelectors: { matchLabels: { 'bad key!': 'x' } } })],
      'Skyhook/demo.spec.nodeSelectors.matchLabels["bad key!"]',
      /label key "bad key!" is invalid/,
    );
    reject(
      [skyhook({ nodeSelectors: { matchLabels: { role: 'not valid' } } })],
      'Skyhook/demo.spec.nodeSelectors.matchLabels.role',
      /label value "not valid"/,
    );
    reject(
      [skyhook({ podNonInterruptLabels: { matchExpressions: [{ key: 'a', operator: 'In' }] } })],
      'Skyhook/demo.spec.podNonInterruptLabels.matchExpressions[0].values',
      /needs at least one value/,
    );
    reject(
      [skyhook({ nodeSelectors: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] } })],
      'Skyhook/demo.spec.nodeSelectors.matchExpressions[0].values',
      /takes no values/,
    );
    reject(
      [skyhook({ nodeSelectors: { matchExpressions: [{ key: 'a', operator: 'Near', values: ['x'] }] } })],
      'Skyhook/demo.spec.nodeSelectors.matchExpressions[0].operator',
      /"Near" is not one of/,
    );
  });

  test('priority minimum 1; unknown fields and wrong types named', () => {
    accept(skyhook({ priority: 1 }));
    reject([skyhook({ priority: 0 })], 'Skyhook/demo.spec.priority', /0 is below the minimum 1/);
    reject(
      [skyhook({ packages: { aa: pkg({ dependOn: {} }) } })],
      'Skyhook/demo.spec.packages.aa.dependOn',
      /unknown field; did you mean "dependsOn"\?/,
    );
    reject([skyhook({ serial: 'yes' })], 'Skyhook/demo.spec.serial', /expected boolean, got "yes"/);
    reject([skyhook({ packages: { aa: { image: 'x' } } })], 'Skyhook/demo.spec.packages.aa.version', /is required/);
  });
});

describe('DeploymentPolicy rules (§2.2)', () => {
  const withPolicy = (spec: Doc) => [policy(spec)];
  const base = 'DeploymentPolicy/pol.spec';

  test('strategy defaults from the mutating webhook', () => {
    const { policies } = parseRolloutDocuments([
      policy({
        default: { budget: { count: 1 }, strategy: { linear: null } },
        compartments: [
          { name: 'a', selector: { matchLabels: { a: 'b' } }, budget: { percent: 5 }, strategy: { exponential: {} } },
        ],
      }),
    ]);
    expect(policies[0]!.spec.default.strategy.linear).toEqual({
      initialBatch: 1,
      batchThreshold: 100,
      failureThreshold: null,
      safetyLimit: 50,
      delta: 1,
    });
    expect(policies[0]!.spec.compartments[0]!.strategy!.exponential!.growthFactor).toBe(2);
    expect(policies[0]!.spec.resetBatchStateOnCompletion).toBe(true);
  });

  test('budget: percent 1..100 xor count >= 1', () => {
    reject(
      withPolicy(policySpec({ default: { budget: {}, strategy: { fixed: {} } } })),
      `${base}.default.budget`,
      /neither percent nor count/,
    );
    reject(
      withPolicy(policySpec({ default: { budget: { percent: 0 }, strategy: { fixed: {} } } })),
      `${base}.default.budget.percent`,
      /0 is below the minimum 1/,
    );
    reject(
      withPolicy(policySpec({ default: { budget: { count: 0 }, strategy: { fixed: {} } } })),
      `${base}.default.budget.count`,
      /below the minimum 1/,
    );
  });

  test('strategy: exactly one type, parameters in range', () => {
    reject(
      withPolicy({ default: { budget: { count: 1 }, strategy: {} } }),
      `${base}.default.strategy`,
      /sets 0 strategies/,
    );
    reject(
      withPolicy({ default: { budget: { count: 1 }, strategy: { fixed: {}, linear: {} } } }),
      `${base}.default.strategy`,
      /sets 2 strategies/,
    );
    const bad: [string, Doc, string][] = [
      ['fixed', { initialBatch: 0 }, 'initialBatch'],
      ['fixed', { batchThreshold: 101 }, 'batchThreshold'],
      ['fixed', { failureThreshold: 0 }, 'failureThreshold'],
      ['fixed', { safetyLimit: 0 }, 'safetyLimit'],
      ['linear', { delta: 0 }, 'delta'],
      ['exponential', { growthFactor: 1 }, 'growthFactor'],
    ];
    for (const [type, params, field] of bad) {
      reject(
        withPolicy({ default: { budget: { count: 1 }, strategy: { [type]: params } } }),
        `${base}.default.strategy.${type}.${field}`,
        /minimum|maximum/,
      );
    }
  });

  test('compartments: unique names, not __default__, distinct valid selectors, budget required', () => {
    const c = (name: string, labels: Doc = { zone: name.replace(/_/g, 'x') }) => ({
      name,
      selector: { matchLabels: labels },
      budget: { count: 1 },
    });
    accept(policy(policySpec({ compartments: [c('a'), c('b')] })), skyhook({ deploymentPolicy: 'pol' }));
    reject(
      withPolicy(policySpec({ compartments: [c('a'), c('a', { zone: 'b' })] })),
      `${base}.compartments[1].name`,
      /already the name/,
    );
    reject(withPolicy(policySpec({ compartments: [c('__default__')] })), `${base}.compartments[0].name`, /reserved/);
    reject(
      withPolicy(policySpec({ compartments: [c('a'), c('b', { zone: 'a' })] })),
      `${base}.compartments[1].selector`,
      /identical to the selector of compartment "a"/,
    );
    reject(
      withPolicy(policySpec({ compartments: [{ name: '', selector: {}, budget: { count: 1 } }] })),
      `${base}.compartments[0].name`,
      /minimum 1/,
    );
    reject(
      withPolicy(
        policySpec({ compartments: [{ name: 'x', selector: { matchLabels: { 'a b': 'c' } }, budget: { count: 1 } }] }),
      ),
      `${base}.compartments[0].selector.matchLabels["a b"]`,
      /invalid/,
    );
    reject(
      withPolicy(policySpec({ compartments: [{ name: 'x', selector: {} }] })),
      `${base}.compartments[0].budget`,
      /is required/,
    );
  });
});

describe('documents', () => {
  test('unknown kinds, non-mappings, mismatched apiVersion and duplicate names are errors; empty documents are skipped', () => {
    const r = parseRolloutDocuments([null, 'text', { kind: 'Pod', metadata: { name: 'p' } }]);
    expect(r.errors).toEqual([
      { path: 'document[1]', message: 'expected a mapping, got "text"' },
      {
        path: 'Pod/p.kind',
        message: expect.stringMatching(/^found apiVersion none and kind "Pod", which is not a rollout or a policy/),
      },
    ]);
    expect(r.recognized).toBe(0);
    reject(
      [skyhook({}, { apiVersion: 'nodewright.nvidia.com/v1alpha1' })],
      'Skyhook/demo.apiVersion',
      /does not serve kind Skyhook/,
    );
    reject([skyhook({}), clone(skyhook({}))], 'Skyhook/demo.metadata.name', /defined twice/);
  });

  test('errors of an invalid policy are not repeated as a missing policy', () => {
    const { errors } = parseRolloutDocuments([policy({ default: {} }), skyhook({ deploymentPolicy: 'pol' })]);
    expect(errors.some((e) => e.path.startsWith('Skyhook/'))).toBe(false);
    expect(errors.length).toBeGreaterThan(0);
  });
});
