/**
 * `npm run bench:sdk-floor`: what one stage-to-stage hop costs on this machine with nothing of Keelson's in it. A
 * workflow of the node workflow's shape (bench/sdk-floor/workflow.ts: a local activity in the workflow task that
 * schedules the next activity) runs its steps in lockstep with others, as a batch's nodes do, against a Temporal dev
 * server of its own started as the bench starts it. Usage:
 *   npm run bench:sdk-floor
 *   npm run bench:sdk-floor -- --workflows 1,2,20,100 --steps 8 --stage-ms 2000 --write-ms 10
 *   npm run bench:sdk-floor -- --write-ms 0     # no local activity: the hop of a design without the write
 *
 * From each history, the hops of bench/lib/stage-hops.ts, as the bench takes them from Keelson's node workflows: the
 * activity's end to the next one's start, split into the workflow task's wait, its start to the local activity's
 * end as core records it, and the rest of the task; and the first task of each workflow, started with the others at
 * once as a batch's node workflows are. Also the cost of a `vm` call with a timeout, which the SDK gives every call
 * into the workflow context (its isolateExecutionTimeout).
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { Client, Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { floorActivities } from './sdk-floor/activities';
import { hopSummary, stageHops, type StageHop } from './lib/stage-hops';
import { quantile } from './lib/quantile';
import { freshTemporal } from './lib/temporal-server';
import { arg, fmt, machine, markdownTable, VERSIONS } from './lib/machine';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The floor workflow's stage activity. */
const STAGE = new Set(['stage']);
const FLAGS = ['workflows', 'steps', 'stage-ms', 'write-ms'];
/** Past its steps' own time, a level whose workflows have not all ended by then has hung: the bench stops. */
const LEVEL_SLACK_MS = 5 * 60_000;

type Quantiles = { p50: number; p90: number };

interface LevelResult {
  workflows: number;
  makespanMs: number;
  /** The hops of bench/lib/stage-hops.ts, over every workflow of the level. */
  hops: ReturnType<typeof hopSummary>;
  /** Each workflow's first task, from its scheduling: to its start (the worker took it), and to its completion. */
  firstTask: { waitMs: Quantiles; doneMs: Quantiles };
}

interface Settings {
  steps: number;
  stageMs: number;
  writeMs: number;
}

/** A workflow's first task from its scheduling: to its start and to its completion, ms. */
function firstTask(events: HistoryEvent[]): { waitMs: number; doneMs: number } | undefined {
  const at = (e: HistoryEvent | undefined) => (e ? tsToMs(e.eventTime) : NaN);
  const scheduled = at(events.find((e) => e.workflowTaskScheduledEventAttributes));
  const started = at(events.find((e) => e.workflowTaskStartedEventAttributes));
  const completed = at(events.find((e) => e.workflowTaskCompletedEventAttributes));
  return Number.isFinite(completed) ? { waitMs: started - scheduled, doneMs: completed - scheduled } : undefined;
}

function quantiles(values: number[]): Quantiles {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9) };
}

/** Every `--flag` given is one this bench knows: a misspelt one would otherwise leave its default in silence. */
function checkFlags(): void {
  const unknown = process.argv.filter((a) => a.startsWith('--') && !FLAGS.includes(a.slice(2)));
  if (unknown.length > 0)
    throw new Error(`unknown option ${unknown.join(', ')}; options: ${FLAGS.map((f) => `--${f}`).join(', ')}`);
}

function wholeNumbers(name: string, fallback: string, min: number): number[] {
  const raw = arg(name, fallback);
  const values = raw.split(',').map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < min))
    throw new Error(`--${name} takes whole numbers of at least ${min} (comma-separated), got ${raw}`);
  return values;
}

