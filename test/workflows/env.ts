import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { RolloutSpec } from '../../model';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { rolloutWorkflow } from '../../workflows';
import { statusQuery } from '../../workflows/messages';
import type { RolloutOptions } from '../../workflows/rollout/workflow';
import { searchAttributeKeys } from '../../workflows/search-attributes';
import { FakeCluster } from './fake-cluster';
import { installTestRuntime } from '../../harness/runtime';
import { eventually, sleep } from '../../harness/wait';
import { testWorkflowBundle, type WorkflowBundle } from '../../harness/workflow-bundle';

// A real Temporal dev server per test file, the run's workflow bundle (harness/workflow-bundle.ts), and a worker
// per test.

export function requireBinary(variable: 'TEMPORAL_CLI_PATH' | 'TEMPORAL_TEST_SERVER_PATH'): string {
  const p = process.env[variable];
  if (!p || !fs.existsSync(p)) {
    throw new Error(
      `${variable} is ${p ? `${p}, which does not exist` : 'unset'}: run eval "$(deploy/dev/install-tools.sh --print-env)"`,
    );
  }
  return p;
}

export async function startEnv(
  extraArgs: string[] = [],
): Promise<{ env: TestWorkflowEnvironment; bundle: WorkflowBundle }> {
  installTestRuntime();
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: requireBinary('TEMPORAL_CLI_PATH') },
      searchAttributes: searchAttributeKeys,
      extraArgs,
    },
  });
  return { env, bundle: testWorkflowBundle() };
}

/** One server per test file, torn down after it, and the run's bundle. */
export function useTemporal(extraArgs: string[] = []): {
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundle;
} {
  const ctx = {} as { env: TestWorkflowEnvironment; bundle: WorkflowBundle };
  beforeAll(async () => Object.assign(ctx, await startEnv(extraArgs)), 120_000);
  afterAll(async () => ctx.env?.teardown());
  return ctx;
}

export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  bundle: WorkflowBundle,
  cluster: FakeCluster,
  fn: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = `wf-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: cluster.activities(env.client, taskQueue),
  });
  return worker.runUntil(fn(taskQueue).finally(() => (cluster.stopped = true)));
}

export { fixedBatchPolicy, rolloutSpec } from '../../harness/manifests';

/** Starts the rollout workflow of `spec` for `cluster` (default: the rollout's own name), as the client does. */
export function startRollout(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  spec: RolloutSpec,
  { cluster = spec.name, options }: { cluster?: string; options?: Partial<RolloutOptions> } = {},
) {
  return env.client.workflow.start(rolloutWorkflow, {
    taskQueue,
    workflowId: rolloutWorkflowId(cluster, spec.name),
    args: [{ cluster, spec, ...(options && { options }) }],
  });
}
export { eventually, sleep };

/** Waits until the rollout's status query says `status`. */
export function statusBecomes(handle: WorkflowHandle, status: string, timeoutMs?: number): Promise<void> {
  return eventually(
    `rollout ${handle.workflowId} ${status}`,
    async () => expect((await handle.query(statusQuery)).status).toBe(status),
    timeoutMs,
  );
}

/** Writes a run's history as a replay fixture when KEELSON_RECORD_HISTORIES is set. */
export async function recordHistory(
  env: TestWorkflowEnvironment,
  workflowId: string,
  fixture: string,
  runId?: string,
): Promise<void> {
  if (!process.env.KEELSON_RECORD_HISTORIES) return;
  const history = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
  const file = path.join(__dirname, '../fixtures/histories', `${fixture}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `{"workflowId":${JSON.stringify(workflowId)},"history":${historyToJSON(history)}}\n`);
}

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];
const decoded = (payload: { data?: Uint8Array | null } | undefined): unknown =>
  payload?.data?.length ? JSON.parse(Buffer.from(payload.data).toString()) : undefined;

/** The local activities a history records (one marker each): the event's index, the activity type and its result. */
export function localActivities(events: HistoryEvent[]): { index: number; type: string; result: unknown }[] {
  return events.flatMap((e, index) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = decoded(marker.details?.data?.payloads?.[0]) as { activity_type: string };
    return [{ index, type: data.activity_type, result: decoded(marker.details?.result?.payloads?.[0]) }];
  });
}
