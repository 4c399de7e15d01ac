/**
 * `npm run bench`: measured rollouts on the local stack (see bench/README.md). Usage:
 *   npm run bench                      # N = 10 and 100, plus the worker-kill fault at N = 100
 *   npm run bench -- --nodes 10,100,500 --faults none
 *   npm run bench -- --nodes 10 --faults kill,apiserver,temporal --fault-nodes 100
 *   npm run bench -- --nodes 10 --faults none --repeat 3 --worker tsx --temporal shared
 *   npm run bench -- --nodes 100 --faults kill --workers 2   # two worker processes, the first SIGKILLed
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stackUp } from '../deploy/dev/stack';
import { keelsonSetup } from './lib/build';
import { VERSIONS, arg, fmt, machine, markdownTable, repeatArg } from './lib/machine';
import { apiserverOutage, ensureApiserver, temporalRestart } from './lib/faults';
import { runScenario, type ScenarioResult } from './lib/scenario';
import { TemporalServer } from './lib/temporal-server';

/** The stage hops' medians: the task's wait, its start to its write's end, the rest of it, and the whole hop. */
function stageHopCell(r: ScenarioResult): string {
  const h = r.stageHopMs;
  return [h.waitMs, h.localMs, h.restMs, h.hopMs].map((q) => fmt(q.p50)).join(' / ');
}

export function table(results: ScenarioResult[]): string {
  const rows = [
    [
      'run',
      'N',
      'B',
      'node-stages',
      'makespan s',
      'ideal s',
      'ratio',
      'max in flight / B',
      'max cordoned / B',
      'ovh p50 ms',
      'p95',
      'p99',
      'stage-to-stage p95',
      'run - sim p50 ms',
      'Job to pod / to Running / Running to done p50 ms',
      'api mean ms',
      'machine busy',
      'node span p50 s',
      'stage-start task first / later p50 ms',
      'per node s',
      'stage hop p50 ms: wait / to write done / rest of task / all',
      'apiserver req/ns',
      'worker req/ns',
      'hist ev/ns',
      'worker CPU s/ns',
      'Temporal CPU s/ns',
      'apiserver CPU s/ns',
      'rss MiB',
      'kills',
      'dup Jobs',
      'backwards',
      'cordoned',
    ],
    ...results.map((r) => [
      r.label,
      String(r.nodes),
      String(r.budget),
      String(r.nodeStages),
      fmt(r.makespanSeconds, 1),
      String(r.idealSeconds),
      fmt(r.ratio, 2),
      `${r.budgetUse.maxInFlight} / ${r.budget}`,
      `${r.budgetUse.maxCordoned} / ${r.budget}`,
      fmt(r.overheadMs.p50),
      fmt(r.overheadMs.p95),
      fmt(r.overheadMs.p99),
      fmt(r.stageToStageMs.p95),
      fmt(r.runBeyondSimMs.p50),
      `${fmt(r.jobToPodMs?.p50 ?? NaN)} / ${fmt(r.podToRunningMs.p50)} / ${fmt(r.runningBeyondSimMs.p50)}`,
      fmt(r.apiserverMeanMs),
      fmt(r.machineBusy, 2),
      fmt(r.nodeSpanSeconds.p50, 1),
      `${fmt(r.stageStartTaskMs.first.p50)} / ${fmt(r.stageStartTaskMs.later.p50)}`,
      fmt(r.stageStartTaskMs.perNode.p50 / 1000, 1),
      stageHopCell(r),
      fmt(r.apiserverRequests.perNodeStage, 1),
      fmt(r.workerRequests.perNodeStage, 1),
      fmt(r.history.perNodeStage, 1),
      fmt(r.cpuPerNodeStage.worker ?? NaN, 3),
      fmt(r.cpuPerNodeStage.temporal ?? NaN, 3),
      fmt(r.cpuPerNodeStage['kube-apiserver'] ?? NaN, 3),
      String(r.workerPeakRssMiB),
      String(r.workerRestarts),
      String(r.checks.duplicateJobs.length),
      String(r.checks.backwards.length),
      String(r.checks.leftCordoned.length),
    ]),
  ];
  return markdownTable(rows);
}

