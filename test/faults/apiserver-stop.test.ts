import { apiserverOutage, ensureApiserver } from '../../bench/lib/faults';
import { runScenario } from '../../bench/lib/scenario';
import { expectRecovered, log, report, FAULT_ROLLOUT } from './faults';

// The kube-apiserver stopped for 30 seconds mid-rollout. This stops the SHARED local kube-apiserver: Jest runs test
// files one at a time (--runInBand), so no other test file is running meanwhile; it is started again (startCluster
// waits for /readyz) before the test goes on, also when it fails.

test('kube-apiserver stopped for 30 s mid-rollout: the rollout completes, Jobs once each, no entry backwards', async () => {
  const fault = apiserverOutage({ afterJobs: 8, seconds: 30, log });
  try {
    const r = await runScenario('fault-apiserver', {
      ...FAULT_ROLLOUT,
      timeoutMs: 480_000,
      duringRollout: fault.duringRollout,
    });
    report('apiserver outage', r);
    expect(fault.wasRunning).toBe(true);
    expect(fault.struckAfterJobs).toBeGreaterThanOrEqual(8);
    expect(fault.struckAfterJobs).toBeLessThan(r.nodeStages);
    expectRecovered(r);
  } finally {
    await ensureApiserver(log);
  }
}, 600_000);
