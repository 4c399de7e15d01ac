/**
 * `npm run bench:skyhook`: the bench rollout run by Keelson and by NVIDIA Skyhook's operator (built by
 * deploy/dev/install-skyhook.sh from SKYHOOK_REPO or a clone of its own), on the same N, budget and simulated stage
 * times, `--repeat` times per point with the tools taking turns to go first; prints the medians, their ranges and
 * their ratios (see bench/README.md). Usage:
 *   npm run bench:skyhook                          # N = 10, three rounds
 *   npm run bench:skyhook -- --nodes 10,100 --repeat 3 --sim-seconds 2 --budget-percent 20 --idle-seconds 30
 *   npm run bench:skyhook -- --nodes 100 --tools skyhook   # one tool only (keelson, skyhook, or both: the default)
 *   npm run bench:skyhook -- --worker tsx --temporal shared  # the earlier bench's Keelson setup, for comparison
 */
import fs from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stackUp } from '../deploy/dev/stack';
import { kubeconfigPath } from '../deploy/dev/paths';
import { apiserverSample, diffCounts, sleep, total } from './lib/fleet';
import { keelsonSetup } from './lib/build';
import { VERSIONS, arg, cell, fmt, machine, markdownTable, median, repeatArg } from './lib/machine';
import { runScenario, type ScenarioResult } from './lib/scenario';
import { applySkyhookCrds, installSkyhook } from './lib/skyhook-operator';
import { runSkyhookScenario, type SkyhookScenarioResult } from './lib/skyhook-scenario';

type Tool = 'keelson' | 'skyhook';

/** One run of each tool at a point, in the order they ran. */
export interface Round {
  order: Tool[];
  keelson?: ScenarioResult;
  skyhook?: SkyhookScenarioResult;
  errors: string[];
}

/** One point (N, B) and its rounds; the tables show the median over rounds, and the range. */
export interface Point {
  nodes: number;
  budget: number;
  rounds: Round[];
}

/** Requests per second that reach the apiserver with neither tool running: other users, kwok, the stack itself. */
async function idleRate(seconds: number): Promise<number> {
  const before = await apiserverSample();
  await sleep(seconds * 1000);
  const after = await apiserverSample();
  return Math.round((total(diffCounts(after.requests, before.requests)) / seconds) * 10) / 10;
}

/** The figures both tools have, under one name each, for one run. */
interface Figures {
  nodeStages: number;
  makespanSeconds: number;
  idealSeconds: number;
  ratio: number;
  maxInFlight: number;
  maxCordoned: number;
  overheadP50: number;
  overheadP95: number;
  stageToStageP95: number;
  runBeyondSimP50: number;
  /** Its split (bench/lib/fleet.ts): Job to pod (Keelson only), pod to Running, Running to done less the sim. */
  jobToPodP50: number;
  podToRunningP50: number;
  runningBeyondSimP50: number;
  nodeSpanP50: number;
  /** Keelson only: per node, its workflow tasks that started a stage, from scheduled to completed (ms). */
  stageStartTasksPerNode: number;
  apiserverPerNodeStage: number;
  /** The apiserver delta less what the idle rate predicts over the same makespan, per node-stage. */
  netOfIdle: number;
  ownPerNodeStage: number;
  /** CPU s per node-stage: the tool's own process (worker / operator), its Temporal, the kube-apiserver. */
  cpuTool: number;
  cpuTemporal: number;
  cpuApiserver: number;
  apiserverMeanMs: number;
  machineBusy: number;
  rssMiB: number;
}

function common(r: ScenarioResult | SkyhookScenarioResult, idlePerSecond: number) {
  return {
    nodeStages: r.nodeStages,
    makespanSeconds: r.makespanSeconds,
    idealSeconds: r.idealSeconds,
    ratio: r.ratio,
    maxInFlight: r.budgetUse.maxInFlight,
    maxCordoned: r.budgetUse.maxCordoned,
    overheadP50: r.overheadMs.p50,
    overheadP95: r.overheadMs.p95,
    stageToStageP95: r.stageToStageMs.p95,
    runBeyondSimP50: r.runBeyondSimMs.p50,
    jobToPodP50: r.jobToPodMs?.p50 ?? NaN,
    podToRunningP50: r.podToRunningMs.p50,
    runningBeyondSimP50: r.runningBeyondSimMs.p50,
    nodeSpanP50: r.nodeSpanSeconds.p50,
    apiserverPerNodeStage: r.apiserverRequests.perNodeStage,
    netOfIdle: (r.apiserverRequests.total - idlePerSecond * r.makespanSeconds) / r.nodeStages,
    cpuApiserver: r.cpuPerNodeStage['kube-apiserver'] ?? NaN,
    apiserverMeanMs: r.apiserverMeanMs,
    machineBusy: r.machineBusy,
  };
}

