import { isBuiltin } from 'node:module';

// The pure half of `npm run pack:cli` (scripts/pack-cli.ts): which compiled files the CLI loads and which packages
// it needs at run time, so that the package carries those and nothing else.

/** The specifiers of the `require("...")` calls tsc wrote into a CommonJS file. */
export function requiredSpecifiers(js: string): string[] {
  return [...js.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]!);
}

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

export interface Manifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/**
 * The dependencies of the CLI package: each package the compiled CLI requires, at the repository's version range. A
 * package that is only a dev dependency, or no dependency at all, would be missing once installed: an error.
 */
export function runtimeDependencies(
  specifiers: Iterable<string>,
  root: Manifest,
): { dependencies: Record<string, string> } | { errors: string[] } {
  const dependencies: Record<string, string> = {};
  const errors: string[] = [];
  for (const name of [...new Set([...specifiers].filter((s) => !isBuiltin(s)).map(packageNameOf))].sort()) {
    const range = root.dependencies?.[name];
    if (range !== undefined) dependencies[name] = range;
    else if (root.devDependencies?.[name] !== undefined)
      errors.push(`${name}: the CLI loads it at run time, but package.json has it in devDependencies only`);
    else errors.push(`${name}: the CLI loads it at run time, but package.json does not depend on it`);
  }
  return errors.length ? { errors } : { dependencies };
}
