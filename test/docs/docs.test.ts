import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot, toolPaths } from '../../deploy/dev/paths';
import { KUBE_FEATURES, formatKubeVersion, kubeFloor } from '../../model/kube-version';
import { loadConfig, WorkerConfigSchema } from '../../workers/config';
import { METRICS } from '../../workers/metrics';
import { BEGIN, END, ruleFor, settingsTable, SETTINGS_DOC } from '../../scripts/docs-settings';

// G9: the settings table is the schema's. G10: every shell command, label selector and example manifest in docs/
// runs against the local stack. A ```sh block preceded by `<!-- not run: reason -->` is skipped, and that list is
// kept short: each entry is named below with its reason.

const docsDir = path.join(projectRoot, 'docs');
const OTHERS = new Set(['cli.md', 'api.md']); // written and tested elsewhere
const docs = fs
  .readdirSync(docsDir)
  .filter((f) => f.endsWith('.md') && !OTHERS.has(f))
  .map((f) => ({ file: f, text: fs.readFileSync(path.join(docsDir, f), 'utf8') }));

interface Block {
  file: string;
  lang: string;
  body: string;
  notRun?: string;
}

function blocks(): Block[] {
  const out: Block[] = [];
  const fence = /(?:<!-- not run: (.+?) -->\n+)?```(\w*)\n([\s\S]*?)```/g;
  for (const { file, text } of docs) {
    for (const m of text.matchAll(fence)) out.push({ file, lang: m[2]!, body: m[3]!, notRun: m[1] });
  }
  return out;
}

const tools = toolPaths();
const binDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-docs-bin-'));
fs.symlinkSync(path.join(tools.kubeBin, 'kubectl'), path.join(binDir, 'kubectl'));
fs.symlinkSync(tools.helm, path.join(binDir, 'helm'));
const env = { ...process.env, PATH: `${binDir}:${process.env.PATH}` };

