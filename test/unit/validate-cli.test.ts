import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

// `keelson validate` as users run it: a real process, real exit codes, real stdout and stderr.

const root = join(__dirname, '..', '..');
const fixture = (name: string) => join(root, 'test', 'fixtures', 'manifests', name);

function keelsonValidate(args: string[], stdin?: string) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'keelson.js'), 'validate', ...args], {
    encoding: 'utf8',
    cwd: root,
    ...(stdin !== undefined && { input: stdin }),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const validate = (file: string) => keelsonValidate(['-f', file]);

const lines = (text: string) => text.split('\n').filter((l) => l !== '');

const NO_SELECTOR = 'is empty: the rollout targets every node of the cluster; set matchLabels or matchExpressions';

describe('keelson validate', () => {
  test.each([
    [
      'skyhook-valid.yaml',
      'Skyhook/simple-skyhook: valid, 3 packages (dexter@1.2.3, foobar@1.2, spencer@3.2.3), priority 200, interruptionBudget percent 50',
      [],
    ],
    [
      'nodewright-valid.yaml',
      'NodeWright/tuning: valid, 1 package (sysctl-tuning@2024.7.7-test), priority 150, interruptionBudget percent 100, paused',
      [
        `warning: NodeWright/tuning.spec.nodeSelectors: ${NO_SELECTOR}`,
        'warning: NodeWright/tuning.spec.interruptionBudget: is not set (100%): every targeted node may be interrupted at once; set a lower percent, a count, or a deploymentPolicy',
      ],
    ],
    [
      'policy-and-rollout.yaml',
      'Skyhook/driver-rollout: valid, 1 package (driver@550.54.15), priority 200, policy staged',
      [`warning: Skyhook/driver-rollout.spec.nodeSelectors: ${NO_SELECTOR}`],
    ],
  ])('%s: exit 0, one summary line per rollout on stdout, warnings on stderr', (file, summary, warnings) => {
    const r = validate(fixture(file));
    expect([r.code, r.stdout, lines(r.stderr)]).toEqual([0, `${summary}\n`, warnings]);
  });

  test('invalid package: one path: message line per error on stderr, exit 1', () => {
    const r = validate(fixture('invalid-package.yaml'));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(lines(r.stderr).sort()).toEqual(
      [
        'Skyhook/broken.spec.packages.dexter.version: "v1.x" is not a semantic version (MAJOR[.MINOR[.PATCH[-PRERELEASE][+BUILD]]], e.g. 1.2.3 or 1.2)',
        'Skyhook/broken.spec.packages.dexter.resources.cpuLimit: "100m" is below cpuRequest "200m": a limit may not be lower than its request',
        'Skyhook/broken.spec.packages.dexter.dependsOn.missing: depends on missing@1.0.0, but the spec has no package "missing"',
      ].sort(),
    );
  });

  test('a dependsOn cycle is rejected', () => {
    const r = validate(fixture('invalid-cycle.yaml'));
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([
      'Skyhook/cyclic.spec.packages.alpha.dependsOn: dependsOn has a cycle alpha -> beta -> alpha: packages on a cycle could never run',
    ]);
  });

  test('invalid policy and a missing policy reference', () => {
    const r = validate(fixture('invalid-policy.yaml'));
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([
      'DeploymentPolicy/dup.spec.default.budget: sets percent 10 and count 2: set exactly one',
      'DeploymentPolicy/dup.spec.compartments[1].name: "a" is already the name of compartments[0]: names must be unique',
      'Skyhook/uses-missing.spec.deploymentPolicy: "nowhere" names no DeploymentPolicy among the documents given or the known policies',
    ]);
  });

  test('a document of another kind: its apiVersion and kind named, and no rollout', () => {
    const r = validate(fixture('no-rollout.yaml'));
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([
      expect.stringMatching(
        /^ConfigMap\/something\.kind: found apiVersion "v1" and kind "ConfigMap", which is not a rollout/,
      ),
      expect.stringMatching(
        /no-rollout\.yaml: holds no rollout \(no Skyhook, NodeWright or DeploymentPolicy document\)$/,
      ),
    ]);
  });

  test.each([
    ['not-yaml.txt', /^.*not-yaml\.txt: is not valid YAML: .+$/],
    ['does-not-exist.yaml', /^.*does-not-exist\.yaml: no such file$/],
  ])('%s: a one-line reason, exit 1, no stack trace', (file, reason) => {
    const r = validate(fixture(file));
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(reason);
  });

  test('an empty file and a policy-only file hold no rollout', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keelson-validate-'));
    writeFileSync(join(dir, 'empty.yaml'), '');
    expect(validate(join(dir, 'empty.yaml')).stderr).toMatch(/holds no rollout/);
    writeFileSync(
      join(dir, 'policy.yaml'),
      'apiVersion: skyhook.nvidia.com/v1alpha1\nkind: DeploymentPolicy\nmetadata: {name: p}\nspec:\n  default: {budget: {count: 1}, strategy: {fixed: {}}}\n',
    );
    const r = validate(join(dir, 'policy.yaml'));
    expect([r.code, r.stderr.trim()]).toEqual([1, expect.stringMatching(/policy\.yaml: holds no rollout/)]);
  });

  describe('a policy in another document or file, as kubectl reads -f', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keelson-validate-many-'));
    const rollout = [
      'apiVersion: skyhook.nvidia.com/v1alpha1',
      'kind: Skyhook',
      'metadata: {name: uses-policy}',
      'spec:',
      '  deploymentPolicy: shared',
      '  nodeSelectors: {matchLabels: {pool: gpu}}',
      '  packages: {tool: {version: 1.0.0, image: example.com/tool}}',
    ].join('\n');
    const policy = [
      'apiVersion: skyhook.nvidia.com/v1alpha1',
      'kind: DeploymentPolicy',
      'metadata: {name: shared}',
      'spec: {default: {budget: {count: 1}, strategy: {fixed: {}}}}',
    ].join('\n');
    const summary = 'Skyhook/uses-policy: valid, 1 package (tool@1.0.0), priority 200, policy shared\n';
    writeFileSync(join(dir, 'b-rollout.yaml'), rollout);
    writeFileSync(join(dir, 'a-policy.json'), JSON.stringify(parse(policy)));
    writeFileSync(join(dir, 'notes.txt'), 'not a manifest');

    test('-f given twice, one of them - (stdin)', () => {
      const r = keelsonValidate(['-f', join(dir, 'b-rollout.yaml'), '-f', '-'], policy);
      expect(r).toEqual({ code: 0, stdout: summary, stderr: '' });
    });

    test('-f DIR reads its .yaml, .yml and .json files', () => {
      expect(keelsonValidate(['-f', dir])).toEqual({ code: 0, stdout: summary, stderr: '' });
    });

    test('--json: every error and warning as an object for CI', () => {
      const tagged = rollout.replace('uses-policy', 'second').replace('example.com/tool', 'example.com/tool:bogus');
      const bad = rollout.replace('uses-policy', 'third').replace('tool:', 'Tool:');
      const r = keelsonValidate(['--json', '-f', '-'], [policy, tagged, bad].join('\n---\n'));
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout)).toEqual({
        valid: false,
        rollouts: [],
        errors: [
          {
            path: 'Skyhook/third.spec.packages.Tool',
            message: expect.stringMatching(/^package name "Tool" must match/),
          },
        ],
        warnings: [
          {
            path: 'Skyhook/second.spec.packages.tool.image',
            message:
              '"example.com/tool:bogus" has tag "bogus", which the version replaces: runs example.com/tool:1.0.0',
          },
        ],
      });
    });
  });
});
