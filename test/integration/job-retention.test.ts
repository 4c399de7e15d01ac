import type { V1Job, V1Node } from '@kubernetes/client-node';
import type { RunStageInput } from '../../activities/contract';
import { STAGES, type Stage } from '../../model';
import { loadConfig } from '../../workers/config';
import { SettingsError } from '../../workers/temporal-settings';
import { nodeWorkflowId } from '../../model/workflow-ids';
import { kubeClients, testNamespace } from '../../harness/kube';
import {
  createItestNodes,
  entryIn,
  eventually,
  InProcessKeelson,
  nodeEntry,
  stageState,
  Timeline,
  type Seen,
} from './worker-stack';
import { rolloutSpecOf } from '../../harness/manifests';
import { STAGE_DEADLINE_GRACE_SECONDS } from '../../workflows/node/stage-run';

// Job retention and the default stage timeout, as a deployment sets them: a whole worker (workers/worker.ts
// startWorker) with KEELSON_JOB_RETENTION_SECONDS and KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS, running rollouts on
// the shared Temporal server and kube-apiserver; every value the Nodes and Jobs take is recorded by watch.

jest.setTimeout(600_000);

const { kc, core, batch } = kubeClients();
const prefix = `kret-${Date.now().toString(36).slice(-5)}`;
const PRINTED = 'disk on fire';
/** Waits on a loaded 2-core machine shared with other suites. */
const LONG = 240_000;
let namespace = '';
let nodes: string[] = [];
let timeline: Timeline;
const workers: InProcessKeelson[] = [];

async function worker(suffix: string, env: Record<string, string>): Promise<InProcessKeelson> {
  const w = await new InProcessKeelson(`${prefix}-${suffix}`, { KEELSON_NAMESPACE: namespace, ...env }).start();
  workers.push(w);
  return w;
}

/** Events of the Jobs of one package (of one stage, when given). */
const jobOf = (rollout: string, pkg: string, stage?: string) => (e: Seen) => {
  const labels = e.obj.metadata?.labels ?? {};
  return (
    e.kind === 'job' &&
    labels['keelson.dev/rollout'] === rollout &&
    labels['keelson.dev/package'] === pkg &&
    (stage === undefined || labels['keelson.dev/stage'] === stage)
  );
};

/** Index of the first Node value in which the package's entry says `stage:state` (and holds `lastError`, if given). */
function recorded(rollout: string, pkg: string, want: string, lastError?: string): number {
  return timeline.indexOf((e) => {
    const entry = e.kind === 'node' ? entryIn(e.obj as V1Node, rollout, pkg) : undefined;
    return stageState(entry) === want && (lastError === undefined || (entry?.lastError ?? '').includes(lastError));
  });
}

/**
 * The first Node event showing a package done with `stage`: that stage complete, or a later one begun. The node
 * workflow writes only the last of consecutive snapshots, so a stage's end and the next stage's start can land as one.
 */
function recordedDone(rollout: string, pkg: string, stage: Stage): number {
  return timeline.indexOf((e) => {
    const entry = e.kind === 'node' ? entryIn(e.obj as V1Node, rollout, pkg) : undefined;
    if (!entry) return false;
    const [at, want] = [STAGES.indexOf(entry.stage), STAGES.indexOf(stage)];
    return at > want || (at === want && entry.state === 'complete');
  });
}

const deletedAt = (rollout: string, pkg: string, stage: string) =>
  timeline.indexOf((e) => jobOf(rollout, pkg, stage)(e) && e.type === 'DELETED');

async function jobsOf(rollout: string): Promise<V1Job[]> {
  return (await batch.listNamespacedJob({ namespace, labelSelector: `keelson.dev/rollout=${rollout}` })).items;
}

