import os from 'node:os';
import { machineBusy } from '../../bench/lib/cpu';
import {
  apiserverMeanMs,
  jobToPod,
  podToRunning,
  runBeyondSim,
  runningBeyondSim,
  type ApiserverSample,
  type JobRecord,
} from '../../bench/lib/fleet';

// The bench's split of a stage's time past its simulated seconds, and its load figures: pure arithmetic over what the
// watches and the apiserver's metrics recorded.

function stage(stage: string, times: Partial<JobRecord>): JobRecord {
  return {
    uid: stage,
    name: stage,
    node: 'n1',
    package: 'p',
    version: '1',
    stage,
    simSeconds: 2,
    seenCreated: 0,
    ...times,
  };
}

describe('bench figures', () => {
  const jobs = [
    stage('apply', { seenPod: 100, seenRunning: 400, seenComplete: 2900 }),
    stage('config', { seenPod: 300, seenRunning: 500, seenComplete: 3100 }),
    // A reboot is not a stage's run: left out of every split.
    stage('interrupt', { seenPod: 5000, seenRunning: 9000, seenComplete: 20000 }),
    // A pod whose Running the watch never showed (coalesced events) counts in run - sim only.
    stage('post-interrupt', { seenPod: 200, seenComplete: 2800 }),
  ];

  it('splits run - sim into Job to pod, pod to Running and Running to done less the simulated seconds', () => {
    expect(runBeyondSim(jobs)).toEqual({ p50: 900, p95: 1100 });
    expect(jobToPod(jobs)).toEqual({ p50: 200, p95: 300 });
    expect(podToRunning(jobs)).toEqual({ p50: 200, p95: 300 });
    expect(runningBeyondSim(jobs)).toEqual({ p50: 500, p95: 600 });
  });

  it('measures from the stage created where there is no Job (an operator stage pod)', () => {
    const pod = stage('apply', { seenRunning: 700, seenComplete: 3000 });
    expect(jobToPod([pod]).p50).toBeNaN();
    expect(podToRunning([pod]).p50).toBe(700);
    expect(runningBeyondSim([pod]).p50).toBe(300);
  });

  it("takes the apiserver's mean time per request from its histogram, watches apart", () => {
    const before: ApiserverSample = {
      requests: {},
      durationSeconds: { GET: 1, PATCH: 2, WATCH: 100 },
      durationCount: { GET: 10, PATCH: 10, WATCH: 1 },
    };
    const after: ApiserverSample = {
      requests: {},
      durationSeconds: { GET: 5, PATCH: 14, WATCH: 5000, POST: 1 },
      durationCount: { GET: 30, PATCH: 30, WATCH: 3, POST: 10 },
    };
    // (4 + 12 + 1) s over (20 + 20 + 10) requests.
    expect(apiserverMeanMs(after, before)).toBe(340);
    expect(apiserverMeanMs(before, before)).toBeNaN();
  });

  it("gives the measured processes' CPU as a share of the machine's cores", () => {
    const cores = os.cpus().length;
    expect(machineBusy({ a: 30 * cores, b: 45 * cores }, 100)).toBe(0.75);
  });
});
