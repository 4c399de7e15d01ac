import { runScenario } from '../../bench/lib/scenario';
import { expectRecovered, report, FAULT_ROLLOUT } from './faults';

// Two worker processes on one task queue, as two replicas of the chart's worker Deployment, and the first SIGKILLed
// every 8 seconds of running time (started again at once): the survivor takes over the killed one's workflow tasks
// and activities (its sticky queue times out, its waits are adopted again) while both write node state.

test('G1 G11 with two workers, one SIGKILLed every 8 s: Jobs once each, no entry backwards, none cordoned', async () => {
  const r = await runScenario('fault-two-workers', {
    ...FAULT_ROLLOUT,
    killEverySeconds: 8,
    fleet: { workers: 2 },
    timeoutMs: 600_000,
  });
  report('two workers, one SIGKILLed', r);
  expect(r.workerRestarts).toBeGreaterThanOrEqual(2);
  // The first slot was killed and started again; the second's one worker ran throughout, and both ran the rollout's
  // workflow and activity tasks (the histories name the worker that started each), so it was shared between them.
  const [killed, survivor] = r.workerSlots;
  expect(killed!.starts).toBe(r.workerRestarts + 1);
  expect(survivor).toEqual(expect.objectContaining({ starts: 1, running: true }));
  expect(killed!.tasks).toBeGreaterThan(0);
  expect(survivor!.tasks).toBeGreaterThan(0);
  expectRecovered(r);
}, 900_000);
