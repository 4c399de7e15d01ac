import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

// The project modules the workflow bundle reaches from its entry, read from the sources' import statements (values,
// not types), as webpack follows them.

export const root = path.resolve(__dirname, '../..');

/**
 * Every module the bundle holds (`lazy`: through `import()` as well), or only those each workflow instantiates when the
 * entry is loaded (static imports: the worker's reusable context instantiates them for every workflow it caches).
 */
export function bundledModules({ lazy }: { lazy: boolean }): string[] {
  const seen = new Set<string>();
  // `import … from`, `export … from` and a bare `import '…'`, of a relative path ('.' and '..' included).
  const statics = /^(?:import|export)\s+(?!type\b)(?:[^;]*?from\s+)?'(\.{1,2}(?:\/[^']*)?)'/gms;
  const dynamics = /\bimport\(\s*(?:\/\*[^*]*\*\/\s*)?'(\.{1,2}(?:\/[^']*)?)'\s*\)/g;
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    const specifiers = [...text.matchAll(statics), ...(lazy ? text.matchAll(dynamics) : [])].map((m) => m[1]!);
    for (const specifier of specifiers) {
      // An import() names the file as Node's ESM resolution wants it (.js); webpack finds the .ts.
      const base = path.resolve(path.dirname(file), specifier.replace(/\.js$/, ''));
      const found = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => existsSync(f));
      if (!found) throw new Error(`${path.relative(root, file)}: cannot resolve ${specifier}`);
      visit(found);
    }
  };
  visit(path.join(root, 'workflows/index.ts'));
  return [...seen].map((f) => path.relative(root, f)).sort();
}
