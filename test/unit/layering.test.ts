import fs from 'node:fs';
import path from 'node:path';

// The floors of the code (docs/architecture.md, "The picture"): each top-level folder imports only the folders
// below it. A new arrow up fails here, with the file and the import.

const root = path.join(__dirname, '..', '..');
const FLOORS: Record<string, string[]> = {
  model: [],
  activities: ['model'],
  // Workflow code sees activities only as types: the contract it calls through proxies.
  workflows: ['model', 'activities'],
  workers: ['model', 'activities', 'workflows'],
  client: ['model', 'workers', 'workflows'],
  api: ['model', 'workers', 'client'],
  controller: ['model', 'activities', 'workers', 'client'],
  cli: ['model', 'workflows', 'client', 'deploy'],
  // What the tests and the bench share: test/ imports bench/ and harness/, bench/ only harness/.
  harness: ['model', 'activities', 'workflows', 'workers', 'client', 'api', 'deploy'],
  bench: ['model', 'activities', 'workflows', 'workers', 'client', 'api', 'deploy', 'harness'],
  // The local stack: never the tests' harness (the arrow the one harness removed).
  deploy: ['model', 'workflows', 'scripts'],
};

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return sources(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

// Every way a module names another by a relative path: import (type, side effect), export ... from, require, import().
const STATIC = /^\s*(import\s+type|import|export)\b(?:[^'"]*?\bfrom)?\s*['"](\.[^'"]+)['"]/gm;
const DYNAMIC = /\b(?:require|import)\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** The relative module paths a file names, and whether each is a type-only import. */
function relativeImports(text: string): { spec: string; typeOnly: boolean }[] {
  return [
    ...[...text.matchAll(STATIC)].map((m) => ({ spec: m[2]!, typeOnly: /^import\s+type$/.test(m[1]!) })),
    ...[...text.matchAll(DYNAMIC)].map((m) => ({ spec: m[1]!, typeOnly: false })),
  ];
}

test('the import reader finds every form of a relative import', () => {
  const text = [
    "import { a } from '../x/a';",
    "  import type { B } from '../x/b';",
    "import '../x/side-effect';",
    "export * from '../x/all';",
    "export { c } from '../x/c';",
    'import {',
    '  d,',
    "} from '../x/d';",
    "const e = require('../x/e');",
    "const f = await import('../x/f');",
  ].join('\n');
  expect(relativeImports(text)).toEqual([
    { spec: '../x/a', typeOnly: false },
    { spec: '../x/b', typeOnly: true },
    { spec: '../x/side-effect', typeOnly: false },
    { spec: '../x/all', typeOnly: false },
    { spec: '../x/c', typeOnly: false },
    { spec: '../x/d', typeOnly: false },
    { spec: '../x/e', typeOnly: false },
    { spec: '../x/f', typeOnly: false },
  ]);
});

test('each folder imports only the floors below it; workflow code imports activities as types only', () => {
  const wrong: string[] = [];
  for (const [floor, allowed] of Object.entries(FLOORS)) {
    for (const file of sources(floor)) {
      for (const { spec, typeOnly } of relativeImports(fs.readFileSync(path.join(root, file), 'utf8'))) {
        const target = path.relative(root, path.resolve(root, path.dirname(file), spec)).split(path.sep)[0]!;
        if (target === floor) continue;
        if (!allowed.includes(target))
          wrong.push(`${file}: ${spec} (${floor} may import ${allowed.join(', ') || 'nothing'})`);
        else if (floor === 'workflows' && target === 'activities' && !typeOnly)
          wrong.push(`${file}: ${spec} (types only)`);
      }
    }
  }
  expect(wrong).toEqual([]);
});
