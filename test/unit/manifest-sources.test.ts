import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { rolloutFromBody } from '../../api/manifest-body';
import { loadManifests, requestDocuments } from '../../cli/commands/manifests';
import { readManifestSources, STDIN_NAME } from '../../client/manifest-file';

// `-f` as kubectl reads it (files, directories, stdin, any number of them), and a DeploymentPolicy kept in its own
// document or file, from the CLI through to the API's request body.

const rolloutYaml = (name: string, policyName = 'shared') =>
  [
    'apiVersion: skyhook.nvidia.com/v1alpha1',
    'kind: Skyhook',
    `metadata: {name: ${name}}`,
    'spec:',
    `  deploymentPolicy: ${policyName}`,
    '  nodeSelectors: {matchLabels: {pool: gpu}}',
    '  packages: {tool: {version: 1.0.0, image: example.com/tool}}',
  ].join('\n');
const policyYaml = (name = 'shared') =>
  [
    'apiVersion: skyhook.nvidia.com/v1alpha1',
    'kind: DeploymentPolicy',
    `metadata: {name: ${name}}`,
    'spec: {default: {budget: {count: 1}, strategy: {fixed: {}}}}',
  ].join('\n');

const noStdin = () => Promise.reject(new Error('stdin was not to be read'));
const stdinOf = (text: string) => () => Promise.resolve(text);

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'keelson-sources-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('readManifestSources', () => {
  test('arguments in order; a directory gives its .yaml, .yml and .json files sorted, not its subdirectories', async () => {
    const dir = tree({
      'm/b.yml': 'kind: B',
      'm/a.JSON': '{"kind": "A"}',
      'm/c.yaml': 'kind: C1\n---\nkind: C2',
      'm/notes.txt': 'kind: Ignored',
      'm/sub/d.yaml': 'kind: Nested',
      'first.yaml': 'kind: First',
    });
    const read = await readManifestSources([join(dir, 'first.yaml'), join(dir, 'm'), '-'], stdinOf('kind: Piped'));
    expect(read).toEqual({
      sources: [
        join(dir, 'first.yaml'),
        join(dir, 'm/a.JSON'),
        join(dir, 'm/b.yml'),
        join(dir, 'm/c.yaml'),
        STDIN_NAME,
      ],
      documents: [{ kind: 'First' }, { kind: 'A' }, { kind: 'B' }, { kind: 'C1' }, { kind: 'C2' }, { kind: 'Piped' }],
      origins: [
        `${join(dir, 'first.yaml')}:document[0]`,
        `${join(dir, 'm/a.JSON')}:document[0]`,
        `${join(dir, 'm/b.yml')}:document[0]`,
        `${join(dir, 'm/c.yaml')}:document[0]`,
        `${join(dir, 'm/c.yaml')}:document[1]`,
        `${STDIN_NAME}:document[0]`,
      ],
    });
  });

  test('a file named twice (itself and through its directory) is read once', async () => {
    const dir = tree({ 'a.yaml': 'kind: A' });
    const read = await readManifestSources([join(dir, 'a.yaml'), dir], noStdin);
    expect(read).toMatchObject({ documents: [{ kind: 'A' }] });
  });

  test('a file named by another path of its own (./dir/a.yaml beside dir) is read once', async () => {
    const dir = tree({ 'a.yaml': 'kind: A' });
    const read = await readManifestSources([join(dir, '.', 'sub', '..', 'a.yaml'), `${dir}/`], noStdin);
    expect(read).toMatchObject({ documents: [{ kind: 'A' }] });
  });

  test('every problem at once: a missing file, bad YAML, a directory without manifests, stdin twice', async () => {
    const dir = tree({ 'bad.yaml': 'a: [1, 2', 'empty/readme.md': '#' });
    const read = await readManifestSources(
      [join(dir, 'nope.yaml'), join(dir, 'bad.yaml'), join(dir, 'empty'), '-', '-'],
      stdinOf('kind: X'),
    );
    expect(read).toEqual({
      problems: [
        { path: STDIN_NAME, message: 'is given more than once' },
        { path: join(dir, 'nope.yaml'), message: 'no such file' },
        { path: join(dir, 'bad.yaml'), message: expect.stringMatching(/^is not valid YAML: /) },
        { path: join(dir, 'empty'), message: 'holds no .yaml, .yml, .json file' },
      ],
    });
  });
});

describe('loadManifests', () => {
  test('a policy in another file is matched by name; each rollout gets its own request with that policy', async () => {
    const dir = tree({
      'policies/shared.yaml': policyYaml(),
      'policies/other.yaml': policyYaml('other'),
      'rollouts/one.yaml': rolloutYaml('one'),
    });
    const m = await loadManifests([join(dir, 'rollouts'), join(dir, 'policies')], stdinOf(rolloutYaml('two', 'other')));
    expect([m.errors, m.warnings]).toEqual([[], []]);
    expect(m.rollouts.map((r) => [r.name, r.policy?.name])).toEqual([['one', 'shared']]);
    const piped = await loadManifests([join(dir, 'policies'), '-'], stdinOf(rolloutYaml('two', 'other')));
    expect(piped.rollouts.map((r) => [r.name, r.policy?.name])).toEqual([['two', 'other']]);
    const body = requestDocuments(piped.documents, piped.rollouts[0]!);
    expect(body.map((d) => (d as { metadata: { name: string } }).metadata.name)).toEqual(['two', 'other']);
    expect(rolloutFromBody(body)).toEqual(piped.rollouts[0]);
  });

  test('the policy missing from every file: one error at the reference; no rollout at all: said so', async () => {
    const dir = tree({ 'one.yaml': rolloutYaml('one'), 'p.yaml': policyYaml(), 'empty.yaml': '' });
    const missing = await loadManifests([join(dir, 'one.yaml')], noStdin);
    expect(missing.errors).toEqual([
      {
        path: 'Skyhook/one.spec.deploymentPolicy',
        message: '"shared" names no DeploymentPolicy among the documents given or the known policies',
      },
    ]);
    const policyOnly = await loadManifests([join(dir, 'p.yaml'), join(dir, 'empty.yaml')], noStdin);
    expect(policyOnly.errors).toEqual([
      {
        path: `${join(dir, 'p.yaml')}, ${join(dir, 'empty.yaml')}`,
        message: 'holds no rollout (no Skyhook or NodeWright document)',
      },
    ]);
  });

  test('a document with no kind or name is named by its file and place', async () => {
    const dir = tree({ 'mixed.yaml': `${policyYaml()}\n---\n- a list\n` });
    const m = await loadManifests([join(dir, 'mixed.yaml')], noStdin);
    expect(m.errors[0]).toEqual({
      path: `${join(dir, 'mixed.yaml')}:document[1]`,
      message: 'expected a mapping, got a list',
    });
  });
});

describe('the API request body', () => {
  test('a policy in a separate document, before or after the rollout, as YAML text or a JSON list', () => {
    const [rollout, policy] = [rolloutYaml('one'), policyYaml()];
    for (const body of [
      `${rollout}\n---\n${policy}`,
      `${policy}\n---\n${rollout}`,
      [parse(rollout), parse(policy)],
      [parse(policy), parse(rollout)],
    ]) {
      expect(rolloutFromBody(body)).toMatchObject({ name: 'one', policy: { name: 'shared' } });
    }
  });
});
