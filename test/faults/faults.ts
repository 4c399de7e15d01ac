import type { ScenarioResult } from '../../bench/lib/scenario';

// What every fault test checks once its rollout has completed (runScenario throws if it does not).
export function expectRecovered(r: ScenarioResult): void {
  // Three packages chained by dependsOn, the middle one rebooting: apply and config each, plus interrupt and
  // post-interrupt for the rebooting one.
  expect(r.stagesPerNode).toBe(8);
  expect(r.nodeStages).toBe(r.nodes * r.stagesPerNode);
  // Each stage Job created once per node, package, version and stage.
  expect(r.checks.duplicateJobs).toEqual([]);
  // G1: no node-state entry ever moved backwards (seen by watching the Nodes all along).
  expect(r.checks.nodeStateUpdates).toBeGreaterThan(0);
  expect(r.checks.backwards).toEqual([]);
  // No node left cordoned by Keelson.
  expect(r.checks.leftCordoned).toEqual([]);
  // Every workflow run (the rollout and each node, closed runs too) replays against the code that ran it.
  expect(r.replay.workflows).toBeGreaterThan(r.nodes);
  expect(r.replay.failures).toEqual([]);
}

export const log = (line: string) => process.stderr.write(`[faults] ${line}\n`);

/** The rollout every fault test runs: 10 nodes, budget 5, three packages (one rebooting), 1 s stages, 3 s reboots. */
export const FAULT_ROLLOUT = { nodes: 10, budget: 5, simSeconds: 1, rebootSeconds: 3, log };

/** The figures of a fault run, in the test output (bench/README.md quotes them). */
export function report(fault: string, r: ScenarioResult): void {
  log(
    `${fault}: ${r.nodes} nodes, budget ${r.budget}: makespan ${r.makespanSeconds}s (ideal ${r.idealSeconds}s), ` +
      `${r.workerRestarts} worker kills, ${r.nodeStages} node-stages, ${r.replay.workflows} workflow histories ` +
      `replayed (${r.replay.failures.length} nondeterministic, kept in ${r.replay.dir})`,
  );
}
