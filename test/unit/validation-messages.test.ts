import { parseRolloutDocuments, type ValidationError } from '../../model';
import { closestName } from '../../model/manifests/closest-name';

// What `keelson validate` and the API say about a bad manifest: every error in one pass, each naming the field path,
// the value and what is allowed, with the closest known name; and warnings that never refuse.

type Doc = Record<string, unknown>;
const skyhook = (spec: Doc, name = 'demo'): Doc => ({
  apiVersion: 'skyhook.nvidia.com/v1alpha1',
  kind: 'Skyhook',
  metadata: { name },
  spec: { packages: { base: { version: '1.0.0', image: 'example.com/base' } }, ...spec },
});
const policy = (spec: Doc, name = 'pol'): Doc => ({
  apiVersion: 'skyhook.nvidia.com/v1alpha1',
  kind: 'DeploymentPolicy',
  metadata: { name },
  spec,
});
const pkg = (extra: Doc = {}): Doc => ({ version: '1.2.3', image: 'example.com/pkg', ...extra });
const paths = (errors: readonly ValidationError[]) => errors.map((e) => e.path).sort();

describe('every error at once', () => {
  test('a field error does not hide the cross-field rules of the spec, the package or the documents', () => {
    const { errors } = parseRolloutDocuments([
      skyhook({
        serial: 'yes',
        deploymentPolicy: 'nowhere',
        interruptionBudget: { percent: 10 },
        packages: {
          aa: pkg({ interrupt: { type: 'bad' }, image: `x@sha256:${'a'.repeat(64)}`, dependsOn: { zz: '' } }),
          bb: pkg({ version: 'x', configMap: { ok: '1' }, configInterrupts: { missing: { type: 'noop' } } }),
        },
      }),
      skyhook({ priority: 0 }),
    ]);
    expect(paths(errors)).toEqual([
      'Skyhook/demo.metadata.name',
      'Skyhook/demo.spec.deploymentPolicy',
      'Skyhook/demo.spec.interruptionBudget',
      'Skyhook/demo.spec.packages.aa.dependsOn.zz',
      'Skyhook/demo.spec.packages.aa.image',
      'Skyhook/demo.spec.packages.aa.interrupt.type',
      'Skyhook/demo.spec.packages.bb.configInterrupts.missing',
      'Skyhook/demo.spec.packages.bb.version',
      'Skyhook/demo.spec.priority',
      'Skyhook/demo.spec.serial',
    ]);
  });

  test('a policy: a bad parameter does not hide a second strategy, nor a bad budget a duplicate compartment', () => {
    const compartment = (budget: Doc) => ({ name: 'a', selector: { matchLabels: { zone: 'a' } }, budget });
    const { errors } = parseRolloutDocuments([
      policy({
        default: { budget: { count: 1 }, strategy: { fixed: { initialBatch: 0 }, linear: {} } },
        compartments: [compartment({ count: 0 }), compartment({ count: 1 })],
      }),
    ]);
    expect(paths(errors)).toEqual([
      'DeploymentPolicy/pol.spec.compartments[0].budget.count',
      'DeploymentPolicy/pol.spec.compartments[1].name',
      'DeploymentPolicy/pol.spec.compartments[1].selector',
      'DeploymentPolicy/pol.spec.default.strategy',
      'DeploymentPolicy/pol.spec.default.strategy.fixed.initialBatch',
    ]);
  });
});

