/**
 * `npm run bench:skyhook`: the bench rollout run by Keelson, then by NVIDIA Skyhook's operator (built by
 * deploy/dev/install-skyhook.sh), on the same N, budget and simulated stage times; prints both and their ratios
 * (see bench/README.md). Usage:
 *   npm run bench:skyhook                          # N = 10
 *   npm run bench:skyhook -- --nodes 10,100 --sim-seconds 2 --budget-percent 20 --idle-seconds 30
 *   npm run bench:skyhook -- --nodes 100 --tools skyhook   # one tool only (keelson, skyhook, or both: the default)
 */
import fs from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stackUp } from '../deploy/dev/stack';
import { kubeconfigPath } from '../deploy/dev/paths';
import { apiserverRequests, diffCounts, sleep, total } from './lib/fleet';
import { VERSIONS, arg, fmt, machine, markdownTable } from './lib/machine';
import { runScenario, type ScenarioResult } from './lib/scenario';
import { applySkyhookCrds, installSkyhook } from './lib/skyhook-operator';
import { runSkyhookScenario, type SkyhookScenarioResult } from './lib/skyhook-scenario';

interface Pair {
  nodes: number;
  budget: number;
  keelson?: ScenarioResult;
  skyhook?: SkyhookScenarioResult;
  errors: string[];
}

/** Requests per second that reach the apiserver with neither tool running: other users, kwok, the stack itself. */
async function idleRate(seconds: number): Promise<number> {
  const before = await apiserverRequests();
  await sleep(seconds * 1000);
  return Math.round((total(diffCounts(await apiserverRequests(), before)) / seconds) * 10) / 10;
}

/** The figures both tools have, under one name each. */
interface Figures {
  nodeStages: number;
  makespanSeconds: number;
  idealSeconds: number;
  ratio: number;
  overheadMs: { p50: number; p95: number };
  stageToStageMs: { p95: number };
  runBeyondSimMs: { p50: number; p95: number };
  nodeSpanSeconds: { p50: number };
  apiserverRequests: { total: number; perNodeStage: number };
  ownPerNodeStage: number;
  rssMiB: number;
}

const keelsonFigures = (k: ScenarioResult): Figures => ({
  ...k,
  ownPerNodeStage: k.workerRequests.perNodeStage,
  rssMiB: k.workerPeakRssMiB,
});
const skyhookFigures = (s: SkyhookScenarioResult): Figures => ({
  ...s,
  ownPerNodeStage: s.operatorRequests.perNodeStage,
  rssMiB: s.operatorPeakRssMiB,
});

export function sideBySide(pairs: Pair[], idlePerSecond: number): string {
  const rows: string[][] = [
    [
      'N',
      'B',
      'tool',
      'node-stages',
      'makespan s',
      'ideal s',
      'ratio to ideal',
      'ovh p50 ms',
      'ovh p95 ms',
      'stage-to-stage p95 ms',
      'run - sim p50 ms',
      'node span p50 s',
      'apiserver req/ns',
      'net of idle',
      'own client req/ns',
      'rss MiB',
    ],
  ];
  for (const p of pairs) {
    const k = p.keelson && keelsonFigures(p.keelson);
    const s = p.skyhook && skyhookFigures(p.skyhook);
    for (const [tool, f] of [
      ['Keelson', k],
      ['Skyhook', s],
    ] as const) {
      if (!f) continue;
      // The apiserver delta less what the idle rate predicts over the same makespan.
      const net = (f.apiserverRequests.total - idlePerSecond * f.makespanSeconds) / f.nodeStages;
      rows.push([
        String(p.nodes),
        String(p.budget),
        tool,
        String(f.nodeStages),
        fmt(f.makespanSeconds, 1),
        String(f.idealSeconds),
        fmt(f.ratio, 2),
        fmt(f.overheadMs.p50),
        fmt(f.overheadMs.p95),
        fmt(f.stageToStageMs.p95),
        fmt(f.runBeyondSimMs.p50),
        fmt(f.nodeSpanSeconds.p50, 1),
        fmt(f.apiserverRequests.perNodeStage, 1),
        fmt(net, 1),
        fmt(f.ownPerNodeStage, 1),
        String(f.rssMiB),
      ]);
    }
    const ratio = (pick: (f: Figures) => number) => (k && s && pick(k) > 0 ? fmt(pick(s) / pick(k), 2) : '-');
    rows.push([
      String(p.nodes),
      String(p.budget),
      'Skyhook / Keelson',
      '',
      ratio((f) => f.makespanSeconds),
      '',
      '',
      ratio((f) => f.overheadMs.p50),
      ratio((f) => f.overheadMs.p95),
      ratio((f) => f.stageToStageMs.p95),
      ratio((f) => f.runBeyondSimMs.p50),
      ratio((f) => f.nodeSpanSeconds.p50),
      ratio((f) => f.apiserverRequests.perNodeStage),
      '',
      ratio((f) => f.ownPerNodeStage),
      ratio((f) => f.rssMiB),
    ]);
  }
  return markdownTable(rows);
}

