/**
 * `npm run bench:sdk-floor`: what one stage-to-stage hop costs on this machine with nothing of Keelson's in it. A
 * workflow of the node workflow's shape (bench/sdk-floor/workflow.ts: a local activity in the workflow task that
 * schedules the next activity) runs its steps in lockstep with others, as a batch's nodes do, against a Temporal dev
 * server of its own started as the bench starts it. Usage:
 *   npm run bench:sdk-floor
 *   npm run bench:sdk-floor -- --workflows 1,2,20,100 --steps 8 --stage-ms 2000 --write-ms 10
 *
 * From each history, the hops of bench/lib/stage-hops.ts, as the bench takes them from Keelson's node workflows: the
 * activity's end to the next one's start, split into the workflow task's wait, its start to the local activity's
 * end, and the local activity's end to the task's completion; and the first task of each workflow, started with the
 * others at once as a batch's node workflows are. Also the cost of a `vm` call with a timeout, which the SDK gives
 * every call into the workflow context (its isolateExecutionTimeout).
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { Client, Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { floorActivities } from './sdk-floor/activities';
import { stageHops, type StageHop } from './lib/stage-hops';
import { quantile } from './lib/fleet';
import { freshTemporal } from './lib/temporal-server';
import { arg, fmt, machine, markdownTable, VERSIONS } from './lib/machine';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The floor workflow's stage activity. */
const STAGE = new Set(['stage']);

type Quantiles = { p50: number; p90: number; n: number };

interface LevelResult {
  workflows: number;
  makespanMs: number;
  /** The hops of bench/lib/stage-hops.ts, over every workflow of the level. */
  hops: { hop: Quantiles; wait: Quantiles; toLocalDone: Quantiles; localDoneToCompleted: Quantiles };
  /** Each workflow's first task, from its scheduling: to its start (the worker took it), and to its completion. */
  firstTask: { wait: Quantiles; done: Quantiles };
}

/** A workflow's first task from its scheduling: to its start and to its completion, ms. */
function firstTask(events: HistoryEvent[]): { waitMs: number; doneMs: number } | undefined {
  const at = (e: HistoryEvent | undefined) => (e ? tsToMs(e.eventTime) : NaN);
  const scheduled = at(events.find((e) => e.workflowTaskScheduledEventAttributes));
  const started = at(events.find((e) => e.workflowTaskStartedEventAttributes));
  const completed = at(events.find((e) => e.workflowTaskCompletedEventAttributes));
  return Number.isFinite(completed) ? { waitMs: started - scheduled, doneMs: completed - scheduled } : undefined;
}

function positiveList(name: string, fallback: string): number[] {
  const raw = arg(name, fallback);
  const values = raw.split(',').map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < 1))
    throw new Error(`--${name} takes positive whole numbers (comma-separated), got ${raw}`);
  return values;
}

function positive(name: string, fallback: string): number {
  const value = positiveList(name, fallback);
  if (value.length !== 1) throw new Error(`--${name} takes one positive whole number, got ${arg(name, fallback)}`);
  return value[0]!;
}

function quantiles(values: number[]): Quantiles {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), n: sorted.length };
}

/** Microseconds per `vm` call into a context, with and without a timeout. */
function vmCallMicros(): { plain: number; withTimeout: number } {
  const context = vm.createContext({ calls: 0 });
  const script = new vm.Script('calls++');
  const time = (options: vm.RunningScriptOptions) => {
    const calls = 5000;
    const start = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) script.runInContext(context, options);
    return Number(process.hrtime.bigint() - start) / calls / 1000;
  };
  time({});
  return { plain: time({}), withTimeout: time({ timeout: 5000 }) };
}

async function main(): Promise<void> {
  const levels = positiveList('workflows', '1,2,20,100');
  const steps = positive('steps', '8');
  const stageMs = positive('stage-ms', '2000');
  const writeMs = positive('write-ms', '10');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./sdk-floor/workflow'),
    logger: silent,
  });
  const temporal = await freshTemporal();
  const results: LevelResult[] = [];
  try {
    const connection = await NativeConnection.connect({ address: temporal.server.address });
    const client = new Client({ connection: await Connection.connect({ address: temporal.server.address }) });
    for (const workflows of levels) {
      const taskQueue = `sdk-floor-${workflows}-${Date.now()}`;
      const worker = await Worker.create({
        connection,
        taskQueue,
        workflowBundle: bundle,
        activities: floorActivities(stageMs, writeMs),
      });
      const running = worker.run();
      const started = Date.now();
      const ids = Array.from({ length: workflows }, (_, i) => `${taskQueue}-${i}`);
      await Promise.all(
        ids.map((workflowId) =>
          client.workflow.execute('floorSteps', { taskQueue, workflowId, args: [steps] }).then(() => undefined),
        ),
      );
      const makespanMs = Date.now() - started;
      worker.shutdown();
      await running;
      const hops: StageHop[] = [];
      const firsts: { waitMs: number; doneMs: number }[] = [];
      for (const id of ids) {
        const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
        hops.push(...stageHops(events, STAGE));
        const first = firstTask(events);
        if (first) firsts.push(first);
      }
      results.push({
        workflows,
        makespanMs,
        hops: {
          hop: quantiles(hops.map((h) => h.hopMs)),
          wait: quantiles(hops.map((h) => h.waitMs)),
          toLocalDone: quantiles(hops.flatMap((h) => h.toLocalDoneMs ?? [])),
          localDoneToCompleted: quantiles(hops.flatMap((h) => h.localDoneToCompletedMs ?? [])),
        },
        firstTask: {
          wait: quantiles(firsts.map((f) => f.waitMs)),
          done: quantiles(firsts.map((f) => f.doneMs)),
        },
      });
      log(`sdk-floor: ${workflows} workflows, ${steps} steps of ${stageMs} ms: ${makespanMs} ms`);
    }
    await connection.close();
  } finally {
    await temporal.dispose();
  }
  const calls = vmCallMicros();
  const cell = (s: { p50: number; p90: number }) => `${fmt(s.p50)} / ${fmt(s.p90)}`;
  const table = markdownTable([
    [
      'workflows in lockstep',
      'hop p50 / p90 ms',
      'task wait',
      'task start to local activity done',
      'local activity done to task completed',
      'first task wait / done p50 ms',
      'makespan s',
    ],
    ...results.map((r) => [
      String(r.workflows),
      cell(r.hops.hop),
      cell(r.hops.wait),
      cell(r.hops.toLocalDone),
      cell(r.hops.localDoneToCompleted),
      `${fmt(r.firstTask.wait.p50)} / ${fmt(r.firstTask.done.p50)}`,
      fmt(r.makespanMs / 1000, 1),
    ]),
  ]);
  const vmLine = `vm call into a context: ${fmt(calls.plain, 1)} µs, ${fmt(calls.withTimeout, 1)} µs with a timeout`;
  const setup = `${steps} steps, stage ${stageMs} ms, local activity ${writeMs} ms`;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const out = {
    when: new Date().toISOString(),
    versions: VERSIONS,
    machine: machine(),
    setup,
    results,
    vmCalls: calls,
  };
  fs.writeFileSync(path.join(dir, `${stamp}-sdk-floor.json`), `${JSON.stringify(out, null, 2)}\n`);
  fs.writeFileSync(path.join(dir, `${stamp}-sdk-floor.md`), `${setup}\n\n${table}\n\n${vmLine}\n`);
  process.stdout.write(`${setup}\n\n${table}\n\n${vmLine}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:sdk-floor: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