const keelsonFigures = (k: ScenarioResult, idle: number): Figures => ({
  ...common(k, idle),
  stageStartTasksPerNode: k.stageStartTaskMs.perNode.p50,
  ownPerNodeStage: k.workerRequests.perNodeStage,
  cpuTool: k.cpuPerNodeStage.worker ?? NaN,
  cpuTemporal: k.cpuPerNodeStage.temporal ?? NaN,
  rssMiB: k.workersPeakRssMiB,
});
const skyhookFigures = (s: SkyhookScenarioResult, idle: number): Figures => ({
  ...common(s, idle),
  stageStartTasksPerNode: NaN,
  ownPerNodeStage: s.operatorRequests.perNodeStage,
  cpuTool: s.cpuPerNodeStage.operator ?? NaN,
  cpuTemporal: NaN,
  rssMiB: s.operatorPeakRssMiB,
});

/** Every successful run of one tool at a point. */
function figuresOf(p: Point, tool: Tool, idle: number): Figures[] {
  return p.rounds.flatMap((r) => {
    if (tool === 'keelson') return r.keelson ? [keelsonFigures(r.keelson, idle)] : [];
    return r.skyhook ? [skyhookFigures(r.skyhook, idle)] : [];
  });
}

/**
 * The side-by-side table: per point and tool, the median over its runs and (with more than one) the range; the
 * budget columns show the largest sample of any run against B; the last row of a point divides the medians.
 */
export function sideBySide(points: Point[], idlePerSecond: number): string {
  const rows: string[][] = [
    [
      'N',
      'B',
      'tool',
      'runs',
      'makespan s',
      'ideal s',
      'ratio to ideal',
      'max in flight / B',
      'max cordoned / B',
      'ovh p50 ms',
      'ovh p95 ms',
      'stage-to-stage p95 ms',
      'run - sim p50 ms',
      'Job to pod / to Running / Running to done p50 ms',
      'node span p50 s',
      'stage-start tasks s/node',
      'apiserver req/ns',
      'net of idle',
      'own client req/ns',
      'tool CPU s/ns',
      'Temporal CPU s/ns',
      'apiserver CPU s/ns',
      'api mean ms',
      'machine busy',
      'rss MiB',
    ],
  ];
  for (const p of points) {
    const med = new Map<Tool, (pick: (f: Figures) => number) => number>();
    for (const [tool, name] of [
      ['keelson', 'Keelson'],
      ['skyhook', 'Skyhook'],
    ] as const) {
      const fs = figuresOf(p, tool, idlePerSecond);
      if (fs.length === 0) continue;
      const c = (pick: (f: Figures) => number, digits = 0) => cell(fs.map(pick), digits);
      med.set(tool, (pick) => median(fs.map(pick)));
      rows.push([
        String(p.nodes),
        String(p.budget),
        name,
        String(fs.length),
        c((f) => f.makespanSeconds, 1),
        String(fs[0]!.idealSeconds),
        c((f) => f.ratio, 2),
        `${Math.max(...fs.map((f) => f.maxInFlight))} / ${p.budget}`,
        `${Math.max(...fs.map((f) => f.maxCordoned))} / ${p.budget}`,
        c((f) => f.overheadP50),
        c((f) => f.overheadP95),
        c((f) => f.stageToStageP95),
        c((f) => f.runBeyondSimP50),
        [(f: Figures) => f.jobToPodP50, (f: Figures) => f.podToRunningP50, (f: Figures) => f.runningBeyondSimP50]
          .map((pick) => fmt(median(fs.map(pick).filter(Number.isFinite))))
          .join(' / '),
        c((f) => f.nodeSpanP50, 1),
        c((f) => f.stageStartTasksPerNode / 1000, 1),
        c((f) => f.apiserverPerNodeStage, 1),
        c((f) => f.netOfIdle, 1),
        c((f) => f.ownPerNodeStage, 1),
        c((f) => f.cpuTool, 3),
        c((f) => f.cpuTemporal, 3),
        c((f) => f.cpuApiserver, 3),
        c((f) => f.apiserverMeanMs),
        c((f) => f.machineBusy, 2),
        c((f) => f.rssMiB),
      ]);
    }
    const k = med.get('keelson');
    const s = med.get('skyhook');
    const ratio = (pick: (f: Figures) => number) => (k && s && k(pick) > 0 ? fmt(s(pick) / k(pick), 2) : '-');
    rows.push([
      String(p.nodes),
      String(p.budget),
      'Skyhook / Keelson',
      '',
      ratio((f) => f.makespanSeconds),
      '',
      '',
      '',
      '',
      ratio((f) => f.overheadP50),
      ratio((f) => f.overheadP95),
      ratio((f) => f.stageToStageP95),
      ratio((f) => f.runBeyondSimP50),
      '',
      ratio((f) => f.nodeSpanP50),
      ratio((f) => f.apiserverPerNodeStage),
      '',
      ratio((f) => f.ownPerNodeStage),
      ratio((f) => f.cpuTool),
      '',
      ratio((f) => f.cpuApiserver),
      ratio((f) => f.apiserverMeanMs),
      ratio((f) => f.machineBusy),
      ratio((f) => f.rssMiB),
    ]);
  }
  return markdownTable(rows);
}