/** A rollout of a package whose apply fails (printing PRINTED) and one that completes, until both are recorded. */
async function runBadAndGood(w: InProcessKeelson, node: string, rollout: string): Promise<void> {
  await w.client.startRollout(
    rolloutSpecOf(rollout, [node], { bad: { failStages: 'apply', log: PRINTED }, good: { simSeconds: 1 } }),
  );
  await eventually(
    'bad erroring and good complete in node state',
    async () => {
      const [bad, good] = [await nodeEntry(core, node, rollout, 'bad'), await nodeEntry(core, node, rollout, 'good')];
      expect([stageState(bad), stageState(good)]).toEqual(['apply:erroring', 'config:complete']);
      expect(bad.lastError).toContain(PRINTED);
    },
    LONG,
  );
}

beforeAll(async () => {
  namespace = await testNamespace(core, 'kret');
  nodes = await createItestNodes(core, prefix, 3);
  timeline = new Timeline(kc);
  await timeline.watch('node', '/api/v1/nodes', `keelson.dev/itest=${prefix}`);
  await timeline.watch('job', `/apis/batch/v1/namespaces/${namespace}/jobs`);
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  timeline?.stop();
  for (const n of nodes) await core.deleteNode({ name: n }).catch(() => undefined);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

test('G9 Job retention and default stage timeout settings: 0 is "delete once recorded", bad values are named', () => {
  expect(loadConfig({ KEELSON_JOB_RETENTION_SECONDS: '0' }).KEELSON_JOB_RETENTION_SECONDS).toBe(0);
  expect(loadConfig({}).KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS).toBe(3600);
  expect(() => loadConfig({ KEELSON_JOB_RETENTION_SECONDS: '30' })).toThrow(SettingsError);
  expect(() => loadConfig({ KEELSON_JOB_RETENTION_SECONDS: '30' })).toThrow(
    'KEELSON_JOB_RETENTION_SECONDS="30": must be 0 (delete once recorded) or a whole number of seconds from 600 to 2592000',
  );
  expect(() => loadConfig({ KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS: '90000' })).toThrow(
    'KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS="90000": must be a whole number of seconds from 1 to 86400',
  );
});

describe('a worker with KEELSON_JOB_RETENTION_SECONDS=0 and KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS=321', () => {
  let w: InProcessKeelson;
  beforeAll(async () => {
    w = await worker('zero', { KEELSON_JOB_RETENTION_SECONDS: '0', KEELSON_DEFAULT_STAGE_TIMEOUT_SECONDS: '321' });
  });

  test('G3 with retention 0 a failed Job is deleted only after its reason and log tail are in node state', async () => {
    const node = nodes[0]!;
    const rollout = 'zero';
    await runBadAndGood(w, node, rollout);
    await eventually(
      'the three Jobs deleted (seen by watch)',
      async () => {
        expect(await jobsOf(rollout)).toEqual([]);
        expect(timeline.events.filter((e) => e.type === 'DELETED' && jobOf(rollout, 'bad')(e)).length).toBe(1);
        expect(timeline.events.filter((e) => e.type === 'DELETED' && jobOf(rollout, 'good')(e)).length).toBe(2);
      },
      LONG,
    );

    const bad = jobOf(rollout, 'bad');
    // The failed Job really failed (its pods ran out of retries), and carried no TTL of its own.
    const badFailed = timeline.indexOf((e) => bad(e) && ((e.obj as V1Job).status?.failed ?? 0) > 0);
    expect(badFailed).toBeGreaterThanOrEqual(0);
    const ttls = timeline.events.filter(bad).map((e) => (e.obj as V1Job).spec?.ttlSecondsAfterFinished);
    expect(ttls.length).toBeGreaterThan(0);
    expect(ttls.filter((t) => t !== undefined)).toEqual([]);
    // G3: the reason and log tail reach the Node before the Job goes; completed Jobs also go only once recorded.
    const failureRecorded = recorded(rollout, 'bad', 'apply:erroring', PRINTED);
    expect(failureRecorded).toBeGreaterThan(badFailed);
    expect(deletedAt(rollout, 'bad', 'apply')).toBeGreaterThan(failureRecorded);
    for (const stage of ['apply', 'config'] as const) {
      const done = recordedDone(rollout, 'good', stage);
      expect(done).toBeGreaterThanOrEqual(0);
      expect(deletedAt(rollout, 'good', stage)).toBeGreaterThan(done);
    }
  });

  test("the worker's default stageTimeout is a stage's Job deadline and bounds its activity when none is set", async () => {
    const node = nodes[1]!;
    const rollout = 'deadline';
    await w.client.startRollout(rolloutSpecOf(rollout, [node], { plain: {}, own: { stageTimeout: '5m' } }));
    await eventually(
      'both packages complete',
      async () => {
        const states = [
          (await nodeEntry(core, node, rollout, 'plain')).state,
          (await nodeEntry(core, node, rollout, 'own')).state,
        ];
        expect(states).toEqual(['complete', 'complete']);
      },
      LONG,
    );
    const runsOf = async (pkg: string) =>
      (await w.scheduled(nodeWorkflowId(w.cluster, node), 'runStage'))
        .map((r) => ({ ...(r.input as RunStageInput), startToCloseSeconds: r.startToCloseSeconds }))
        .filter((r) => r.package.name === pkg)
        .map((r) => [r.stage, r.timeoutSeconds, r.startToCloseSeconds]);
    await eventually(
      'both stages of each package in the node workflow history',
      async () => {
        // The wait runs a grace past the deadline, so the Job's own DeadlineExceeded (and log tail) is what G3 records.
        const grace = STAGE_DEADLINE_GRACE_SECONDS;
        expect(await runsOf('plain')).toEqual([
          ['apply', 321, 321 + grace],
          ['config', 321, 321 + grace],
        ]);
        expect(await runsOf('own')).toEqual([
          ['apply', 300, 300 + grace],
          ['config', 300, 300 + grace],
        ]);
      },
      LONG,
    );
    const deadlines = (pkg: string) => {
      const jobs = new Map(
        timeline.events.filter(jobOf(rollout, pkg)).map((e) => [e.obj.metadata?.uid, e.obj as V1Job]),
      );
      return [...jobs.values()].map((j) => j.spec?.activeDeadlineSeconds);
    };
    await eventually('both Jobs of each package seen by watch', async () => {
      expect([deadlines('plain').length, deadlines('own').length]).toEqual([2, 2]);
    });
    expect(deadlines('plain')).toEqual([321, 321]);
    expect(deadlines('own')).toEqual([300, 300]);
  });
});

describe('a worker with KEELSON_JOB_RETENTION_SECONDS=3600', () => {
  test('a failed Job stays with its TTL after it is recorded; a completed Job is deleted', async () => {
    // Not the test harness's default (600), so the TTL below can only come from this worker's setting.
    const w = await worker('kept', { KEELSON_JOB_RETENTION_SECONDS: '3600' });
    const node = nodes[2]!;
    const rollout = 'kept';
    await runBadAndGood(w, node, rollout);
    // The node workflow has asked to delete the failed Job once recorded (with the write that records it, or alone:
    // local activities, whose inputs history does not keep), and the worker kept it (retention > 0).
    await eventually(
      'the failed Job kept when its delete was asked',
      // At least once: a local activity that runs again (a retry, a lost workflow task) asks again.
      async () => expect(await w.metric('keelson_stage_jobs_kept_total')).toBeGreaterThanOrEqual(1),
      LONG,
    );
    await eventually(
      'the completed Job deleted',
      async () => {
        const left = await jobsOf(rollout);
        expect(left.map((j) => j.metadata?.labels?.['keelson.dev/package'])).toEqual(['bad']);
      },
      LONG,
    );
    const [kept] = await jobsOf(rollout);
    expect(kept!.spec?.ttlSecondsAfterFinished).toBe(3600);
    expect(kept!.status?.failed).toBeGreaterThan(0);
    expect(kept!.metadata?.deletionTimestamp).toBeUndefined();
  });
});