async function main(): Promise<void> {
  const nodesArg = arg('nodes', '10,100');
  const sizes = nodesArg === 'none' ? [] : nodesArg.split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`--nodes takes positive whole numbers (comma-separated) or none, got ${nodesArg}`);
  const faults = arg('faults', 'kill').split(',');
  const known = ['kill', 'apiserver', 'temporal', 'none'];
  const unknown = faults.filter((f) => !known.includes(f));
  if (unknown.length > 0)
    throw new Error(`--faults takes ${known.join(', ')} (comma-separated), got ${unknown.join(',')}`);
  const sim = Number(arg('sim-seconds', '2'));
  const budgetPct = Number(arg('budget-percent', '20'));
  const repeat = repeatArg(1);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  await stackUp({ nodes: 10, log });
  const setup = await keelsonSetup(arg, log);
  setupLine = setup.describe;
  const keelson = {
    fleet: { compiledWorker: setup.compiledWorker, workers: setup.workers, container: setup.container },
    freshTemporal: setup.freshTemporal,
  };
  const results: ScenarioResult[] = [];
  for (const n of sizes) {
    const budget = Math.max(1, Math.floor((n * budgetPct) / 100));
    for (let i = 1; i <= repeat; i++) {
      const label = repeat > 1 ? `n${n}-${i}` : `n${n}`;
      try {
        results.push(await runScenario(label, { nodes: n, budget, simSeconds: sim, log, ...keelson }));
      } catch (err) {
        log(`${label}: FAILED: ${err instanceof Error ? err.message : String(err)}`);
      }
      write(results);
      log(table(results));
    }
  }
  const n = Number(arg('fault-nodes', '100'));
  const budget = Math.max(1, Math.floor((n * budgetPct) / 100));
  const base = { nodes: n, budget, simSeconds: sim, log, ...keelson };
  const afterJobs = Math.max(8, n);
  for (const fault of faults.filter((f) => f !== 'none')) {
    try {
      if (fault === 'kill') {
        results.push(await runScenario(`n${n}-sigkill`, { ...base, killEverySeconds: 10 }));
      } else if (fault === 'apiserver') {
        const outage = apiserverOutage({ afterJobs, seconds: 30, log });
        try {
          results.push(await runScenario(`n${n}-apiserver`, { ...base, duringRollout: outage.duringRollout }));
        } finally {
          await ensureApiserver(log);
        }
      } else {
        const server = new TemporalServer(fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-bench-temporal-')));
        await server.start();
        const restart = temporalRestart(server, { afterJobs, downSeconds: 5, log });
        try {
          results.push(
            // The fault restarts a server of the run's own (fresh for the run too), database kept.
            await runScenario(`n${n}-temporal`, {
              ...base,
              freshTemporal: false,
              temporalServer: server,
              duringRollout: restart.duringRollout,
            }),
          );
        } finally {
          await server.stop();
        }
      }
    } catch (err) {
      log(`n${n} ${fault}: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    }
    write(results);
  }
  write(results);
  process.stdout.write(`${table(results)}\n`);
  process.exit(0);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
let setupLine = '';

/** Writes bench/results/<stamp>.json and .md; called after every run, so an interrupted bench keeps its figures. */
function write(results: ScenarioResult[]): void {
  const out = { when: new Date().toISOString(), versions: VERSIONS, machine: machine(), setup: setupLine, results };
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${stamp}.json`), `${JSON.stringify(out, null, 2)}\n`);
  const m = out.machine;
  const md = [
    `# Keelson bench ${out.when}`,
    '',
    `Machine: ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Linux ${m.kernel}, Node ${m.node}.`,
    `Versions: Kubernetes ${VERSIONS.kubernetes}, etcd ${VERSIONS.etcd}, Temporal CLI ${VERSIONS.temporalCli}, kwok ${VERSIONS.kwok}.`,
    setupLine,
    '',
    table(results),
    '',
    "makespan: the create call to the node watch event that shows the last of the run's nodes labelled",
    '`status_<rollout>=complete` and schedulable. max in flight / max cordoned: the most nodes with a stage Job',
    'existing and unfinished, and the most nodes with spec.unschedulable, in samples every 2 s, against the budget B.',
    'CPU s/ns: utime + stime from /proc over the makespan, per node-stage (worker: the Keelson worker process;',
    'Temporal: the dev server the run used; apiserver: the shared kube-apiserver, which serves every client).',
    'ns = node-stage (one stage Job on one node). Overhead: a Job seen Complete to the next Job on the same node seen',
    'created (watch receipt times, ms; gaps after the reboot interrupt are excluded); stage-to-stage: the same',
    'without the gaps into the rebooting package (permit, cordon and drain). run - sim: a stage Job seen',
    'created to seen Complete, less its simulated seconds (interrupts excluded), split into a stage Job seen created',
    "to its pod seen (the Job controller's part), the pod seen to seen Running (the pod simulator's start: one status",
    "write) and Running to done less the simulated seconds (the simulator's finish: a timer started about when its",
    "Running write lands, then a read and a status write). api mean ms: the apiserver's mean time per request over the",
    'run (its request-duration histogram, watches apart; the kinds that took longest are in the JSON,',
    "`apiserverLatency`). machine busy: the share of all cores' time that went to work over the makespan, everything",
    'on the machine included (/proc/stat). stage-start task: each node workflow task whose commands started a stage',
    "or the interrupt, scheduled to completed (from the run's histories): the first of a node's first run (right",
    'after its admission) and the later ones, p50; per node s: their sum for the median node.',
    "apiserver req/ns: every client's requests (apiserver_request_total delta: worker, controller-manager, kwok,",
    'simulator, other users);',
    "worker req/ns: the Keelson worker's own requests, counted inside its process.",
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, `${stamp}.md`), md);
  process.stderr.write(`wrote bench/results/${stamp}.json and .md\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
