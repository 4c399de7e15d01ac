import { mirrorsHalt, reportedProgress, takesReport } from '../../workflows/rollout/progress';
import type { NodeProgress } from '../../workflows/messages';

// Which node progress report a rollout keeps: reports come from the node-state write's activity, which may run again
// late (a retry, a stalled worker's attempt), so an older copy must never replace a newer report.

const entry = {
  name: 'driver',
  version: '1.0.0',
  image: 'img',
  stage: 'apply' as const,
  state: 'in_progress' as const,
};
const report = (generation: number, status: NodeProgress['status'], order?: [number, number]): NodeProgress => ({
  node: 'n1',
  generation,
  status,
  state: { 'driver|1.0.0': entry },
  ...(order && { order }),
});

test('G1 a late copy of an older report does not take the node back from complete', () => {
  const held = reportedProgress(report(1, 'complete', [2000, 7]));
  expect(takesReport(held, report(1, 'in_progress', [1000, 6]))).toBe(false);
  // Same write time, earlier in the node's count: older too.
  expect(takesReport(held, report(1, 'in_progress', [2000, 6]))).toBe(false);
  // The very same report again changes nothing.
  expect(takesReport(held, report(1, 'complete', [2000, 7]))).toBe(false);
});

test('a newer report replaces the held one, by write time first (a node workflow started again counts anew)', () => {
  const held = reportedProgress(report(1, 'in_progress', [2000, 7]));
  expect(takesReport(held, report(1, 'complete', [2000, 8]))).toBe(true);
  expect(takesReport(held, report(1, 'complete', [3000, 1]))).toBe(true);
});

test('generations come first: a later generation always replaces, an earlier never', () => {
  const held = reportedProgress(report(2, 'in_progress', [2000, 7]));
  expect(takesReport(held, report(3, 'in_progress', [1000, 1]))).toBe(true);
  expect(takesReport(held, report(1, 'complete', [9000, 99]))).toBe(false);
});

test('reports without an order (node workflows before local-node-calls) are taken as they come, as before', () => {
  expect(takesReport(undefined, report(1, 'in_progress'))).toBe(true);
  const held = reportedProgress(report(1, 'complete'));
  expect(takesReport(held, report(1, 'in_progress'))).toBe(true);
  expect(takesReport(reportedProgress(report(1, 'complete', [2000, 7])), report(1, 'in_progress'))).toBe(true);
});

test('the rollout keeps what its status shows of a package, not the entry’s image, errors and log tails', () => {
  const whole = { ...entry, state: 'erroring' as const, restarts: 2, attempts: 3, lastError: 'x'.repeat(4000) };
  const kept = reportedProgress({ ...report(1, 'erroring'), state: { 'driver|1.0.0': whole } });
  expect(kept.state).toEqual({
    'driver|1.0.0': { name: 'driver', version: '1.0.0', stage: 'apply', state: 'erroring', restarts: 2 },
  });
});

test("G14 a complete node that reports only the rollout's pause or disable stays complete; any other change is work", () => {
  const done = reportedProgress({
    ...report(2, 'complete'),
    state: { 'driver|1.0.0': { ...entry, state: 'complete' } },
  });
  const mirrored = (status: NodeProgress['status'], generation = 2, state = done.state) =>
    reportedProgress({ node: 'n1', generation, status, state });
  expect(mirrorsHalt(done, mirrored('paused'))).toBe(true);
  expect(mirrorsHalt(done, mirrored('disabled'))).toBe(true);
  expect(mirrorsHalt(done, mirrored('in_progress'))).toBe(false);
  expect(mirrorsHalt(done, mirrored('disabled', 3))).toBe(false);
  expect(mirrorsHalt(done, mirrored('paused', 2, { 'driver|1.0.0': { ...entry, stage: 'config' } }))).toBe(false);
  expect(
    mirrorsHalt(reportedProgress(report(2, 'in_progress')), mirrored('paused', 2, { 'driver|1.0.0': entry })),
  ).toBe(false);
});
