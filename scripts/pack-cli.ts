/**
 * `npm run pack:cli [-- DEST]`: the `keelson` CLI as a package of its own, `@keelson/cli`, packed into DEST (default
 * dist-cli/) with `npm pack`; prints the tarball's path. `npm install <tarball>` then gives a `keelson` that runs
 * on Node alone.
 *
 * The repository's own package carries the worker and the API (Temporal worker, Kubernetes client, Fastify) for the
 * image; the CLI needs none of them. So the CLI is compiled on its own (tsconfig.cli.json), only the files it loads
 * are kept, and its dependencies are the packages those files require, at the repository's versions.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { requiredSpecifiers, runtimeDependencies, type Manifest } from './cli-package';

const root = join(__dirname, '..');
const packageDir = join(root, 'dist-cli', 'package');
const dist = join(packageDir, 'dist');
const entry = join(dist, 'cli', 'main.js');

function compile(): void {
  rmSync(packageDir, { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.cli.json')], {
    cwd: root,
    stdio: 'inherit',
  });
}

/** The compiled files the entry loads, and the bare specifiers they require. */
function closure(): { files: Set<string>; bare: Set<string> } {
  const files = new Set<string>();
  const bare = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of requiredSpecifiers(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) {
        bare.add(spec);
        continue;
      }
      const target = resolve(dirname(file), spec);
      const found = [`${target}.js`, join(target, 'index.js'), target].find((f) => f.endsWith('.js') && existsSync(f));
      if (!found) throw new Error(`${relative(root, file)}: requires ${spec}, which tsc did not emit`);
      visit(found);
    }
  };
  visit(entry);
  return { files, bare };
}

/** Removes what tsc emitted for type-only imports (workflow message types and the like): the CLI never loads it. */
function prune(dir: string, keep: Set<string>): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      prune(path, keep);
      if (readdirSync(path).length === 0) rmSync(path, { recursive: true });
    } else if (!keep.has(path)) rmSync(path);
  }
}

function main(): void {
  const dest = resolve(process.argv[2] ?? join(root, 'dist-cli'));
  const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest & {
    version: string;
    license: string;
    engines: Record<string, string>;
  };
  compile();
  const { files, bare } = closure();
  prune(dist, files);
  const deps = runtimeDependencies(bare, rootManifest);
  if ('errors' in deps) throw new Error(`the CLI package would not run:\n${deps.errors.join('\n')}`);
  const manifest = {
    name: '@keelson/cli',
    version: rootManifest.version,
    description: 'The keelson command line: rollouts and nodes through the Keelson API, and manifest validation',
    license: rootManifest.license,
    engines: rootManifest.engines,
    bin: { keelson: 'dist/cli/main.js' },
    files: ['dist'],
    dependencies: deps.dependencies,
  };
  writeFileSync(join(packageDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(
    join(packageDir, 'README.md'),
    '# @keelson/cli\n\nThe `keelson` command line of Keelson: `keelson --help`. Its guide is docs/cli.md in the ' +
      'Keelson repository. `keelson dev` (the local stack) runs only from a checkout of the repository.\n',
  );
  mkdirSync(dest, { recursive: true });
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', dest], { cwd: packageDir, encoding: 'utf8' }),
  ) as { filename: string }[];
  process.stdout.write(`${join(dest, packed[0]!.filename)}\n`);
}

main();