/** Every run on its own: which went first, the makespan and the budget maxima next to it. */
export function everyRun(points: Point[]): string {
  const rows: string[][] = [
    [
      'N',
      'B',
      'round',
      'order',
      'tool',
      'makespan s',
      'max in flight / B',
      'max cordoned / B',
      'tool CPU s/ns',
      'bench CPU s/ns',
      'machine busy',
    ],
  ];
  for (const p of points) {
    p.rounds.forEach((r, i) => {
      for (const tool of r.order) {
        const x = tool === 'keelson' ? r.keelson : r.skyhook;
        const cpu = tool === 'keelson' ? r.keelson?.cpuPerNodeStage.worker : r.skyhook?.cpuPerNodeStage.operator;
        rows.push([
          String(p.nodes),
          String(p.budget),
          String(i + 1),
          r.order.join(' then '),
          tool,
          x ? fmt(x.makespanSeconds, 1) : 'FAILED',
          x ? `${x.budgetUse.maxInFlight} / ${p.budget}` : '-',
          x ? `${x.budgetUse.maxCordoned} / ${p.budget}` : '-',
          fmt(cpu ?? NaN, 3),
          fmt(x?.cpuPerNodeStage.bench ?? NaN, 3),
          fmt(x?.machineBusy ?? NaN, 2),
        ]);
      }
    });
  }
  return markdownTable(rows);
}

async function main(): Promise<void> {
  const sizes = arg('nodes', '10').split(',').map(Number);
  const sim = Number(arg('sim-seconds', '2'));
  const budgetPct = Number(arg('budget-percent', '20'));
  const idleSeconds = Number(arg('idle-seconds', '30'));
  const repeat = repeatArg(3);
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
  const operatorDir = tools.includes('skyhook') ? installSkyhook(log) : undefined;
  if (operatorDir) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    await applySkyhookCrds(kc, operatorDir);
  }
  const setup = tools.includes('keelson') ? await keelsonSetup(arg, log) : undefined;
  header = { operatorDir, setup: setup?.describe ?? '' };
  log(`measuring the idle apiserver request rate for ${idleSeconds}s`);
  const idlePerSecond = await idleRate(idleSeconds);
  const points: Point[] = [];
  for (const n of sizes) {
    const budget = Math.max(1, Math.floor((n * budgetPct) / 100));
    const point: Point = { nodes: n, budget, rounds: [] };
    points.push(point);
    const opts = { nodes: n, budget, simSeconds: sim, log };
    for (let i = 0; i < repeat; i++) {
      // Alternate which tool goes first, so neither always runs on the machine the other has just warmed or loaded.
      const order = (i % 2 === 0 ? ['keelson', 'skyhook'] : ['skyhook', 'keelson']).filter((t) =>
        tools.includes(t),
      ) as Tool[];
      const round: Round = { order, errors: [] };
      point.rounds.push(round);
      for (const tool of order) {
        const label = `n${n}-${i + 1}-${tool}`;
        try {
          if (tool === 'keelson') {
            round.keelson = await runScenario(label, {
              ...opts,
              fleet: { compiledWorker: setup!.compiledWorker, workers: setup!.workers, container: setup!.container },
              freshTemporal: setup!.freshTemporal,
            });
          } else {
            round.skyhook = await runSkyhookScenario(label, { ...opts, operatorDir: operatorDir! });
          }
        } catch (err) {
          round.errors.push(`${tool}: ${err instanceof Error ? err.message : String(err)}`);
          log(`${label}: FAILED: ${round.errors[round.errors.length - 1]}`);
        }
        write(points, idlePerSecond);
      }
      log(sideBySide(points, idlePerSecond));
    }
  }
  process.stdout.write(`${sideBySide(points, idlePerSecond)}\n`);
  process.exit(points.every((p) => p.rounds.every((r) => r.errors.length === 0)) ? 0 : 1);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
