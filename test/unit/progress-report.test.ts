import { reportDue, reportOf, STAGE_REPORT_INTERVAL_MS, type ProgressToReport, type Stage } from '../../model';

// Which node-state writes report to the rollout: every change the rollout judges by (status, generation, erroring,
// restarts), and a package that moves along (its stage, in-progress/complete, a new package or version) only once the
// last report is STAGE_REPORT_INTERVAL_MS old.

const progress = (over: Partial<ProgressToReport> = {}, stage: Stage = 'apply'): ProgressToReport => ({
  generation: 1,
  status: 'in_progress',
  state: { 'driver|1.0.0': { name: 'driver', version: '1.0.0', stage, state: 'in_progress' } },
  ...over,
});

test('the first write to a rollout reports', () => {
  expect(reportDue(undefined, reportOf(progress(), 0))).toBe(true);
});

test('a change of status, generation, erroring or restarts reports at once', () => {
  const last = reportOf(progress(), 1000);
  const entry = progress().state['driver|1.0.0']!;
  const changed: ProgressToReport[] = [
    progress({ status: 'complete' }),
    progress({ generation: 2 }),
    progress({ state: { 'driver|1.0.0': { ...entry, state: 'erroring' } } }),
    progress({ state: { 'driver|1.0.0': { ...entry, state: 'unknown' } } }),
    progress({ state: { 'driver|1.0.0': { ...entry, restarts: 1 } } }),
    progress({ state: { ...progress().state, 'tools|1.0.0': { ...entry, name: 'tools', state: 'erroring' } } }),
  ];
  for (const p of changed) expect(reportDue(last, reportOf(p, 1001))).toBe(true);
  const restarted = reportOf(changed[4]!, 1001);
  const again = progress({ state: { 'driver|1.0.0': { ...entry, restarts: 2 } } });
  expect(reportDue(restarted, reportOf(again, 1002))).toBe(true);
});

test('a new package or version that moves along waits for the interval, as a stage change does', () => {
  const last = reportOf(progress(), 1000);
  const entry = progress().state['driver|1.0.0']!;
  const moved: ProgressToReport[] = [
    progress({ state: { 'driver|2.0.0': { ...entry, version: '2.0.0' } } }),
    progress({ state: { ...progress().state, 'tools|1.0.0': { ...entry, name: 'tools' } } }),
  ];
  for (const p of moved) {
    expect(reportDue(last, reportOf(p, 1000 + STAGE_REPORT_INTERVAL_MS - 1))).toBe(false);
    expect(reportDue(last, reportOf(p, 1000 + STAGE_REPORT_INTERVAL_MS))).toBe(true);
  }
});

test('a stage change alone waits for the interval; nothing new never reports', () => {
  const last = reportOf(progress(), 1000);
  const later = (ms: number) => reportOf(progress({}, 'config'), 1000 + ms);
  expect(reportDue(last, later(STAGE_REPORT_INTERVAL_MS - 1))).toBe(false);
  expect(reportDue(last, later(STAGE_REPORT_INTERVAL_MS))).toBe(true);
  expect(reportDue(last, reportOf(progress(), 1000 + 10 * STAGE_REPORT_INTERVAL_MS))).toBe(false);
});

test('a stage that completes, or the next that starts, waits for the interval like a stage change', () => {
  const entry = progress().state['driver|1.0.0']!;
  const last = reportOf(progress(), 1000);
  const completed = (ms: number) =>
    reportOf(progress({ state: { 'driver|1.0.0': { ...entry, state: 'complete' } } }), 1000 + ms);
  expect(reportDue(last, completed(1))).toBe(false);
  expect(reportDue(last, completed(STAGE_REPORT_INTERVAL_MS))).toBe(true);
  const erroring = reportOf(progress({ state: { 'driver|1.0.0': { ...entry, state: 'erroring' } } }), 1000);
  expect(reportDue(erroring, reportOf(progress(), 1001))).toBe(true);
});

test('restarts absent and zero are the same; entry order does not matter', () => {
  const entry = progress().state['driver|1.0.0']!;
  const two = { a: { ...entry, name: 'a' }, b: { ...entry, name: 'b' } };
  const last = reportOf(progress({ state: two }), 0);
  const swapped = { b: two.b, a: { ...two.a, restarts: 0 } };
  expect(reportDue(last, reportOf(progress({ state: swapped }), 1))).toBe(false);
});
