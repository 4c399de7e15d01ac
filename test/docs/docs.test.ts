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

  test('metrics.md documents every metric the worker registers, with its type and labels', () => {
    const text = docs.find((d) => d.file === 'metrics.md')!.text.replace(/ +/g, ' ');
    for (const m of METRICS) {
      expect(text).toContain(`| \`${m.name}\` | ${m.type} | ${m.labels.join(', ')} | ${m.help} |`);
    }
  });
});