/** What the result header names: the operator build and the Keelson setup. */
let header: { operatorDir?: string; setup: string } = { setup: '' };

/** Writes bench/results/<stamp>-skyhook.json and .md after every run, so an interrupted bench keeps its figures. */
function write(points: Point[], idlePerSecond: number): void {
  const skyhookVersion = header.operatorDir ? path.basename(header.operatorDir).replace(/^skyhook-/, '') : '-';
  const versions = { ...VERSIONS, skyhookOperator: skyhookVersion };
  const out = {
    when: new Date().toISOString(),
    versions,
    machine: machine(),
    setup: header.setup,
    idlePerSecond,
    points,
  };
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
    header.setup,
    `Idle apiserver rate (neither tool running): ${idlePerSecond} requests/s.`,
    '',
    sideBySide(points, idlePerSecond),
    '',
    'Each cell: the median over the runs, and (min–max) with more than one; the budget columns show the largest',
    "sample of any run. makespan: the create call to the node watch event that shows the last of the run's nodes",
    'labelled `skyhook.nvidia.com/status_<name>=complete` and schedulable (the same detector for both tools). max in',
    'flight / max cordoned: the most nodes with a stage Job (Keelson) or stage pod (Skyhook) existing and unfinished,',
    'and the most nodes with spec.unschedulable, in samples every 2 s, against the budget B.',
    'ns = node-stage (a stage Job for Keelson, a stage pod for Skyhook). apiserver req/ns: every client',
    "(apiserver_request_total delta); net of idle: less the idle rate times the makespan. own client req/ns: the tool's",
    "own requests (Keelson: counted inside the worker; Skyhook: the operator's rest_client_requests_total). CPU s/ns:",
    'utime + stime from /proc over the makespan, per node-stage (tool: the Keelson worker or the Skyhook operator;',
    'Temporal: the dev server of the Keelson run; apiserver: the shared kube-apiserver, every client). rss: peak.',
    'run - sim: a stage seen created to seen done, less its simulated seconds, split into Job to pod (the Job',
    "controller's part; Keelson only), to Running (the pod simulator's start: one status write) and Running to done",
    "less the simulated seconds (the simulator's finish: a timer started about when its Running write lands, then a",
    "read and a status write). api mean ms: the apiserver's mean time per request over the run (watches apart; the",
    "kinds that took longest are in the JSON, `apiserverLatency`). machine busy: the share of all cores' time that",
    "went to work over the makespan, everything on the machine included (/proc/stat). bench CPU: the bench's own.",
    'stage-start tasks s/node (Keelson): per node, the time its workflow tasks that started a stage took from',
    'scheduled to completed (the stage is scheduled only as its task completes, and a task stays open while the',
    'local activities it started run); the median node.',
    '',
    'Every run:',
    '',
    everyRun(points),
    '',
    'A rebooting kubelet starts no pod; the dev simulator does, and Keelson waits for Ready after a reboot while',
    'Skyhook does not, so Skyhook gains here up to the reboot time per batch that a real node would not give:',
    ...points.flatMap((p) =>
      p.rounds.flatMap((r, i) => {
        const w = r.skyhook?.checks.startedWhileNotReady;
        return w
          ? [
              `- N=${p.nodes} round ${i + 1}: ${w.count} Skyhook stage pods started on a NotReady node, ` +
                `${w.seconds} s early in all.`,
            ]
          : [];
      }),
    ),
    ...points.flatMap((p) =>
      p.rounds.flatMap((r, i) => r.errors.map((e) => `- N=${p.nodes} round ${i + 1} FAILED: ${e}`)),
    ),
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, `${stamp}-skyhook.md`), md);
  process.stderr.write(`wrote bench/results/${stamp}-skyhook.json and .md\n`);
}

// Only when run as the script: the table builders above can be imported (and tried on recorded results) alone.
if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:skyhook: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