async function main(): Promise<void> {
  const sizes = arg('nodes', '10').split(',').map(Number);
  const sim = Number(arg('sim-seconds', '2'));
  const budgetPct = Number(arg('budget-percent', '20'));
  const idleSeconds = Number(arg('idle-seconds', '30'));
  const tools = arg('tools', 'keelson,skyhook').split(',');
  if (tools.length === 0 || tools.some((t) => t !== 'keelson' && t !== 'skyhook'))
    throw new Error(`--tools must be keelson, skyhook or both separated by a comma, got ${arg('tools', '')}`);
  for (const [name, value] of Object.entries({ 'sim-seconds': sim, 'budget-percent': budgetPct, idleSeconds })) {
    if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a number >= 0, got ${value}`);
  }
  if (sizes.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`--nodes must be positive integers separated by commas, got ${arg('nodes', '10')}`);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  await stackUp({ nodes: 10, log });
  const operatorDir = installSkyhook(log);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  await applySkyhookCrds(kc, operatorDir);
  log(`measuring the idle apiserver request rate for ${idleSeconds}s`);
  const idlePerSecond = await idleRate(idleSeconds);
  const pairs: Pair[] = [];
  for (const n of sizes) {
    const budget = Math.max(1, Math.floor((n * budgetPct) / 100));
    const pair: Pair = { nodes: n, budget, errors: [] };
    pairs.push(pair);
    const opts = { nodes: n, budget, simSeconds: sim, log };
    if (tools.includes('keelson')) {
      try {
        pair.keelson = await runScenario(`n${n}-keelson`, opts);
      } catch (err) {
        pair.errors.push(`keelson: ${err instanceof Error ? err.message : String(err)}`);
      }
      write(pairs, idlePerSecond, operatorDir);
    }
    if (tools.includes('skyhook')) {
      try {
        pair.skyhook = await runSkyhookScenario(`n${n}-skyhook`, { ...opts, operatorDir });
      } catch (err) {
        pair.errors.push(`skyhook: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    for (const e of pair.errors) log(`n${n}: FAILED: ${e}`);
    write(pairs, idlePerSecond, operatorDir);
    log(sideBySide(pairs, idlePerSecond));
  }
  process.stdout.write(`${sideBySide(pairs, idlePerSecond)}\n`);
  process.exit(pairs.every((p) => p.errors.length === 0) ? 0 : 1);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');

/** Writes bench/results/<stamp>-skyhook.json and .md after every run, so an interrupted bench keeps its figures. */
function write(pairs: Pair[], idlePerSecond: number, operatorDir: string): void {
  const skyhookVersion = path.basename(operatorDir).replace(/^skyhook-/, '');
  const versions = { ...VERSIONS, skyhookOperator: skyhookVersion };
  const out = { when: new Date().toISOString(), versions, machine: machine(), idlePerSecond, pairs };
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${stamp}-skyhook.json`), `${JSON.stringify(out, null, 2)}\n`);
  const m = out.machine;
  const md = [
    `# Keelson and Skyhook side by side ${out.when}`,
    '',
    `Machine: ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Linux ${m.kernel}, Node ${m.node}.`,
    `Versions: Skyhook operator ${skyhookVersion}, Kubernetes ${VERSIONS.kubernetes}, etcd ${VERSIONS.etcd}, ` +
      `Temporal CLI ${VERSIONS.temporalCli}, kwok ${VERSIONS.kwok}.`,
    `Idle apiserver rate (neither tool running): ${idlePerSecond} requests/s.`,
    '',
    sideBySide(pairs, idlePerSecond),
    '',
    'ns = node-stage (a stage Job for Keelson, a stage pod for Skyhook). apiserver req/ns: every client',
    "(apiserver_request_total delta); net of idle: less the idle rate times the makespan. own client req/ns: the tool's",
    "own requests (Keelson: counted inside the worker; Skyhook: the operator's rest_client_requests_total). rss: peak.",
    'A rebooting kubelet starts no pod; the dev simulator does, and Keelson waits for Ready after a reboot while',
    'Skyhook does not, so Skyhook gains here up to the reboot time per batch that a real node would not give:',
    ...pairs.flatMap((p) => {
      const w = p.skyhook?.checks.startedWhileNotReady;
      return w
        ? [`- N=${p.nodes}: ${w.count} Skyhook stage pods started on a NotReady node, ${w.seconds} s early in all.`]
        : [];
    }),
    ...pairs.flatMap((p) => p.errors.map((e) => `- N=${p.nodes} FAILED: ${e}`)),
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, `${stamp}-skyhook.md`), md);
  process.stderr.write(`wrote bench/results/${stamp}-skyhook.json and .md\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:skyhook: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