function run(script: string): { status: number | null; out: string } {
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: projectRoot, env, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('G9 settings documentation', () => {
  test('G9 the committed settings table is the one generated from WorkerConfigSchema', () => {
    // Compared as prettier leaves tables (cells padded): runs of spaces and of dashes count as one.
    const norm = (t: string) => t.replace(/ +/g, ' ').replace(/-{3,}/g, '---').trim();
    const committed = fs.readFileSync(SETTINGS_DOC, 'utf8');
    const section = committed.slice(committed.indexOf(BEGIN) + BEGIN.length, committed.indexOf(END));
    expect(norm(section)).toBe(norm(settingsTable()));
  });

  test('G9 every setting is in the table, and a bad value gets the documented message', () => {
    const committed = fs.readFileSync(SETTINGS_DOC, 'utf8').replace(/ +/g, ' ');
    for (const key of Object.keys(WorkerConfigSchema.shape)) {
      const rule = ruleFor(key);
      expect(committed).toContain(`| \`${key}\` |`);
      if (rule === undefined) continue;
      expect(committed).toContain(rule.replace(/\|/g, '\\|'));
      expect(() => loadConfig({ [key]: '!' })).toThrow(`${key}="!": ${rule}`);
    }
  });
});

describe('G10 docs run against the local stack', () => {
  const all = blocks();
  const sh = all.filter((b) => b.lang === 'sh');

  test('the list of commands not run is short and each has a reason', () => {
    const skipped = sh.filter((b) => b.notRun !== undefined).map((b) => b.file);
    expect(skipped.sort()).toEqual(['install.md', 'metrics.md', 'quickstart.md']);
    expect(sh.filter((b) => b.notRun === undefined).length).toBeGreaterThanOrEqual(6);
  });

  const runnable = sh.filter((b) => b.notRun === undefined);
  test.each(runnable.map((b) => [b.file, b.body.trim()] as const))('G10 %s: %s', (_file, body) => {
    const r = run(body);
    if (r.status !== 0) throw new Error(`exit ${r.status}:\n${r.out}`);
    expect(r.out).not.toMatch(/error:/i);
  });

  test('G10 every node label selector in the docs matches a node of the local stack', () => {
    const selectors = new Set<string>();
    for (const b of sh) {
      for (const m of b.body.matchAll(/kubectl get nodes -l ('[^']+'|\S+)/g))
        selectors.add(m[1]!.replace(/^'|'$/g, ''));
    }
    expect(selectors.size).toBeGreaterThanOrEqual(4);
    for (const sel of selectors) {
      const out = execFileSync(path.join(binDir, 'kubectl'), ['get', 'nodes', '-l', sel, '-o', 'name'], {
        env,
        encoding: 'utf8',
      });
      expect([sel, out.trim().split('\n').filter(Boolean).length > 0]).toEqual([sel, true]);
    }
  });

  test('G10 every example manifest in docs/ validates', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-docs-yaml-'));
    const files = fs.readdirSync(path.join(docsDir, 'examples')).map((f) => path.join(docsDir, 'examples', f));
    all
      .filter((b) => b.lang === 'yaml' && /^apiVersion: (skyhook|nodewright)\.nvidia\.com/m.test(b.body))
      .forEach((b, i) => {
        const f = path.join(dir, `${b.file}-${i}.yaml`);
        fs.writeFileSync(f, b.body);
        files.push(f);
      });
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const f of files) {
      expect(YAML.parseAllDocuments(fs.readFileSync(f, 'utf8')).length).toBeGreaterThan(0);
      const r = run(`npx keelson validate -f ${JSON.stringify(f)}`);
      expect([f, r.status, r.out]).toEqual([f, 0, expect.stringContaining(': valid')]);
    }
  });
});

describe('docs agree with the code', () => {
  test('G8 kubernetes-floor.md states the floor and every feature the check uses', () => {
    const text = docs.find((d) => d.file === 'kubernetes-floor.md')!.text;
    const floor = kubeFloor();
    expect(text).toContain(`Floor: **Kubernetes ${floor.major}.${floor.minor}**`);
    const rows = [...text.matchAll(/^\| ([^|]+?) +\| (\d+\.\d+) +\| /gm)].map((m) => [m[1], m[2]]);
    expect(rows).toEqual(KUBE_FEATURES.map((f) => [f.name, `${f.since.major}.${f.since.minor}`]));
    expect(formatKubeVersion(floor)).toBe(`${floor.major}.${floor.minor}.0`);
  });

  test("install.md's tables list every monitoring, API TLS and Ingress value of the chart, with its default", () => {
    const values = YAML.parse(
      fs.readFileSync(path.join(projectRoot, 'deploy', 'helm', 'keelson', 'values.yaml'), 'utf8'),
    ) as { monitoring: Record<string, unknown>; api: { tls: unknown; ingress: unknown } };
    // Label and annotation maps are one value each; other objects are groups of values.
    const leaves = (prefix: string, v: unknown): [string, unknown][] =>
      v !== null && typeof v === 'object' && !/\.(labels|annotations)$/.test(prefix)
        ? Object.entries(v).flatMap(([k, x]) => leaves(`${prefix}.${k}`, x))
        : [[prefix, v]];
    const rows = [
      ...leaves('monitoring', values.monitoring),
      ...leaves('api.tls', values.api.tls),
      ...leaves('api.ingress', values.api.ingress),
    ];
    expect(rows.length).toBeGreaterThanOrEqual(17);
    const text = docs.find((d) => d.file === 'install.md')!.text.replace(/ +/g, ' ');
    for (const [name, value] of rows) {
      const shown =
        typeof value === 'object' && value !== null
          ? `{${Object.entries(value)
              .map(([k, x]) => `${k}: '${String(x)}'`)
              .join(', ')}}`
          : value === ''
            ? "''"
            : String(value);
      expect(text).toContain(`| \`${name}\` | \`${shown}\` |`);
    }
  });

  test('metrics.md documents every metric the worker registers, with its type and labels', () => {
    const text = docs.find((d) => d.file === 'metrics.md')!.text.replace(/ +/g, ' ');
    for (const m of METRICS) {
      const row = `| \`${m.name}\` | ${m.type} | ${m.labels.join(', ')} | ${m.help} |`;
      // A metric without labels has an empty cell: its row's spaces collapse as the page's do.
      expect(text).toContain(row.replace(/ +/g, ' '));
    }
  });
});

// The design where the code is (docs/architecture.md): a Skyhook rule is cited by its section number, a numbered
// heading of the "Skyhook semantics" part; a guarantee by its number, a row of the guarantees table, whose tests must
// exist; any other part of the docs by `<file>.md, "<heading>"`. No citation may point outside the repository.
describe('citations resolve to docs/architecture.md', () => {
  const architecture = fs.readFileSync(path.join(docsDir, 'architecture.md'), 'utf8');
  const sources = citingFiles();

  /** Every text file of the checkout that git tracks or would track: code, docs, charts, scripts. */
  function citingFiles(): { file: string; text: string }[] {
    const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
      cwd: projectRoot,
      encoding: 'utf8',
    });
    return listed
      .split('\0')
      .filter((f) => f !== '' && !/\.(json|sum|mod|png|svg)$/.test(f))
      .filter((f) => fs.statSync(path.join(projectRoot, f), { throwIfNoEntry: false })?.isFile() === true)
      .map((f) => ({ file: f, text: fs.readFileSync(path.join(projectRoot, f), 'utf8') }))
      .filter(({ text }) => !text.includes('\0'));
  }

  /** `file:line: what` for every match of `re` in every file for which `ok` is false. */
  function unresolved(re: RegExp, ok: (m: RegExpMatchArray, file: string) => boolean): string[] {
    const bad: string[] = [];
    for (const { file, text } of sources) {
      for (const m of text.matchAll(re)) {
        if (ok(m, file)) continue;
        const line = text.slice(0, m.index).split('\n').length;
        bad.push(`${file}:${line}: ${m[0]}`);
      }
    }
    return bad;
  }

  /** The numbered headings of the Skyhook semantics part, each at the level its number's depth gives. */
  function semanticsSections(): Map<string, number> {
    const start = architecture.indexOf('\n## Skyhook semantics\n');
    expect(start).toBeGreaterThan(0);
    const rest = architecture.slice(start + 1);
    const end = rest.slice(1).search(/^## /m);
    const part = end < 0 ? rest : rest.slice(0, end + 1);
    const sections = new Map<string, number>();
    for (const m of part.matchAll(/^(#{3,6}) (\d+(?:\.\d+)*)\.? /gm)) sections.set(m[2]!, m[1]!.length);
    return sections;
  }

  /** Guarantee rows: `| G<n> <name> | <meaning> | <tests> |`. */
  function guaranteeRows(): { id: string; tests: string[] }[] {
    return [...architecture.matchAll(/^\| (G\d+) [^|]*\|[^|]*\|([^|]*)\|$/gm)].map((m) => ({
      id: m[1]!,
      tests: [...m[2]!.matchAll(/`([^`]+)`/g)].map((t) => t[1]!),
    }));
  }

  test('the Skyhook semantics part numbers its headings by depth', () => {
    const sections = semanticsSections();
    expect(sections.size).toBeGreaterThanOrEqual(25);
    for (const [n, level] of sections) expect([n, level]).toEqual([n, 2 + n.split('.').length]);
  });

  test('every section cited (§n) in code and docs is a heading of the Skyhook semantics part', () => {
    const sections = semanticsSections();
    const cited = sources.reduce((n, { text }) => n + [...text.matchAll(/§(\d+(?:\.\d+)*)/g)].length, 0);
    expect(cited).toBeGreaterThanOrEqual(100);
    expect(unresolved(/§(\d+(?:\.\d+)*)/g, (m) => sections.has(m[1]!))).toEqual([]);
  });

  test('every guarantee cited (G<n>) in code and docs is a row of the guarantees table', () => {
    const rows = new Set(guaranteeRows().map((r) => r.id));
    expect(rows.size).toBeGreaterThanOrEqual(14);
    expect(unresolved(/\bG(\d+)\b/g, (m) => rows.has(m[0]))).toEqual([]);
  });

  test("every guarantee row's tests exist, and one of them is named after it", () => {
    for (const { id, tests } of guaranteeRows()) {
      expect([id, tests.length > 0]).toEqual([id, true]);
      for (const t of tests) {
        expect([id, t, t.startsWith('test/') && fs.existsSync(path.join(projectRoot, t))]).toEqual([id, t, true]);
      }
      const named = new RegExp(`^\\s*(?:test|it|describe)(?:\\.\\w+)*\\(.*['"\`][^'"\`\\n]*\\b${id}\\b`, 'm');
      const files = tests.filter((t) => fs.statSync(path.join(projectRoot, t)).isFile());
      const namedIn = files.filter((t) => named.test(fs.readFileSync(path.join(projectRoot, t), 'utf8')));
      expect([id, namedIn.length > 0]).toEqual([id, true]);
    }
  });

  test('every `<file>.md, "<heading>"` citation names a heading of that file', () => {
    const headings = (file: string) =>
      new Set([...fs.readFileSync(file, 'utf8').matchAll(/^#{1,6} (.+?)\s*$/gm)].map((m) => m[1]!));
    const cache = new Map<string, Set<string>>();
    const bad = unresolved(/([\w./-]+\.md), "([^"\n]+)"/g, (m, from) => {
      const candidates = [m[1]!, path.join(path.dirname(from), m[1]!)].map((p) => path.join(projectRoot, p));
      const file = candidates.find((p) => fs.existsSync(p));
      if (!file) return false;
      if (!cache.has(file)) cache.set(file, headings(file));
      return cache.get(file)!.has(m[2]!);
    });
    expect(bad).toEqual([]);
  });

  test('every docs/ page cited exists, and nothing cites a design file outside the repository', () => {
    expect(unresolved(/\bdocs\/[\w-]+\.md\b/g, (m) => fs.existsSync(path.join(projectRoot, m[0])))).toEqual([]);
    const outside =
      /DESIGN\.md|\.\.\/shared\/|\breference\/[\w-]+\.md|skyhook-semantics\.md|review-?findings|temporal-?sdk-notes/g;
    expect(unresolved(outside, () => false)).toEqual([]);
  });

  test('the README links every document in docs/', () => {
    const readme = fs.readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    const pages = fs.readdirSync(docsDir).filter((f) => f.endsWith('.md'));
    expect(pages.filter((f) => !readme.includes(`](docs/${f})`))).toEqual([]);
  });
});