describe('what is allowed, and the closest known name', () => {
  test('a string out of its length bounds: said as a length, not as a number below a minimum', () => {
    const long = 'a'.repeat(254);
    const { errors } = parseRolloutDocuments([
      skyhook({}, long),
      policy({
        default: { budget: { count: 1 }, strategy: { fixed: {} } },
        compartments: [{ name: '', selector: { matchLabels: { zone: 'a' } }, budget: { count: 1 } }],
      }),
    ]);
    expect(errors).toEqual([
      {
        path: `Skyhook/${long}.metadata.name`,
        message: `${JSON.stringify(long).slice(0, 77)}... has length 254, above the maximum 253`,
      },
      { path: 'DeploymentPolicy/pol.spec.compartments[0].name', message: '"" has length 0, below the minimum 1' },
    ]);
  });

  test('an unknown field: its own path, and the field meant', () => {
    const { errors } = parseRolloutDocuments([skyhook({ nodeSelector: {}, packages: { aa: pkg({ dependOn: {} }) } })]);
    expect(errors).toEqual([
      { path: 'Skyhook/demo.spec.packages.aa.dependOn', message: 'unknown field; did you mean "dependsOn"?' },
      { path: 'Skyhook/demo.spec.nodeSelector', message: 'unknown field; did you mean "nodeSelectors"?' },
    ]);
  });

  test('an unknown field like no known one: the fields allowed there', () => {
    const { errors } = parseRolloutDocuments([
      skyhook({ packages: { aa: pkg({ interrupt: { type: 'noop', x: 1 } }) } }),
    ]);
    expect(errors).toEqual([
      {
        path: 'Skyhook/demo.spec.packages.aa.interrupt.x',
        message: 'unknown field; the fields here are type, services',
      },
    ]);
  });

  test('a misspelt enum value: the values allowed and the one meant', () => {
    const { errors } = parseRolloutDocuments([skyhook({ packages: { aa: pkg({ interrupt: { type: 'reboots' } }) } })]);
    expect(errors).toEqual([
      {
        path: 'Skyhook/demo.spec.packages.aa.interrupt.type',
        message: '"reboots" is not one of "service", "reboot", "noop", "restartAllServices"; did you mean "reboot"?',
      },
    ]);
  });

  test('a document that is not a rollout or a policy: the apiVersion and kind found, and the kind meant', () => {
    const { errors, recognized } = parseRolloutDocuments([
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' } },
      { apiVersion: 'skyhook.nvidia.com/v1alpha1', kind: 'Skyhooks', metadata: { name: 'x' } },
    ]);
    expect(recognized).toBe(0);
    expect(errors).toEqual([
      {
        path: 'ConfigMap/cm.kind',
        message: expect.stringMatching(
          /^found apiVersion "v1" and kind "ConfigMap", which is not a rollout or a policy \(Keelson reads kind Skyhook of skyhook\.nvidia\.com\/v1alpha1, NodeWright of nodewright\.nvidia\.com\/v1alpha1, DeploymentPolicy of /,
        ),
      },
      {
        path: 'Skyhooks/x.kind',
        message: expect.stringMatching(/which is not a rollout or a policy; did you mean kind "Skyhook"\? \(/),
      },
    ]);
  });

  test('a policy name that names no policy: the policy meant', () => {
    const { errors } = parseRolloutDocuments([
      policy({ default: { budget: { count: 1 }, strategy: { fixed: {} } } }, 'staged'),
      skyhook({ deploymentPolicy: 'stagd' }),
    ]);
    expect(errors).toEqual([
      {
        path: 'Skyhook/demo.spec.deploymentPolicy',
        message:
          '"stagd" names no DeploymentPolicy among the documents given or the known policies; did you mean "staged"?',
      },
    ]);
  });

  test('hundreds of policies and unknown policy names: refused at once, without a suggestion per pair', () => {
    const long = (i: number) => `${'p'.repeat(95)}${String(i).padStart(4, '0')}`;
    const docs = [
      ...Array.from({ length: 300 }, (_, i) =>
        policy({ default: { budget: { count: 1 }, strategy: { fixed: {} } } }, long(i)),
      ),
      ...Array.from({ length: 300 }, (_, i) => skyhook({ deploymentPolicy: `x${long(i)}` }, `r${i}`)),
    ];
    const started = Date.now();
    const { errors } = parseRolloutDocuments(docs);
    expect(errors.filter((e) => e.path.endsWith('.spec.deploymentPolicy'))).toHaveLength(300);
    expect(errors.some((e) => e.message.includes('did you mean'))).toBe(false);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test('a policy whose spec is a list: an error naming the field, not a crash', () => {
    const { errors } = parseRolloutDocuments([policy([] as unknown as Doc), skyhook({ deploymentPolicy: 'pol' })]);
    expect(errors).toContainEqual(expect.objectContaining({ path: 'DeploymentPolicy/pol.spec' }));
  });

  test('closestName: slips are found (case, a letter, a swap, a plural), other words are not', () => {
    const fields = ['nodeSelectors', 'packages', 'priority', 'interruptionBudget'];
    expect(closestName('NodeSelectors', fields)).toBe('nodeSelectors');
    expect(closestName('pakages', fields)).toBe('packages');
    expect(closestName('prioirty', fields)).toBe('priority');
    expect(closestName('package', fields)).toBe('packages');
    expect(closestName('budget', fields)).toBeUndefined();
    expect(closestName('x'.repeat(10_000), fields)).toBeUndefined();
  });

  test('thousands of unknown fields: twenty named, the rest counted, and quickly', () => {
    const extra = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`pakages${i}`, 1]));
    const started = Date.now();
    const { errors } = parseRolloutDocuments([skyhook(extra)]);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(errors).toHaveLength(21);
    expect(errors[20]).toEqual({ path: 'Skyhook/demo.spec', message: 'and 4980 more unknown fields' });
  });
});

describe('warnings', () => {
  const selected = { nodeSelectors: { matchLabels: { pool: 'gpu' } } };
  const warned = (...docs: Doc[]) => {
    const result = parseRolloutDocuments(docs);
    expect(result.errors).toEqual([]);
    expect(result.rollouts.length + result.policies.length).toBe(docs.length);
    return result.warnings.map((w) => w.path);
  };

  test('no packages: applied to a running rollout, every package is uninstalled', () => {
    const { warnings } = parseRolloutDocuments([
      skyhook({ nodeSelectors: { matchLabels: { a: 'b' } }, packages: null }),
    ]);
    expect(warnings).toContainEqual({
      path: 'Skyhook/demo.spec.packages',
      message: 'is empty: applied to a running rollout, every package is uninstalled from every node',
    });
  });

  test('no nodeSelectors: every node of the cluster is targeted', () => {
    expect(warned(skyhook({ interruptionBudget: { count: 1 } }))).toEqual(['Skyhook/demo.spec.nodeSelectors']);
    expect(warned(skyhook({ nodeSelectors: { matchLabels: {} }, interruptionBudget: { count: 1 } }))).toEqual([
      'Skyhook/demo.spec.nodeSelectors',
    ]);
    const expressions = { matchExpressions: [{ key: 'pool', operator: 'Exists' }] };
    expect(warned(skyhook({ nodeSelectors: expressions, interruptionBudget: { count: 1 } }))).toEqual([]);
  });

  test('a 100% interruption budget, given or by default; not a lower one, a count or a policy', () => {
    const budget = 'Skyhook/demo.spec.interruptionBudget';
    expect(warned(skyhook({ ...selected, interruptionBudget: { percent: 100 } }))).toEqual([budget]);
    expect(warned(skyhook({ ...selected }))).toEqual([budget]);
    expect(warned(skyhook({ ...selected, interruptionBudget: { percent: 99 } }))).toEqual([]);
    expect(warned(skyhook({ ...selected, interruptionBudget: { count: 100 } }))).toEqual([]);
    const pol = policy({ default: { budget: { percent: 10 }, strategy: { fixed: {} } } });
    expect(warned(pol, skyhook({ ...selected, deploymentPolicy: 'pol' }))).toEqual([]);
  });

  test('a policy budget of 100%, by default or in a compartment', () => {
    const full = { percent: 100 };
    const compartment = { name: 'a', selector: { matchLabels: { zone: 'a' } }, budget: full };
    expect(warned(policy({ default: { budget: full, strategy: { fixed: {} } }, compartments: [compartment] }))).toEqual(
      ['DeploymentPolicy/pol.spec.default.budget.percent', 'DeploymentPolicy/pol.spec.compartments[0].budget.percent'],
    );
  });

  test('warnings come with errors elsewhere, so one pass shows both', () => {
    const { errors, warnings } = parseRolloutDocuments([skyhook({}, 'fine'), skyhook({ priority: 0 }, 'bad')]);
    expect(paths(errors)).toEqual(['Skyhook/bad.spec.priority']);
    expect(warnings.map((w) => w.path)).toEqual([
      'Skyhook/fine.spec.nodeSelectors',
      'Skyhook/fine.spec.interruptionBudget',
    ]);
  });
});
