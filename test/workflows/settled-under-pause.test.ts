import type { RunStageInput } from '../../activities/contract';
import { disableSignal, enableSignal, updateSpecUpdate } from '../../workflows/messages';
import { FakeCluster } from './fake-cluster';
import { rolloutWorkflowId } from '../../model/workflow-ids';
import { eventually, recordHistory, rolloutSpec, startRollout, statusBecomes, useTemporal, withWorker } from './env';

// G14: a spec update reaches the nodes with work in flight at once and the others as their batch comes. A node that
// is complete stays out of flight while the rollout is disabled: its mirrored `disabled` report is not work.

const t = useTemporal();
const who = { actor: 'test', reason: 'maintenance window' };

test('G14 a spec update while disabled reaches complete nodes only as their batch comes', async () => {
  const names = ['settled-1', 'settled-2', 'settled-3', 'settled-4'];
  const cluster = new FakeCluster(names);
  cluster.script = () => ({ ms: 1500 });
  const spec = (version: string) =>
    rolloutSpec('settled', {
      interruptionBudget: { count: 1 },
      packages: { base: { version, image: 'ghcr.io/example/base' } },
    });
  await withWorker(t.env, t.bundle, cluster, async (taskQueue) => {
    const handle = await startRollout(t.env, taskQueue, spec('1.0.0'), { cluster: 'settled' });
    await statusBecomes(handle, 'complete', 120_000);
    await handle.signal(disableSignal, who);
    // Every node has written the rollout's disable, and the rollout has taken each node's report of it.
    await eventually(() => {
      for (const n of names) expect(cluster.writes.some((w) => w.node === n && w.status === 'disabled')).toBe(true);
    }, 60_000);
    await eventually(async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const disabledAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'disable');
      const reports = events
        .slice(disabledAt)
        .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'nodeProgress');
      expect(reports.length).toBeGreaterThanOrEqual(names.length);
    }, 60_000);
    await handle.executeUpdate(updateSpecUpdate, { args: [spec('1.1.0')] });
    await handle.signal(enableSignal, who);
    await statusBecomes(handle, 'complete', 120_000);
    await recordHistory(t.env, rolloutWorkflowId('settled', 'settled'), 'rollout-settled-under-pause');
    await handle.cancel();
  });
  // Batches of one: no two nodes ever ran 1.1.0 stages at the same time.
  const runs = cluster
    .callsOf('runStage')
    .map((c) => ({ ...(c.input as RunStageInput), at: c.at }))
    .filter((i) => i.package.version === '1.1.0');
  const span = names.map((n) => {
    const own = runs.filter((r) => r.node === n).map((r) => r.at);
    expect(own.length).toBeGreaterThan(0);
    const end = cluster.writes.filter((w) => w.node === n && w.generation === 2 && w.status === 'complete')[0]!.at;
    return { start: Math.min(...own), end };
  });
  const overlap = span.map((a) => span.filter((b) => b.start <= a.start && a.start < b.end).length);
  expect(Math.max(...overlap)).toBe(1);
}, 300_000);
