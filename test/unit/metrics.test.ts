import type { V1Job } from '@kubernetes/client-node';
import { KeelsonMetrics, METRICS, retryingFailedPods, serveMetrics } from '../../workers/metrics';
import type { RolloutStatusView } from '../../workflows/messages';

const entry = (stage: string, state: string, restarts = 0) => ({
  name: 'gpu-driver',
  version: '1.2.0',
  image: 'registry.example/gpu-driver',
  stage,
  state,
  restarts,
});

function view(): RolloutStatusView {
  return {
    name: 'drivers',
    status: 'in_progress',
    generation: 1,
    paused: false,
    disabled: false,
    nodes: {
      a: {
        status: 'complete',
        compartment: 'gpu',
        packages: { 'gpu-driver': { version: '1.2.0', stage: 'post-interrupt', state: 'complete', restarts: 1 } },
      },
      b: {
        status: 'in_progress',
        compartment: 'gpu',
        packages: { 'gpu-driver': { version: '1.2.0', stage: 'apply', state: 'in_progress', restarts: 0 } },
      },
    },
    compartmentStatuses: {
      gpu: {
        matched: 2,
        ceiling: 1,
        inProgress: 1,
        completed: 1,
        progressPercent: 50,
        batchState: {
          currentBatch: 2,
          consecutiveFailures: 0,
          completedNodes: 1,
          failedNodes: 0,
          shouldStop: false,
          lastBatchSize: 1,
          lastBatchFailed: false,
        },
      },
    },
    permits: ['b'],
    nodesInProgress: 1,
    completeNodes: '1/2',
    packageList: 'gpu-driver:1.2.0',
  };
}

const retryingJob = (failed: number, finished = false): V1Job => ({
  metadata: {
    name: 'j',
    annotations: {
      'keelson.dev/package': JSON.stringify({
        name: 'gpu-driver',
        version: '1.2.0',
        rollout: 'drivers',
        stage: 'apply',
      }),
    },
  },
  status: { failed, ...(finished && { conditions: [{ type: 'Failed', status: 'True' }] }) },
});

function value(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(line + ' '));
  if (!found) throw new Error(`no sample ${line} in:\n${text}`);
  return Number(found.slice(line.length + 1));
}

describe('worker metrics', () => {
  test('node-state writes count only entries whose stage or state moved', async () => {
    const m = new KeelsonMetrics();
    const before = JSON.stringify({ 'gpu-driver|1.2.0': entry('apply', 'in_progress') });
    m.nodeStateWritten({ rollout: 'drivers', status: 'in_progress', previous: null, state: JSON.parse(before) });
    m.nodeStateWritten({ rollout: 'drivers', status: 'in_progress', previous: before, state: JSON.parse(before) });
    m.nodeStateWritten({
      rollout: 'drivers',
      status: 'in_progress',
      previous: before,
      state: { 'gpu-driver|1.2.0': entry('apply', 'complete') } as never,
    });
    const text = await m.text();
    const labels = 'rollout="drivers",package="gpu-driver",version="1.2.0"';
    expect(value(text, `keelson_stage_transitions_total{${labels},stage="apply",state="in_progress"}`)).toBe(1);
    expect(value(text, `keelson_stage_transitions_total{${labels},stage="apply",state="complete"}`)).toBe(1);
    expect(value(text, 'keelson_node_state_writes_total{rollout="drivers",status="in_progress"}')).toBe(3);
  });

  test('stage ends feed the duration histogram and the failed-pod counter', async () => {
    const m = new KeelsonMetrics();
    m.stageEnded({
      rollout: 'r',
      package: 'p',
      version: '1',
      stage: 'apply',
      outcome: 'failed',
      seconds: 12,
      failedPods: 2,
    });
    const text = await m.text();
    expect(
      value(
        text,
        'keelson_stage_duration_seconds_bucket{le="15",rollout="r",package="p",stage="apply",outcome="failed"}',
      ),
    ).toBe(1);
    expect(
      value(
        text,
        'keelson_stage_duration_seconds_bucket{le="5",rollout="r",package="p",stage="apply",outcome="failed"}',
      ),
    ).toBe(0);
    expect(value(text, 'keelson_stage_failed_pods_total{rollout="r",package="p",version="1",stage="apply"}')).toBe(2);
  });

  test('G6 restarts include the failed pods of a Job that is still retrying, not of a finished one', () => {
    const counts = retryingFailedPods([retryingJob(2), retryingJob(3, true), retryingJob(0)]);
    expect([...counts.entries()]).toEqual([[JSON.stringify(['drivers', 'gpu-driver', '1.2.0']), 2]]);
  });

  test('gauges come from rollout status queries and Job status when scraped', async () => {
    const m = new KeelsonMetrics({
      refreshSeconds: 60,
      sources: { rollouts: async () => [view()], jobs: async () => [retryingJob(2)] },
    });
    const text = await m.text();
    expect(value(text, 'keelson_rollout_status{rollout="drivers",status="in_progress"}')).toBe(1);
    expect(value(text, 'keelson_rollout_status{rollout="drivers",status="complete"}')).toBe(0);
    expect(value(text, 'keelson_node_status_count{rollout="drivers",status="complete"}')).toBe(1);
    expect(value(text, 'keelson_node_target_count{rollout="drivers"}')).toBe(2);
    const pkg = 'rollout="drivers",package="gpu-driver",version="1.2.0"';
    expect(value(text, `keelson_package_state_count{${pkg},state="in_progress"}`)).toBe(1);
    expect(value(text, `keelson_package_stage_count{${pkg},stage="post-interrupt"}`)).toBe(1);
    expect(value(text, `keelson_package_restarts_count{${pkg}}`)).toBe(3);
    expect(value(text, 'keelson_rollout_current_batch{rollout="drivers",compartment="gpu"}')).toBe(2);
    expect(value(text, 'keelson_rollout_progress_percent{rollout="drivers",compartment="gpu"}')).toBe(50);
  });

  test('a failing source is counted and the last figures are kept', async () => {
    let fail = false;
    const m = new KeelsonMetrics({
      refreshSeconds: 60,
      sources: {
        rollouts: async () => {
          if (fail) throw new Error('temporal down');
          return [view()];
        },
        jobs: async () => [],
      },
    });
    await m.refresh(true);
    fail = true;
    await m.refresh(true);
    const text = await m.text();
    expect(value(text, 'keelson_metrics_refresh_errors_total{source="rollouts"}')).toBe(1);
    expect(value(text, 'keelson_node_target_count{rollout="drivers"}')).toBe(2);
  });

  test('every registered metric is described, and served on /metrics', async () => {
    const m = new KeelsonMetrics();
    const registered = (await m.registry.getMetricsAsJSON()).map((x) => x.name).sort();
    expect(registered).toEqual(METRICS.map((d) => d.name).sort());
    const server = await serveMetrics(m, '127.0.0.1:0');
    try {
      const { port } = server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# HELP keelson_rollout_status');
      expect((await fetch(`http://127.0.0.1:${port}/nope`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
