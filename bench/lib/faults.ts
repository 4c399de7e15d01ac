import { startCluster } from '../../deploy/dev/cluster';
import { runningPid, stopDetached } from '../../deploy/dev/processes';
import { eventually, sleep } from '../../harness/wait';
import type { Fleet } from './fleet';
import type { TemporalServer } from './temporal-server';

// Faults injected while a rollout runs, shared by the fault tests (test/faults) and `npm run bench -- --faults`.
// Each starts once the rollout is well under way (some stage Jobs exist) and records when it struck.

export interface FaultOptions {
  /** Strike once this many stage Jobs exist. */
  afterJobs: number;
  log: (line: string) => void;
}

export interface Fault {
  /** Stage Jobs that existed when the fault struck (-1: it never did). */
  struckAfterJobs: number;
  duringRollout: (fleet: Fleet, jobsCreated: () => number) => Promise<void>;
}

/** Waits with no end of its own, the scenario's timeout being the one that counts. */
function untilJobs(jobsCreated: () => number, count: number): Promise<number> {
  return eventually(
    `${count} stage Jobs`,
    () => {
      if (jobsCreated() < count) throw new Error(`${jobsCreated()} stage Jobs`);
      return jobsCreated();
    },
    Infinity,
    500,
  );
}

/** The shared kube-apiserver stopped for `seconds`, then started again (startCluster waits for /readyz). */
export function apiserverOutage(o: FaultOptions & { seconds: number }): Fault & { wasRunning: boolean } {
  const fault = {
    struckAfterJobs: -1,
    wasRunning: false,
    duringRollout: async (_fleet: Fleet, jobsCreated: () => number) => {
      fault.struckAfterJobs = await untilJobs(jobsCreated, o.afterJobs);
      o.log(`apiserver: stopping it for ${o.seconds} s after ${fault.struckAfterJobs} Jobs`);
      fault.wasRunning = await stopDetached('kube-apiserver');
      try {
        await sleep(o.seconds * 1000);
      } finally {
        await startCluster(o.log);
      }
      o.log('apiserver: ready again');
    },
  };
  return fault;
}

/** Starts the shared kube-apiserver if an outage left it stopped (a run that failed half-way). */
export async function ensureApiserver(log: (line: string) => void): Promise<void> {
  if (runningPid('kube-apiserver') === undefined) await startCluster(log);
}

/** A Temporal dev server of the run's own stopped and started again after `downSeconds`, its database kept. */
export function temporalRestart(server: TemporalServer, o: FaultOptions & { downSeconds: number }): Fault {
  const fault = {
    struckAfterJobs: -1,
    duringRollout: async (_fleet: Fleet, jobsCreated: () => number) => {
      fault.struckAfterJobs = await untilJobs(jobsCreated, o.afterJobs);
      o.log(`temporal: stopping the dev server after ${fault.struckAfterJobs} Jobs`);
      await server.stop();
      await sleep(o.downSeconds * 1000);
      await server.start();
      o.log('temporal: dev server back');
    },
  };
  return fault;
}
