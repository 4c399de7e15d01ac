import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporalRestart } from '../../bench/lib/faults';
import { runScenario } from '../../bench/lib/scenario';
import { TemporalServer } from '../../bench/lib/temporal-server';
import { expectRecovered, log, report, FAULT_ROLLOUT } from './faults';

// The Temporal dev server stopped and started again mid-rollout, its SQLite database kept. The shared dev server
// (7233) serves everyone else, so this test runs a Temporal dev server of its own on a free port.

const server = new TemporalServer(fs.mkdtempSync(path.join(os.tmpdir(), 'keelson-temporal-fault-')));

beforeAll(async () => {
  await server.start();
}, 120_000);

afterAll(async () => {
  await server.stop();
}, 60_000);

test('Temporal dev server restarted mid-rollout (DB kept): the rollout completes, Jobs once each, no entry backwards', async () => {
  const fault = temporalRestart(server, { afterJobs: 8, downSeconds: 5, log });
  const r = await runScenario('fault-temporal', {
    ...FAULT_ROLLOUT,
    fleet: { temporalAddress: server.address },
    timeoutMs: 420_000,
    duringRollout: fault.duringRollout,
  });
  report('temporal restart', r);
  expect(fs.statSync(server.dbFile).size).toBeGreaterThan(0);
  expect(fault.struckAfterJobs).toBeGreaterThanOrEqual(8);
  expect(fault.struckAfterJobs).toBeLessThan(r.nodeStages);
  expectRecovered(r);
}, 600_000);
