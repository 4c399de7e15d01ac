/**
 * `npm run bench`: measured rollouts on the local stack (see bench/README.md). Usage:
 *   npm run bench                      # N = 10 and 100, plus the worker-kill fault at N = 100
 *   npm run bench -- --nodes 10,100,500 --faults none
 */
import fs from 'node:fs';
import path from 'node:path';
import { stackUp } from '../deploy/dev/stack';
import { VERSIONS, arg, fmt, machine, markdownTable } from './lib/machine';
import { runScenario, type ScenarioResult } from './lib/scenario';

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
      'ovh p50 ms',
      'p95',
      'p99',
      'apiserver req/ns',
      'worker req/ns',
      'hist ev/ns',
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
      fmt(r.overheadMs.p50),
      fmt(r.overheadMs.p95),
      fmt(r.overheadMs.p99),
      fmt(r.apiserverRequests.perNodeStage, 1),
      fmt(r.workerRequests.perNodeStage, 1),
      fmt(r.history.perNodeStage, 1),
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
  const sizes = arg('nodes', '10,100').split(',').map(Number);
  const faults = arg('faults', 'kill').split(',');
  const sim = Number(arg('sim-seconds', '2'));
  const budgetPct = Number(arg('budget-percent', '20'));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  await stackUp({ nodes: 10, log });
  const results: ScenarioResult[] = [];
  for (const n of sizes) {
    const budget = Math.max(1, Math.floor((n * budgetPct) / 100));
    try {
      results.push(await runScenario(`n${n}`, { nodes: n, budget, simSeconds: sim, log }));
    } catch (err) {
      log(`n${n}: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    }
    write(results);
    log(table(results));
  }
  if (faults.includes('kill')) {
    const n = Number(arg('fault-nodes', '100'));
    const budget = Math.max(1, Math.floor((n * budgetPct) / 100));
    try {
      results.push(
        await runScenario(`n${n}-sigkill`, { nodes: n, budget, simSeconds: sim, killEverySeconds: 10, log }),
      );
    } catch (err) {
      log(`n${n}-sigkill: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  write(results);
  process.stdout.write(`${table(results)}\n`);
  process.exit(0);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');

/** Writes bench/results/<stamp>.json and .md; called after every run, so an interrupted bench keeps its figures. */
function write(results: ScenarioResult[]): void {
  const out = { when: new Date().toISOString(), versions: VERSIONS, machine: machine(), results };
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${stamp}.json`), `${JSON.stringify(out, null, 2)}\n`);
  const m = out.machine;
  const md = [
    `# Keelson bench ${out.when}`,
    '',
    `Machine: ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Linux ${m.kernel}, Node ${m.node}.`,
    `Versions: Kubernetes ${VERSIONS.kubernetes}, etcd ${VERSIONS.etcd}, Temporal CLI ${VERSIONS.temporalCli}, kwok ${VERSIONS.kwok}.`,
    '',
    table(results),
    '',
    'ns = node-stage (one stage Job on one node). Overhead: a Job seen Complete to the next Job on the same node seen',
    'created (watch receipt times, ms; gaps after the reboot interrupt are excluded). apiserver req/ns: every',
    "client's requests (apiserver_request_total delta: worker, controller-manager, kwok, simulator, other users);",
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
