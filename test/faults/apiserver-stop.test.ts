import { sleep } from '../../bench/lib/fleet';
import { runScenario } from '../../bench/lib/scenario';
import { startCluster } from '../../deploy/dev/cluster';
import { runningPid, stopDetached } from '../../deploy/dev/processes';
import { expectRecovered, log } from './faults';

// The kube-apiserver stopped for 30 seconds mid-rollout. This stops the SHARED local kube-apiserver: Jest runs test
// files one at a time (--runInBand), so no other test file is running meanwhile; it is started again with
// deploy/dev/cluster.ts startCluster, which waits for /readyz, before the test goes on (also when it fails).

test('kube-apiserver stopped for 30 s mid-rollout: the rollout completes, Jobs once each, no entry backwards', async () => {
  let stoppedAfterJobs = -1;
  let wasRunning = false;
  try {
    const r = await runScenario('fault-apiserver', {
      nodes: 10,
      budget: 5,
      simSeconds: 1,
      rebootSeconds: 3,
      timeoutMs: 480_000,
      log,
      duringRollout: async (_fleet, jobsCreated) => {
        for (;;) {
          if (jobsCreated() >= 8) {
            stoppedAfterJobs = jobsCreated();
            break;
          }
          await sleep(500);
        }
        log(`apiserver: stopping it for 30 s after ${stoppedAfterJobs} Jobs`);
        wasRunning = await stopDetached('kube-apiserver');
        await sleep(30_000);
        await startCluster(log);
        log('apiserver: ready again');
      },
    });
    expect(wasRunning).toBe(true);
    expect(stoppedAfterJobs).toBeGreaterThanOrEqual(8);
    expect(stoppedAfterJobs).toBeLessThan(r.nodeStages);
    expectRecovered(r);
  } finally {
    if (runningPid('kube-apiserver') === undefined) await startCluster(log);
  }
}, 600_000);
