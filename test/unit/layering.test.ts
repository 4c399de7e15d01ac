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
};

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return sources(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

const IMPORT = /^(import(?: type)?)[^'"]*? from '(\.[^']+)';/gm;

test('each folder imports only the floors below it; workflow code imports activities as types only', () => {
  const wrong: string[] = [];
  for (const [floor, allowed] of Object.entries(FLOORS)) {
    for (const file of sources(floor)) {
      for (const [, kind, spec] of fs.readFileSync(path.join(root, file), 'utf8').matchAll(IMPORT)) {
        const target = path.relative(root, path.resolve(root, path.dirname(file), spec!)).split(path.sep)[0]!;
        if (target === floor) continue;
        const typeOnly = kind === 'import type';
        if (!allowed.includes(target))
          wrong.push(`${file}: ${spec} (${floor} may import ${allowed.join(', ') || 'nothing'})`);
        else if (floor === 'workflows' && target === 'activities' && !typeOnly)
          wrong.push(`${file}: ${spec} (types only)`);
      }
    }
  }
  expect(wrong).toEqual([]);
});
