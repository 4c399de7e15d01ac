import { KeelsonMetrics } from '../../workers/metrics';
import type { RolloutStatusView } from '../../workflows/messages';

// The progress and permit clocks the alerts read (keelson_rollout_last_progress_timestamp_seconds,
// keelson_interrupt_permit_held_seconds), served by a real registry from rollout status views and a moved clock.

function rollout(stage: string, permits: string[], flags = { paused: false, disabled: false }): RolloutStatusView {
  return {
    name: 'drivers',
    status: flags.paused ? 'paused' : 'in_progress',
    generation: 1,
    ...flags,
    nodes: {
      a: {
        status: 'in_progress',
        compartment: '__default__',
        packages: { 'gpu-driver': { version: '1.2.0', stage, state: 'in_progress', restarts: 0 } },
      },
    } as RolloutStatusView['nodes'],
    compartmentStatuses: {},
    permits,
    nodesInProgress: 1,
    completeNodes: '0/1',
    packageList: 'gpu-driver:1.2.0',
  };
}

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const PROGRESS = 'keelson_rollout_last_progress_timestamp_seconds{rollout="drivers"}';
const HELD = 'keelson_interrupt_permit_held_seconds{rollout="drivers",node="a"}';

function fixture(first: RolloutStatusView) {
  let now = 1_000_000_000_000;
  let current = [first];
  const metrics = new KeelsonMetrics({
    now: () => now,
    sources: { rollouts: async () => current, jobs: async () => [] },
  });
  return {
    /** Moves the clock by `seconds`, shows the running rollouts `next` to the worker, and returns the scrape. */
    async after(seconds: number, next: RolloutStatusView | RolloutStatusView[] = current): Promise<string> {
      now += seconds * 1000;
      current = Array.isArray(next) ? next : [next];
      await metrics.refresh(true);
      return metrics.text();
    },
    start: now / 1000,
  };
}

describe('rollout clocks', () => {
  test('the last progress time stays while nothing moves, and moves with a stage change and a resume', async () => {
    const f = fixture(rollout('apply', []));
    expect(sample(await f.after(0), PROGRESS)).toBe(f.start);
    expect(sample(await f.after(600), PROGRESS)).toBe(f.start);
    expect(sample(await f.after(60, rollout('config', [])), PROGRESS)).toBe(f.start + 660);
    const paused = rollout('config', [], { paused: true, disabled: false });
    expect(sample(await f.after(60, paused), PROGRESS)).toBe(f.start + 720);
    expect(sample(await f.after(3600), PROGRESS)).toBe(f.start + 720);
    expect(sample(await f.after(60, rollout('config', [])), PROGRESS)).toBe(f.start + 4380);
  });

  test('a permit is timed from when it is first seen held, and its series goes when it is released', async () => {
    const f = fixture(rollout('interrupt', []));
    expect(sample(await f.after(0), HELD)).toBeUndefined();
    expect(sample(await f.after(30, rollout('interrupt', ['a'])), HELD)).toBe(0);
    expect(sample(await f.after(900), HELD)).toBe(900);
    expect(sample(await f.after(100, rollout('post-interrupt', [])), HELD)).toBeUndefined();
    expect(sample(await f.after(10, rollout('interrupt', ['a'])), HELD)).toBe(0);
  });

  test('a rollout that is gone loses its series', async () => {
    const f = fixture(rollout('apply', ['a']));
    const before = await f.after(0);
    expect(sample(before, PROGRESS)).toBe(f.start);
    expect(sample(before, HELD)).toBe(0);
    const gone = await f.after(60, []);
    expect(sample(gone, PROGRESS)).toBeUndefined();
    expect(sample(gone, HELD)).toBeUndefined();
    // Started again under its name, it is timed afresh.
    expect(sample(await f.after(60, rollout('apply', [])), PROGRESS)).toBe(f.start + 120);
  });
});