function wholeNumber(name: string, fallback: string, min: number): number {
  const values = wholeNumbers(name, fallback, min);
  if (values.length !== 1) throw new Error(`--${name} takes one whole number, got ${arg(name, fallback)}`);
  return values[0]!;
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

/** One level: `workflows` started at once on a task queue of their own, with a worker of their own. */
async function runLevel(
  workflows: number,
  o: Settings,
  bundle: WorkflowBundleWithSourceMap,
  connection: NativeConnection,
  client: Client,
): Promise<LevelResult> {
  const taskQueue = `sdk-floor-${workflows}-${Date.now()}`;
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: bundle,
    activities: floorActivities(o.stageMs, o.writeMs),
  });
  const running = worker.run();
  const started = Date.now();
  const ids = Array.from({ length: workflows }, (_, i) => `${taskQueue}-${i}`);
  const ended = Promise.all(
    ids.map((workflowId) =>
      client.workflow.execute('floorSteps', {
        taskQueue,
        workflowId,
        args: [o.steps, o.stageMs, o.writeMs],
        workflowExecutionTimeout: o.steps * (o.stageMs + o.writeMs) + LEVEL_SLACK_MS,
      }),
    ),
  );
  let makespanMs: number;
  try {
    // A worker that stops (a failed poll, a crash of its workflow thread) fails the level instead of hanging it.
    await Promise.race([
      ended,
      running.then(() => {
        throw new Error('the worker stopped before the workflows ended');
      }),
    ]);
    makespanMs = Date.now() - started;
  } finally {
    // A worker that stopped by itself cannot be shut down: its own error is the one to report.
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
  }
  const hops: StageHop[] = [];
  const firsts: { waitMs: number; doneMs: number }[] = [];
  for (const id of ids) {
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    hops.push(...stageHops(events, STAGE));
    const first = firstTask(events);
    if (first) firsts.push(first);
  }
  return {
    workflows,
    makespanMs,
    hops: hopSummary(hops),
    firstTask: { waitMs: quantiles(firsts.map((f) => f.waitMs)), doneMs: quantiles(firsts.map((f) => f.doneMs)) },
  };
}

async function main(): Promise<void> {
  checkFlags();
  const levels = wholeNumbers('workflows', '1,2,20,100', 1);
  const settings: Settings = {
    steps: wholeNumber('steps', '8', 1),
    stageMs: wholeNumber('stage-ms', '2000', 1),
    writeMs: wholeNumber('write-ms', '10', 0),
  };
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  // The bench handles its own signals: interrupted, it still stops its Temporal server and removes its database.
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const started: { temporal?: Awaited<ReturnType<typeof freshTemporal>> } = {};
  const interrupted = () => void (started.temporal?.dispose() ?? Promise.resolve()).finally(() => process.exit(130));
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./sdk-floor/workflow'), logger: silent });
  const temporal = (started.temporal = await freshTemporal());
  const results: LevelResult[] = [];
  const connection = await NativeConnection.connect({ address: temporal.server.address });
  const clientConnection = await Connection.connect({ address: temporal.server.address });
  try {
    const client = new Client({ connection: clientConnection });
    for (const workflows of levels) {
      results.push(await runLevel(workflows, settings, bundle, connection, client));
      log(`sdk-floor: ${workflows} workflows: ${results.at(-1)!.makespanMs} ms`);
    }
  } finally {
    await clientConnection.close();
    await connection.close();
    await temporal.dispose();
  }
  const calls = vmCallMicros();
  const cell = (s: Quantiles) => `${fmt(s.p50)} / ${fmt(s.p90)}`;
  const table = markdownTable([
    [
      'workflows in lockstep',
      'hop p50 / p90 ms',
      'task wait',
      'task start to local activity done',
      'rest of task',
      'first task wait / done p50 ms',
      'makespan s',
    ],
    ...results.map((r) => [
      String(r.workflows),
      cell(r.hops.hopMs),
      cell(r.hops.waitMs),
      cell(r.hops.localMs),
      cell(r.hops.restMs),
      `${fmt(r.firstTask.waitMs.p50)} / ${fmt(r.firstTask.doneMs.p50)}`,
      fmt(r.makespanMs / 1000, 1),
    ]),
  ]);
  const vmLine = `vm call into a context: ${fmt(calls.plain, 1)} µs, ${fmt(calls.withTimeout, 1)} µs with a timeout`;
  const { steps, stageMs, writeMs } = settings;
  const write = writeMs > 0 ? `local activity ${writeMs} ms` : 'no local activity';
  const setup = `${steps} steps, stage ${stageMs} ms, ${write}`;
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
