import { runScenario } from '../../bench/lib/scenario';
import { expectRecovered, report, FAULT_ROLLOUT } from './faults';

// The worker process SIGKILLed every 8 seconds of running time, once the rollout has moved since it started (and
// started again at once), during a 10-node rollout of three packages, one rebooting. The bench runs the same fault at
// 100 nodes (npm run bench); 10 keeps CI time modest.

test('worker SIGKILLed every 8 s: the 10-node rollout completes, Jobs once each, no entry backwards, none cordoned', async () => {
  const r = await runScenario('fault-sigkill', {
    ...FAULT_ROLLOUT,
    killEverySeconds: 8,
    timeoutMs: 600_000,
  });
  report('worker sigkill', r);
  expect(r.workerRestarts).toBeGreaterThanOrEqual(2);
  expectRecovered(r);
}, 900_000);
