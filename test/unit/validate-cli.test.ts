import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// `keelson validate` as users run it: a real process, real exit codes, real stdout and stderr.

const root = join(__dirname, '..', '..');
const fixture = (name: string) => join(root, 'test', 'fixtures', 'manifests', name);

function validate(file: string) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'keelson.js'), 'validate', '-f', file], {
    encoding: 'utf8',
    cwd: root,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const lines = (text: string) => text.split('\n').filter((l) => l !== '');

describe('keelson validate', () => {
  test.each([
    [
      'skyhook-valid.yaml',
      'Skyhook/simple-skyhook: valid, 3 packages (dexter@1.2.3, foobar@1.2, spencer@3.2.3), priority 200, interruptionBudget percent 50',
    ],
    [
      'nodewright-valid.yaml',
      'NodeWright/tuning: valid, 1 package (sysctl-tuning@2024.7.7-test), priority 150, interruptionBudget percent 100, paused',
    ],
    [
      'policy-and-rollout.yaml',
      'Skyhook/driver-rollout: valid, 1 package (driver@550.54.15), priority 200, policy staged',
    ],
  ])('%s: exit 0, one summary line per rollout', (file, summary) => {
    const r = validate(fixture(file));
    expect(r).toEqual({ code: 0, stdout: `${summary}\n`, stderr: '' });
  });

  test('invalid package: one path: message line per error on stderr, exit 1', () => {
    const r = validate(fixture('invalid-package.yaml'));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(lines(r.stderr).sort()).toEqual(
      [
        'Skyhook/broken.spec.packages.dexter.version: "v1.x" is not a semantic version (MAJOR[.MINOR[.PATCH[-PRERELEASE][+BUILD]]], e.g. 1.2.3 or 1.2)',
        'Skyhook/broken.spec.packages.dexter.resources.cpuLimit: "100m" is below cpuRequest "200m": a limit may not be lower than its request',
        'Skyhook/broken.spec.packages.dexter.image: "ghcr.io/nvidia/skyhook/agentless:2.0.0" has tag "2.0.0" but version is "v1.x": the tag is always the version, omit it',
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
      'Skyhook/uses-missing.spec.deploymentPolicy: "nowhere" names no DeploymentPolicy in this file or among the known policies',
    ]);
  });

  test.each([
    ['not-yaml.txt', /^.*not-yaml\.txt: is not valid YAML: .+$/],
    [
      'no-rollout.yaml',
      /^.*no-rollout\.yaml: holds no rollout \(no Skyhook, NodeWright or DeploymentPolicy document\)$/,
    ],
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
});
